"""Is Reinforce's failure on Pendulum-v1 a bug, or the regime? Run SB3's A2C in the same regime and compare.

Pendulum-v1 episodes are always 200 steps (cut by the time limit). With ``n_envs`` envs, Reinforce's
``n_episodes=n_envs`` takes one gradient step per batch of ``n_envs`` complete episodes; SB3's A2C with
``n_steps=200`` takes one per batch of exactly the same shape (its envs reset together, so each rollout is the same
``n_envs`` whole episodes), with the same GAE(gamma, gae_lambda) targets bootstrapped at the cut, the same Adam,
advantage normalization, gradient clipping and VecNormalize. The two should then learn about equally; a large
gap would point at a bug in Reinforce. (A2C's zoo setting instead takes 8-step rollouts: ~16,000 updates per
1e6 steps where this regime takes 1,250.)

Reported per (algorithm, seed): the final model's mean return over 10 deterministic episodes and the mean
training return of the last 100 episodes. Resumable: each finished run is saved to
``benchmarks/results/same_regime/<algo>_seed<k>.json``. Usage:
``python benchmarks/same_regime.py [--seeds 0 1 2] [--steps 300000] [--learning-rate 3e-3]``.
"""

from __future__ import annotations

import argparse
import statistics
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from _common import resumable
from stable_baselines3 import A2C
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from sb3_reinforce import Reinforce
from zoo.episodes import evaluate_episodes

ENV_ID = "Pendulum-v1"
EPISODE_STEPS = 200
N_ENVS = 4
GAMMA = 0.9
GAE_LAMBDA = 0.95
RESULTS = Path(__file__).resolve().parent / "results" / "same_regime"


def run(algo: str, seed: int, steps: int, learning_rate: float) -> dict[str, Any]:
    th.set_num_threads(1)
    env = VecNormalize(make_vec_env(ENV_ID, n_envs=N_ENVS, seed=seed), gamma=GAMMA)
    policy_kwargs = {"log_std_init": -1.0}
    model: A2C | Reinforce
    if algo == "a2c":
        model = A2C(
            "MlpPolicy", env, n_steps=EPISODE_STEPS, gamma=GAMMA, gae_lambda=GAE_LAMBDA, learning_rate=learning_rate,
            normalize_advantage=True, use_rms_prop=False, policy_kwargs=policy_kwargs, seed=seed,
        )  # fmt: skip
    else:
        model = Reinforce(  # the fitted critic: A2C's GAE targets (the default baseline, "loo", has no critic)
            "MlpPolicy", env, n_episodes=N_ENVS, gamma=GAMMA, baseline="value", gae_lambda=GAE_LAMBDA,
            learning_rate=learning_rate, policy_kwargs=policy_kwargs, seed=seed,
        )  # fmt: skip
    model.learn(steps)
    env.training, env.norm_reward = False, False
    final = np.mean(evaluate_episodes(model, env, 10)[0])
    training = float(np.mean([info["r"] for info in model.ep_info_buffer]))
    return {"algo": algo, "seed": seed, "steps": steps, "learning_rate": learning_rate, "final": float(final),
            "training_last_100": training, "updates": int(model._n_updates)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=300_000)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    args = parser.parse_args(argv)
    records: dict[str, list[dict[str, Any]]] = {"reinforce": [], "a2c": []}
    for seed in args.seeds:
        for algo in records:
            path = RESULTS / f"{algo}_steps{args.steps}_lr{args.learning_rate:g}_seed{seed}.json"
            records[algo].append(resumable(path, partial(run, algo, seed, args.steps, args.learning_rate)))
    lr = f"{args.learning_rate:g}"
    print(f"{ENV_ID}, {N_ENVS} envs x {EPISODE_STEPS}-step episodes per update, {args.steps} steps, lr {lr}")
    print("| algorithm | updates | final (10 det. episodes) per seed | mean | training return (last 100) mean |")
    print("|---|---:|---|---:|---:|")
    for algo, runs in records.items():
        finals = [r["final"] for r in runs]
        per_seed = ", ".join(f"{f:.0f}" for f in finals)
        print(
            f"| {algo} | {runs[0]['updates']} | {per_seed} | {statistics.mean(finals):.0f} "
            f"| {statistics.mean(r['training_last_100'] for r in runs):.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
