"""Ablation of the critic fit: how well the baseline explains the returns, and what the policy learns, against
the number of critic passes per update (``vf_n_epochs``; 0 is the joint one-step update of A2C).

Each run trains the zoo's entry for the env with only ``vf_n_epochs`` changed, logging every update's
``train/explained_variance`` (the critic that made the advantages) and ``train/explained_variance_after_fit``.
Reported per (env, vf_n_epochs, seed): the mean explained variance over the second half of training, before
and after the fit, the final score (20 deterministic episodes) and the training wall-clock.

Resumable: each finished run is saved to ``benchmarks/results/critic_fit/<env>/epochs<k>_seed<s>.json``.
Usage: ``python benchmarks/critic_fit.py --env Pendulum-v1 --epochs 0 10 80 --seeds 0``.
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from _common import resumable
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import sync_envs_normalization

from zoo.config import get_config, make_model, training_envs
from zoo.evaluate import evaluate_episodes
from zoo.machine import cpu_model

RESULTS = Path(__file__).parent / "results" / "critic_fit"
FINAL_EVAL_EPISODES = 20


def second_half_mean(values: list[float]) -> float:
    finite = [value for value in values[len(values) // 2 :] if np.isfinite(value)]
    return float(np.mean(finite)) if finite else float("nan")


def run(env_id: str, epochs: int, seed: int) -> dict[str, Any]:
    th.set_num_threads(1)
    config = get_config("reinforce", env_id, {"vf_n_epochs": epochs})
    env, eval_env = training_envs(config, seed)  # normalized as the entry says, as `zoo train` does
    model = make_model(config, env, seed)
    with tempfile.TemporaryDirectory() as folder:
        model.set_logger(configure(folder, ["csv"]))
        start = time.perf_counter()
        model.learn(config.n_timesteps)
        seconds = time.perf_counter() - start
        with open(Path(folder) / "progress.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))

    def column(name: str) -> list[float]:
        return [float(row[name]) if row.get(name) not in (None, "") else float("nan") for row in rows]

    sync_envs_normalization(env, eval_env)  # the training statistics, frozen
    scores, _ = evaluate_episodes(model, eval_env, FINAL_EVAL_EPISODES)
    record = {
        "env_id": env_id,
        "vf_n_epochs": epochs,
        "seed": seed,
        "n_timesteps": model.num_timesteps,
        "mean_reward": float(np.mean(scores)),
        "std_reward": float(np.std(scores)),
        "train_seconds": seconds,
        "explained_variance": second_half_mean(column("train/explained_variance")),
        "explained_variance_after_fit": second_half_mean(column("train/explained_variance_after_fit")),
        "cpu": cpu_model(),
    }
    print(json.dumps(record), flush=True)
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="Pendulum-v1")
    parser.add_argument("--epochs", type=int, nargs="+", default=[0, 10, 80])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    folder = Path(args.out) / args.env
    lines = [
        f"Critic fit ablation on {args.env} (zoo entry, only vf_n_epochs changed; explained variance: mean over "
        "the second half of training)",
        "",
        "| vf_n_epochs | seed | explained variance before fit | after fit | final score | train s |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for epochs in args.epochs:
        for seed in args.seeds:
            record = resumable(folder / f"epochs{epochs}_seed{seed}.json", partial(run, args.env, epochs, seed))
            lines.append(
                f"| {epochs} | {seed} | {record['explained_variance']:.2f} | "
                f"{record['explained_variance_after_fit']:.2f} | {record['mean_reward']:.1f} | "
                f"{record['train_seconds']:.0f} |"
            )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
