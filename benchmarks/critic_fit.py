"""Ablation of the critic fit: how well the baseline explains the returns, what the policy learns and what the
fit costs, against how the critic is fitted each update: ``vf_n_epochs`` passes over the batch, full-batch
(``80``) or in minibatches of ``vf_batch_size`` steps (``2x64``); ``0`` is the joint one-step update of A2C.

Each run trains the zoo's entry for the env with only the fit changed, or with ``--defaults`` the constructor's
defaults with the fitted critic (``Reinforce("MlpPolicy", env, baseline="value")``: the default baseline, "loo", has
no critic) on a DummyVecEnv of 8 envs, ``--steps`` env steps, logging every
update's ``train/explained_variance`` (the critic that made the advantages) and
``train/explained_variance_after_fit``. Reported per (env, fit, seed): the mean explained variance over the second
half of training, before and after the fit, the final score (20 deterministic episodes), and the training
wall-clock and CPU time.

Resumable: each finished run is saved to ``benchmarks/results/critic_fit/<env>[_defaults]/<fit>_seed<s>.json``.
Usage: ``python benchmarks/critic_fit.py --env Pendulum-v1 --fits 0 10 80 --seeds 0``, or
``python benchmarks/critic_fit.py --env CartPole-v1 --defaults --steps 200000 --fits 80 2x64 --seeds 0 1 2``.
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
from _common import DEFAULTS_N_ENVS, defaults_model, resumable
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import sync_envs_normalization

from zoo.config import get_config
from zoo.episodes import evaluate_episodes
from zoo.factories import make_model, training_envs
from zoo.machine import cpu_model

RESULTS = Path(__file__).parent / "results" / "critic_fit"
FINAL_EVAL_EPISODES = 20


def second_half_mean(values: list[float]) -> float:
    finite = [value for value in values[len(values) // 2 :] if np.isfinite(value)]
    return float(np.mean(finite)) if finite else float("nan")


def parse_fit(text: str) -> tuple[int, int | None]:
    """``"80"`` -> (80, None): full-batch passes; ``"2x64"`` -> (2, 64): passes in minibatches of 64 steps."""
    epochs, _, batch = text.partition("x")
    try:
        return int(epochs), (int(batch) if batch else None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a fit is EPOCHS or EPOCHSxBATCH (e.g. 80, 2x64), got {text!r}") from None


def fit_name(fit: tuple[int, int | None]) -> str:
    epochs, batch = fit
    return f"epochs{epochs}" + ("" if batch is None else f"_batch{batch}")


def run(env_id: str, fit: tuple[int, int | None], seed: int, defaults_steps: int | None = None) -> dict[str, Any]:
    """One training run; with ``defaults_steps``, of the constructor's defaults with ``baseline="value"`` for that
    many steps."""
    th.set_num_threads(1)
    epochs, batch = fit
    if defaults_steps is None:
        config = get_config("reinforce", env_id, {"vf_n_epochs": epochs, "vf_batch_size": batch})
        env, eval_env = training_envs(config, seed)  # normalized as the entry says, as `zoo train` does
        model = make_model(config, env, seed)
        budget = config.n_timesteps
    else:
        model = defaults_model(env_id, seed, baseline="value", vf_n_epochs=epochs, vf_batch_size=batch)
        env = model.get_env()
        assert env is not None, "built with its env"
        eval_env = make_vec_env(env_id, 1, seed=seed + 10_000)
        budget = defaults_steps
    with tempfile.TemporaryDirectory() as folder:
        model.set_logger(configure(folder, ["csv"]))
        start, cpu_start = time.perf_counter(), time.process_time()
        model.learn(budget)
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
        with open(Path(folder) / "progress.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))

    def column(name: str) -> list[float]:
        return [float(row[name]) if row.get(name) not in (None, "") else float("nan") for row in rows]

    sync_envs_normalization(env, eval_env)  # the training statistics, frozen
    scores, _ = evaluate_episodes(model, eval_env, FINAL_EVAL_EPISODES)
    record = {
        "env_id": env_id,
        "vf_n_epochs": epochs,
        "vf_batch_size": batch,
        "defaults": defaults_steps is not None,
        "baseline": model.baseline,
        "seed": seed,
        "n_timesteps": model.num_timesteps,
        "mean_reward": float(np.mean(scores)),
        "std_reward": float(np.std(scores)),
        "train_seconds": seconds,
        "train_cpu_seconds": cpu_seconds,
        "explained_variance": second_half_mean(column("train/explained_variance")),
        "explained_variance_after_fit": second_half_mean(column("train/explained_variance_after_fit")),
        "cpu": cpu_model(),
    }
    print(json.dumps(record), flush=True)
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="Pendulum-v1")
    parser.add_argument("--fits", "--epochs", type=parse_fit, nargs="+", default=[(0, None), (10, None), (80, None)])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument(
        "--defaults", action="store_true", help="the constructor's defaults with baseline='value', not the zoo entry"
    )
    parser.add_argument("--steps", type=int, default=200_000, help="budget with --defaults (default: 200,000)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    folder = Path(args.out) / (f"{args.env}_defaults" if args.defaults else args.env)
    subject = (
        f"the constructor's defaults with baseline='value', {DEFAULTS_N_ENVS} envs, {args.steps:,} steps"
        if args.defaults
        else "zoo entry"
    )
    lines = [
        f"Critic fit ablation on {args.env} ({subject}; only the critic fit changed; explained variance: mean over "
        "the second half of training)",
        "",
        "| vf_n_epochs | vf_batch_size | seed | explained variance before fit | after fit | final score | train s | "
        "train CPU s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fit in args.fits:
        for seed in args.seeds:
            path = folder / f"{fit_name(fit)}_seed{seed}.json"
            steps = args.steps if args.defaults else None
            record = resumable(path, partial(run, args.env, fit, seed, steps))
            cpu = record.get("train_cpu_seconds")
            lines.append(
                f"| {fit[0]} | {fit[1] or 'full'} | {seed} | {record['explained_variance']:.2f} | "
                f"{record['explained_variance_after_fit']:.2f} | {record['mean_reward']:.1f} | "
                f"{record['train_seconds']:.0f} | {'-' if cpu is None else f'{cpu:.0f}'} |"
            )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
