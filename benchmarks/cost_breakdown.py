"""Where a zoo entry's training CPU time goes: collection (env stepping and the actor), the policy step and the
critic fit, measured on the entry itself with the process's CPU clock around each phase.

    python benchmarks/cost_breakdown.py --env Hopper-v5 --steps 100000

It prints one table (and writes it to ``benchmarks/results/cost_breakdown_<env>.md``): the CPU seconds of each
phase, their share, and the CPU seconds per 1e6 steps the run would take at this rate. Evaluations are not run.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch as th
from _common import DEFAULTS_N_ENVS, defaults_model
from stable_baselines3.common.callbacks import BaseCallback

from sb3_reinforce import Reinforce
from zoo.config import get_config
from zoo.factories import training_envs
from zoo.machine import cpu_model
from zoo.parsers import parse_overrides

RESULTS = Path(__file__).resolve().parent / "results"


def timed(clock: dict[str, float], phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            clock[phase] += time.process_time() - start

    return wrapper


def quota_rows(lengths: list[int], n_envs: int) -> int:
    """Rows a collection of these episodes would step if each env had a fixed quota of them (the episodes split
    as evenly as possible, in the order given): the longest env's total. The episodes are i.i.d. draws of the
    policy, so any fixed split of them is a fair sample of what quotas would have cost."""
    quotas = [len(lengths) // n_envs + (env < len(lengths) % n_envs) for env in range(n_envs)]
    bounds = np.cumsum([0, *quotas])
    return max(sum(lengths[start:end]) for start, end in itertools.pairwise(bounds))


class UnusedSteps(BaseCallback):
    """Adds up the steps each collection took and those no update used (envs waiting, stepped, for the last
    episodes to end), and what fixed per-env quotas of the same episodes would have left unused."""

    def __init__(self) -> None:
        super().__init__()
        self.collected = self.unused = self.quota_collected = self.used = 0

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        buffer = cast(Reinforce, self.model).rollout_buffer
        steps = buffer.n_steps * buffer.n_envs
        self.collected += steps
        self.unused += round(buffer.unused_fraction() * steps)
        self.used += int(buffer.valid_len.sum())
        ends = buffer.episode_ends[: buffer.n_steps] & buffer.valid_mask()
        episodes = []  # (start row, length) of every counted episode
        for env in range(buffer.n_envs):
            start = 0
            for t in np.flatnonzero(ends[:, env]):
                episodes.append((start, int(t) + 1 - start))
                start = int(t) + 1
        lengths = [length for _, length in sorted(episodes)]
        self.quota_collected += quota_rows(lengths, buffer.n_envs) * buffer.n_envs


def breakdown(
    env_id: str,
    steps: int,
    seed: int = 0,
    n_envs: int | None = None,
    hyperparams: dict[str, Any] | None = None,
    defaults: bool = False,
) -> tuple[dict[str, float], int, UnusedSteps]:
    """CPU seconds per phase of ``steps`` steps of the zoo's Reinforce entry for ``env_id`` (or, with
    ``defaults``, of ``Reinforce("MlpPolicy", env)`` on ``n_envs`` envs, 8 unless given), with ``hyperparams``
    changed; the steps taken, and the tally of the collected steps that no update used."""
    th.set_num_threads(1)
    hyperparams = hyperparams or {}
    if defaults:
        model = defaults_model(env_id, seed, n_envs or DEFAULTS_N_ENVS, **hyperparams)
    else:
        overrides: dict[str, Any] = {"n_timesteps": steps, **hyperparams}
        config = get_config("reinforce", env_id, overrides | ({} if n_envs is None else {"n_envs": n_envs}))
        env, _ = training_envs(config, seed)
        model = Reinforce(config.policy, env, seed=seed, device="cpu", **config.algorithm_kwargs())
    clock = {"collection": 0.0, "policy step": 0.0, "critic fit": 0.0}
    model.collect_rollouts = timed(clock, "collection", model.collect_rollouts)  # type: ignore[method-assign]
    model._fit_critic = timed(clock, "critic fit", model._fit_critic)  # type: ignore[method-assign]
    train = model.train

    def train_without_fit() -> None:
        before = clock["critic fit"]
        start = time.process_time()
        train()
        clock["policy step"] += time.process_time() - start - (clock["critic fit"] - before)

    model.train = train_without_fit  # type: ignore[method-assign]
    unused = UnusedSteps()
    start = time.process_time()
    model.learn(steps, callback=unused)
    clock["other (SB3's loop, logging)"] = time.process_time() - start - sum(clock.values())
    return clock, model.num_timesteps, unused


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", required=True, help="a zoo env id with a Reinforce entry")
    parser.add_argument("--steps", type=int, default=100_000, help="env steps to train (default: 100,000)")
    parser.add_argument("--n-envs", type=int, default=None, help="override the entry's n_envs")
    parser.add_argument(
        "--defaults", action="store_true", help=f"Reinforce's constructor defaults on {DEFAULTS_N_ENVS} envs"
    )
    parser.add_argument(
        "--hyperparams", nargs="*", default=[], metavar="KEY=VALUE", help="hyperparameters changed (YAML values)"
    )
    args = parser.parse_args(argv)
    hyperparams = parse_overrides(args.hyperparams)
    clock, taken, unused = breakdown(args.env, args.steps, 0, args.n_envs, hyperparams, args.defaults)
    command = f"python benchmarks/cost_breakdown.py --env {args.env} --steps {args.steps}"
    command += "" if args.n_envs is None else f" --n-envs {args.n_envs}"
    command += " --defaults" if args.defaults else ""
    if args.hyperparams:
        command += " --hyperparams " + " ".join(args.hyperparams)
    total = sum(clock.values())
    subject = f"the Reinforce entry for {args.env}"
    if args.defaults:
        subject = f"Reinforce's defaults on {args.env} ({args.n_envs or DEFAULTS_N_ENVS} envs)"
    if args.hyperparams:
        subject += " with " + ", ".join(args.hyperparams)
    lines = [
        f"Where the CPU time of {subject} goes: {taken:,} steps from scratch, seed 0, "
        f"1 torch thread, {cpu_model()}. `{command}`",
        "",
        "| phase | CPU (s) | share |",
        "|---|---:|---:|",
        *(f"| {phase} | {seconds:.1f} | {seconds / total:.0%} |" for phase, seconds in clock.items()),
        f"| total | {total:.1f} | 100% |",
        "",
        f"At this rate 1e6 steps take {total / taken * 1e6:,.0f} s of CPU. "
        f"{unused.unused / max(unused.collected, 1):.1%} of the collected steps were used by no update "
        "(`rollout/unused_frac`: envs waiting, stepped, for the last episodes of a batch to end). Fixed per-env "
        f"quotas of the same episodes would have left {1 - unused.used / max(unused.quota_collected, 1):.1%} "
        "unused.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.n_envs is None else f"_n_envs{args.n_envs}"
    suffix += "_defaults" if args.defaults else ""
    suffix += "".join(f"_{item.replace('=', '')}" for item in args.hyperparams)
    (RESULTS / f"cost_breakdown_{args.env}{suffix}.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
