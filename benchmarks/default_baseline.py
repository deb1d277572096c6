"""Which baseline should ``Reinforce("MlpPolicy", env)`` use? The constructor's defaults with only ``baseline``
changed, trained on the same budget over the same seeds, and scored the same way.

Settings: ``Reinforce("MlpPolicy", env, baseline=B)`` on a seeded DummyVecEnv of 8 envs (``throughput.py``'s
setting; no normalization, no tuning), 1 torch thread, one run at a time. Each run is evaluated every tenth of its
budget on 5 deterministic episodes (the learning curve, whose mean over the ten points is reported as "curve mean":
how early it learns) and at the end on 20 deterministic episodes (the final score).

Reported per env and baseline: the final scores' mean +/- std and IQM with its 95% stratified-bootstrap interval,
the probability that a run with the baseline ends above a run of the reference baseline (``--reference``, the
current default) with its interval, the curve mean, and the training CPU time per run (evaluations excluded).

Resumable: each finished (env, baseline, seed) is saved to
``benchmarks/results/default_baseline/<env>/<baseline>_seed<k>.json`` and skipped next time.
Usage: ``python benchmarks/default_baseline.py [--envs CartPole-v1 Acrobot-v1 LunarLander-v3] [--baselines value loo
mean] [--seeds 5] [--steps 200000 200000 500000]``. Writes ``benchmarks/results/default_baseline.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from _common import DEFAULTS_N_ENVS, defaults_model, resumable
from stable_baselines3.common.env_util import make_vec_env

from zoo.episodes import evaluate_episodes
from zoo.machine import cpu_model
from zoo.statistics import improvement_interval, iqm_interval
from zoo.timed_eval import TimedEvalCallback

RESULTS = Path(__file__).parent / "results" / "default_baseline"
CURVE_POINTS = 10
CURVE_EPISODES = 5
FINAL_EPISODES = 20
DEFAULT_ENVS = ["CartPole-v1", "Acrobot-v1", "LunarLander-v3"]
DEFAULT_STEPS = [200_000, 200_000, 500_000]


def run(env_id: str, baseline: str, seed: int, steps: int) -> dict[str, Any]:
    """One training run of the constructor's defaults with ``baseline``, and its scores."""
    th.set_num_threads(1)
    model = defaults_model(env_id, seed, baseline=baseline)
    eval_env = make_vec_env(env_id, 1, seed=seed + 10_000)
    with tempfile.TemporaryDirectory() as log_path:  # SB3's EvalCallback keeps its results only with a log_path
        clock = TimedEvalCallback(
            eval_env,
            n_eval_episodes=CURVE_EPISODES,
            eval_freq=max(steps // CURVE_POINTS // DEFAULTS_N_ENVS, 1),
            log_path=log_path,
            deterministic=True,
            verbose=0,
        )
        start = time.process_time()
        model.learn(steps, callback=clock)
        cpu_seconds = time.process_time() - start - clock.eval_cpu_seconds
    scores, _ = evaluate_episodes(model, eval_env, FINAL_EPISODES)
    record = {
        "env_id": env_id,
        "baseline": baseline,
        "seed": seed,
        "n_timesteps": model.num_timesteps,
        "n_envs": DEFAULTS_N_ENVS,
        "mean_reward": float(np.mean(scores)),
        "std_reward": float(np.std(scores)),
        "curve": [float(np.mean(rewards)) for rewards in clock.evaluations_results],
        "train_cpu_seconds": cpu_seconds,
        "cpu": cpu_model(),
    }
    print(json.dumps(record), flush=True)
    return record


def summary_row(env_id: str, baseline: str, records: list[dict[str, Any]], reference: list[float]) -> str:
    scores = [record["mean_reward"] for record in records]
    iqm = iqm_interval([scores])
    better = improvement_interval([scores], [reference])
    curves = [np.mean(record["curve"]) for record in records if record["curve"]]
    curve_mean = f"{np.mean(curves):.1f}" if curves else "-"
    cpu = np.mean([record["train_cpu_seconds"] for record in records])
    return (
        f"| {env_id} | {baseline} | {len(records)} | {np.mean(scores):.1f} +/- {np.std(scores):.1f} | "
        f"{iqm.point:.1f} [{iqm.low:.1f}, {iqm.high:.1f}] | {better.point:.2f} [{better.low:.2f}, {better.high:.2f}] | "
        f"{curve_mean} | {cpu:.0f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=DEFAULT_ENVS)
    parser.add_argument("--steps", type=int, nargs="+", default=DEFAULT_STEPS, help="one budget per env")
    parser.add_argument("--baselines", nargs="+", default=["value", "loo", "mean"])
    parser.add_argument("--reference", default="value", help="the baseline the others are compared with")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if len(args.steps) != len(args.envs):
        parser.error(f"--steps needs one budget per env: {len(args.envs)} envs, {len(args.steps)} budgets")
    if args.reference not in args.baselines:
        parser.error(f"--reference {args.reference!r} must be one of --baselines {args.baselines}")
    out = Path(args.out)
    lines = [
        f'`Reinforce("MlpPolicy", env, baseline=B)`, the constructor\'s defaults otherwise, {DEFAULTS_N_ENVS} envs '
        f"(DummyVecEnv), {args.seeds} seeds. Final score: 20 deterministic episodes after training; P(> "
        f"{args.reference}): the probability that a run ends above a run with baseline={args.reference!r}, with "
        "its 95% stratified-bootstrap interval; curve mean: the mean of the 10 evaluations along training (5 "
        "episodes each); CPU: training CPU seconds per run, evaluations excluded. Machine: " + cpu_model() + ".",
        "",
        "| env | baseline | seeds | mean +/- std | IQM [95% CI] | P(> " + args.reference + ") | curve mean | CPU s |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for env_id, steps in zip(args.envs, args.steps, strict=True):
        runs = {
            baseline: [
                resumable(out / env_id / f"{baseline}_seed{seed}.json", partial(run, env_id, baseline, seed, steps))
                for seed in range(args.seeds)
            ]
            for baseline in args.baselines
        }
        reference = [record["mean_reward"] for record in runs[args.reference]]
        lines += [summary_row(env_id, baseline, records, reference) for baseline, records in runs.items()]
        lines[-len(runs)] = lines[-len(runs)].replace(f"| {env_id} |", f"| {env_id} ({steps:,} steps) |", 1)
    command = "python benchmarks/default_baseline.py " + " ".join(sys.argv[1:] if argv is None else argv)
    lines += ["", f"Reproduce: `{command.strip()}`"]
    out.mkdir(parents=True, exist_ok=True)
    (out.parent / f"{out.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
