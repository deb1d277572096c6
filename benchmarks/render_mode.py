"""LunarLander-v3 rendered or not: the same trajectories, and what one step of its physics costs in each case.

SB3's ``make_vec_env`` (and an env given as a string) makes every env with ``render_mode="rgb_array"``. In that
mode LunarLander adds a Box2D body for every engine firing, and only ``render()`` removes them, so while nothing
renders they pile up until the episode ends and every physics step gets slower. This plays the packaged agent
(``hub_cards/LunarLander-v3``, rebuilt pickle-free, its VecNormalize statistics frozen) with sampled actions, as
in training, in two envs made alike but for ``render_mode`` (``None``, ``"rgb_array"``): each step's action is
chosen from the unrendered env's observation and given to both. Reported: whether the observations, rewards and
episode ends of the two are equal bit for bit, and the mean CPU time of ``VecEnv.step`` in each (the two steps
alternate, so machine noise hits them alike).

Usage: ``python benchmarks/render_mode.py [--steps 20000] [--seed 0]``; writes ``benchmarks/results/render_mode.md``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.vec_env import VecEnv

from zoo.agent_format import load_agent
from zoo.factories import make_eval_env
from zoo.machine import cpu_model

ENV_ID = "LunarLander-v3"
AGENT = Path(__file__).resolve().parents[1] / "hub_cards" / ENV_ID
RESULTS = Path(__file__).parent / "results"
MODES = (None, "rgb_array")


def timed_step(env: VecEnv, action: np.ndarray) -> tuple[list[np.ndarray], float]:
    """(observation, reward, done) of one ``env.step(action)``, and its CPU seconds."""
    start = time.process_time()
    observation, reward, done, _ = env.step(action)
    seconds = time.process_time() - start
    assert isinstance(observation, np.ndarray)  # LunarLander's Box observations
    return [observation, reward, done], seconds


def measure(steps: int, seed: int) -> dict[str, Any]:
    model, _, stats = load_agent(AGENT, device="cpu")
    model.set_random_seed(seed)
    unrendered, rendered = (make_eval_env(model, ENV_ID, None, stats, seed=seed, render_mode=mode) for mode in MODES)
    observation = unrendered.reset()
    rendered.reset()
    seconds = [0.0, 0.0]
    identical, episodes = True, 0
    for _ in range(steps):
        assert isinstance(observation, np.ndarray)
        action, _ = model.predict(observation, deterministic=False)
        outcome, unrendered_seconds = timed_step(unrendered, action)
        rendered_outcome, rendered_seconds = timed_step(rendered, action)
        seconds[0] += unrendered_seconds
        seconds[1] += rendered_seconds
        identical &= all(np.array_equal(a, b) for a, b in zip(outcome, rendered_outcome, strict=True))
        observation = outcome[0]
        episodes += int(outcome[2][0])
    unrendered.close()
    rendered.close()
    return {
        "steps": steps,
        "episodes": episodes,
        "identical": identical,
        "us_per_step_unrendered": seconds[0] / steps * 1e6,
        "us_per_step_rgb_array": seconds[1] / steps * 1e6,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20_000, help="env steps in each mode")
    parser.add_argument("--seed", type=int, default=0, help="env and action-sampling seed")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder of render_mode.md")
    args = parser.parse_args(argv)
    th.set_num_threads(1)
    result = measure(args.steps, args.seed)
    ratio = result["us_per_step_rgb_array"] / result["us_per_step_unrendered"]
    table = "\n".join(
        [
            f"# {ENV_ID}: unrendered against render_mode='rgb_array'",
            "",
            f"`python benchmarks/render_mode.py --steps {args.steps} --seed {args.seed}` on {cpu_model()}: the "
            f"packaged agent's sampled actions, {result['steps']:,} steps ({result['episodes']} episodes ended), "
            "CPU time of VecEnv.step.",
            "",
            "| render_mode | us per step | trajectories equal bit for bit |",
            "|---|---:|---|",
            f"| None | {result['us_per_step_unrendered']:.0f} | {'yes' if result['identical'] else 'NO'} |",
            f"| 'rgb_array' (SB3's default) | {result['us_per_step_rgb_array']:.0f} | |",
            "",
            f"rgb_array / None: {ratio:.1f}x",
            "",
        ]
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "render_mode.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
