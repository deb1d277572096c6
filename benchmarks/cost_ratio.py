"""CPU cost per env step of the zoo's Reinforce entries against the benchmark table's PPO and A2C, side by side.

CPU seconds from different hosts do not compare (one Pusher run took 586 CPU s on one development host and 227 on
another), so the ratios are measured here on one host at the same time: for each task, two rounds of two
processes, each pinned to its own core with one torch thread,

- round 1: Reinforce on core 0 beside PPO on core 1;
- round 2: A2C on core 0 beside Reinforce on core 1,

each training the zoo's entry for the task (``zoo/hyperparams/<algo>.yml``: the benchmark's configurations, with
their VecNormalize, parallel envs and network) for ``--steps`` env steps from scratch. The cost is the process's
CPU time in ``learn`` (collection and updates, no periodic evaluation) per env step it took. Reinforce's figure is
the mean of its two rounds, and each ratio is the other algorithm's cost over it: the steps Reinforce takes for
the CPU one PPO step costs, so ``1e6 x ratio`` is Reinforce's budget at the CPU of PPO's 1e6-step run.

The measurement is of the first ``--steps`` of training. PPO's and A2C's cost per step is the same all along (a
fixed rollout and update); Reinforce's update is per batch of episodes, so while episodes are short (a falling
Humanoid) its fixed cost per update weighs more per step than later: the early figure overstates Reinforce's cost,
and the ratio errs against it.

``python benchmarks/cost_ratio.py [--envs ...] [--steps 50000] [--name cost_ratio]`` writes
``benchmarks/results/<name>.md`` and ``.csv``, naming the CPU. Nothing else may run on the machine meanwhile.
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import stable_baselines3
import torch as th

import sb3_reinforce
from zoo.config import get_config, known_env_ids
from zoo.factories import make_model, training_envs
from zoo.hub.video import is_mujoco
from zoo.machine import cpu_model

RESULTS = Path(__file__).parent / "results"
# The zoo's MuJoCo tasks, in the order of its hyperparameter file.
MUJOCO_TASKS = [env_id for env_id in known_env_ids("reinforce") if is_mujoco(env_id)]
# Each round: (algorithm, core) pairs trained at the same time.
ROUNDS = ((("reinforce", 0), ("ppo", 1)), (("a2c", 0), ("reinforce", 1)))
SEED = 0


@dataclass(frozen=True)
class Cost:
    algo: str
    steps: int
    cpu_seconds: float
    wall_seconds: float

    @property
    def cpu_ms_per_step(self) -> float:
        return 1000 * self.cpu_seconds / self.steps


def measure(algo: str, env_id: str, steps: int, core: int) -> Cost:
    """Train ``algo``'s entry for ``env_id`` for ``steps`` steps on ``core`` alone: its cost."""
    os.sched_setaffinity(0, {core})
    th.set_num_threads(1)
    config = get_config(algo, env_id).with_seed(SEED)
    env, eval_env = training_envs(config, SEED)
    eval_env.close()
    model = make_model(config, env, SEED)
    cpu, wall = time.process_time(), time.perf_counter()
    model.learn(steps)
    cost = Cost(algo, int(model.num_timesteps), time.process_time() - cpu, time.perf_counter() - wall)
    env.close()
    return cost


def run_round(env_id: str, steps: int, pairs: tuple[tuple[str, int], ...]) -> list[Cost]:
    """The pairs' measurements, each in a fresh process of its own, at the same time; a process that fails raises
    here (it does not leave the round waiting)."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(pairs), mp_context=context) as pool:
        futures = [pool.submit(measure, algo, env_id, steps, core) for algo, core in pairs]
        return [future.result() for future in futures]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", nargs="+", default=MUJOCO_TASKS, help="tasks (default: the eleven MuJoCo tasks)")
    parser.add_argument("--steps", type=int, default=50_000, help="env steps per measurement (default: 50,000)")
    parser.add_argument("--name", default="cost_ratio", help="file name of the results (default: cost_ratio)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder of the results (default: benchmarks/results)")
    args = parser.parse_args(argv)
    for algo in ("reinforce", "ppo", "a2c"):
        missing = sorted(set(args.envs) - set(known_env_ids(algo)))
        if missing:
            parser.error(f"{algo}.yml has no entry for {', '.join(missing)}")
    if len(os.sched_getaffinity(0)) < 2:
        parser.error("two cores are needed: each round trains two algorithms at once, one a core")

    rows = []
    for env_id in args.envs:
        costs = [cost for pairs in ROUNDS for cost in run_round(env_id, args.steps, pairs)]
        reinforce = statistics.fmean(c.cpu_ms_per_step for c in costs if c.algo == "reinforce")
        row = {"env": env_id, "reinforce_ms": reinforce}
        for other in ("ppo", "a2c"):
            ms = next(c.cpu_ms_per_step for c in costs if c.algo == other)
            row[f"{other}_ms"] = ms
            row[f"{other}_ratio"] = ms / reinforce
        row["reinforce_ms_rounds"] = [round(c.cpu_ms_per_step, 4) for c in costs if c.algo == "reinforce"]
        rows.append(row)
        print(
            f"{env_id}: CPU ms per step reinforce {reinforce:.3f} {row['reinforce_ms_rounds']}, "
            f"ppo {row['ppo_ms']:.3f} (x{row['ppo_ratio']:.2f}), a2c {row['a2c_ms']:.3f} (x{row['a2c_ratio']:.2f})",
            flush=True,
        )

    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / f"{args.name}.csv").open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = [
        f"# CPU per env step: the zoo's Reinforce entries against the table's PPO and A2C ({args.steps:,} steps)",
        "",
        f"Host: {cpu_model()}, {len(os.sched_getaffinity(0))} cores; {datetime.now(timezone.utc):%Y-%m-%d}; "
        f"torch {th.__version__}, Stable-Baselines3 {stable_baselines3.__version__}, sb3-reinforce "
        f"{sb3_reinforce.__version__}. Each algorithm on one core with one torch thread, Reinforce beside PPO, "
        "then A2C beside Reinforce (`benchmarks/cost_ratio.py` says why).",
        "",
        f"`python benchmarks/cost_ratio.py --steps {args.steps} --name {args.name}"
        + ("" if args.envs == MUJOCO_TASKS else " --envs " + " ".join(args.envs))
        + "`",
        "",
        "| env | Reinforce CPU ms/step (two rounds) | PPO CPU ms/step | PPO / Reinforce | A2C CPU ms/step "
        "| A2C / Reinforce | Reinforce steps at PPO's 1e6-step CPU |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        rounds = ", ".join(f"{ms:.3f}" for ms in row["reinforce_ms_rounds"])
        lines.append(
            f"| {row['env']} | {row['reinforce_ms']:.3f} ({rounds}) | {row['ppo_ms']:.3f} | {row['ppo_ratio']:.2f} "
            f"| {row['a2c_ms']:.3f} | {row['a2c_ratio']:.2f} | {row['ppo_ratio'] * 1e6:,.0f} |"
        )
    (args.out / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / args.name}.md and .csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
