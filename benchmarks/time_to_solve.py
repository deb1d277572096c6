"""Time to solve an env: Reinforce against SB3's PPO and A2C with rl-baselines3-zoo's tuned hyperparameters.

Every 10,000 env steps on CartPole-v1 (50,000 on LunarLander-v3) training pauses for a 100-episode deterministic
evaluation; the run stops when its mean reaches the env's threshold (475 on CartPole-v1, 200 on LunarLander-v3).
Reported per algorithm: the median over seeds of the training wall-clock until then (evaluation time excluded),
of the process's CPU time over the same span (on a shared machine, the wall-clock an idle core would take: one
process, one torch thread) and of the env steps, and the ratio of median CPU times against PPO (of wall-clocks
for records made before the CPU time was). The budget is the zoo entry's
``n_timesteps`` (a run that does not solve within it counts with its whole training time). Settings: the zoo's
the env's entries (``zoo/hyperparams/{reinforce,ppo,a2c}.yml``; ``--algos reference entropy vectorized`` times the
design documents' variants from their ``CartPole-v1/<variant>`` entries), 1 torch thread, one run at a time.

Resumable: each finished (algorithm, seed) is saved to ``benchmarks/results/time_to_solve/<algo>_seed<k>.json``
(``time_to_solve/<env>/`` for envs other than CartPole-v1) and skipped next time.
Usage: ``python benchmarks/time_to_solve.py [--env LunarLander-v3] [--seeds 5] [--algos reinforce ppo a2c]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from _common import SolveClock, resumable

from zoo.config import get_config
from zoo.factories import make_model, training_envs
from zoo.machine import cpu_model

# env id -> (threshold of the 100-episode mean, env steps between evaluations)
TARGETS: dict[str, tuple[float, int]] = {"CartPole-v1": (475.0, 10_000), "LunarLander-v3": (200.0, 50_000)}
EVAL_EPISODES = 100
# name -> (algorithm, zoo variant or None). The budget is the zoo entry's n_timesteps, so learning-rate schedules
# run exactly as tuned.
CONTENDERS: dict[str, tuple[str, str | None]] = {
    "reinforce": ("reinforce", None),
    "ppo": ("ppo", None),
    "a2c": ("a2c", None),
    "reference": ("reinforce", "reference"),
    "entropy": ("reinforce", "entropy"),
    "vectorized": ("reinforce", "vectorized"),
}
RESULTS = Path(__file__).parent / "results"


def run(env_id: str, name: str, seed: int) -> dict[str, Any]:
    algo, variant = CONTENDERS[name]
    threshold, every = TARGETS[env_id]
    config = get_config(algo, env_id, variant=variant)
    # Normalized as the entry says (the evaluation reads the training statistics), as `zoo train` does.
    env, eval_env = training_envs(config, seed, eval_n_envs=10)
    model = make_model(config, env, seed)
    clock = SolveClock(eval_env, n_envs=config.n_envs, threshold=threshold, every=every, episodes=EVAL_EPISODES)
    start, cpu_start = time.perf_counter(), time.process_time()
    model.learn(config.n_timesteps, callback=clock)
    seconds = time.perf_counter() - start - clock.eval_seconds
    cpu_seconds = time.process_time() - cpu_start - clock.eval_cpu_seconds
    record = {
        "name": name,
        "seed": seed,
        "solved": clock.solved_at is not None,
        "steps": clock.solved_at if clock.solved_at is not None else model.num_timesteps,
        "train_seconds": seconds,
        "train_cpu_seconds": cpu_seconds,
        "cpu": cpu_model(),
        "history": clock.history,
        "hyperparams": config.with_seed(seed).to_data(),
    }
    print(
        f"{name} seed {seed}: solved={record['solved']} at {record['steps']} steps, {seconds:.1f} s "
        f"({cpu_seconds:.1f} s CPU)",
        flush=True,
    )
    return record


def shown_path(folder: Path) -> Path:
    """``folder`` relative to the repository when it is inside it, so the committed table names no machine."""
    root = Path(__file__).resolve().parents[1]
    resolved = folder.resolve()
    return resolved.relative_to(root) if resolved.is_relative_to(root) else folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="CartPole-v1", choices=list(TARGETS))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--algos",
        nargs="*",
        default=["reinforce", "ppo", "a2c"],
        choices=list(CONTENDERS),
        help="contenders: tuned Reinforce, SB3 PPO/A2C, or a design-document variant by name",
    )
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    th.set_num_threads(1)
    env_id = args.env
    threshold, every = TARGETS[env_id]
    folder = Path(args.out) / "time_to_solve"
    if env_id != "CartPole-v1":
        folder = folder / env_id
    folder.mkdir(parents=True, exist_ok=True)
    for seed in range(args.seeds):
        for algo in args.algos:
            resumable(folder / f"{algo}_seed{seed}.json", partial(run, env_id, algo, seed))

    medians = {}
    lines = [
        "| contender | seeds solved | median env steps | median training seconds | median CPU seconds | time / PPO's |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for algo in args.algos:
        records = [json.loads(p.read_text()) for p in sorted(folder.glob(f"{algo}_seed*.json"))]
        if not records:
            continue
        # An unsolved run counts with its whole budget: the median is then a lower bound for that algorithm.
        cpu = [r.get("train_cpu_seconds") for r in records]
        medians[algo] = (
            statistics.median(r["train_seconds"] for r in records),
            None if None in cpu else statistics.median(c for c in cpu if c is not None),
            statistics.median(r["steps"] for r in records),
            sum(r["solved"] for r in records),
            len(records),
        )
    cpu_known = all(cpu is not None for _, cpu, *_ in medians.values())
    for algo, (seconds, cpu, steps, solved, total) in medians.items():
        ratio = float("nan")
        if "ppo" in medians:
            ratio = cpu / medians["ppo"][1] if cpu_known and cpu is not None else seconds / medians["ppo"][0]
        cpu_cell = "-" if cpu is None else f"{cpu:.1f}"
        lines.append(f"| {algo} | {solved}/{total} | {steps:,.0f} | {seconds:.1f} | {cpu_cell} | {ratio:.2f} |")
    text = "\n".join(
        [
            f"Time to solve {env_id} (100-episode deterministic evaluation >= {threshold:.0f}, checked every "
            f"{every:,} steps; training wall-clock and CPU time, evaluations excluded; medians over seeds; the "
            f"ratio is of {'CPU times' if cpu_known else 'wall-clocks'}).",
            "",
            *lines,
            "",
            f"Reproduce: `python benchmarks/time_to_solve.py --env {env_id}` (resumable; per-seed results in "
            f"`{shown_path(folder)}/`).",
        ]
    )
    suffix = "" if env_id == "CartPole-v1" else f"_{env_id}"
    (Path(args.out) / f"time_to_solve{suffix}.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    raise SystemExit(main())
