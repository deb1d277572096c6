"""``python -m zoo evaluate``: mean +/- std return and per-episode lengths of a saved agent (a model zip, the run
folder of ``zoo train``, or a packaged agent's folder).

The module also holds the one episode loop; its env comes from :func:`zoo.factories.make_eval_env`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecEnv

from zoo.bounds import check_seed
from zoo.errors import ZooError
from zoo.factories import make_eval_env
from zoo.parsers import DEFAULT_EVAL_SEED, evaluate_parser
from zoo.runs import load_run


def evaluate_episodes(
    model: BaseAlgorithm, env: VecEnv, n_episodes: int, deterministic: bool = True, render: bool = False
) -> tuple[list[float], list[int]]:
    """Every episode's return and length over ``n_episodes`` episodes of ``env``."""
    rewards, lengths = evaluate_policy(
        model,
        env,
        n_eval_episodes=n_episodes,
        deterministic=deterministic,
        render=render,
        return_episode_rewards=True,
        warn=False,
    )
    return [float(r) for r in rewards], [int(n) for n in lengths]  # type: ignore[union-attr]


def evaluate(
    model_path: Path | str,
    env_id: str,
    episodes: int = 20,
    deterministic: bool = True,
    render: bool = False,
    seed: int = DEFAULT_EVAL_SEED,
) -> tuple[float, float, list[int]]:
    """Mean and std of the return, and every episode's length, of a model saved by ``zoo train`` or a packaged
    agent (:func:`zoo.runs.load_run`), seen through its VecNormalize statistics when it has them."""
    run = load_run(model_path, env_id)
    # The run's env_kwargs belong to its own env; another env is evaluated as registered.
    env_kwargs = run.config.env_kwargs if run.config is not None and run.config.env_id == env_id else {}
    env = make_eval_env(run.model, env_id, env_kwargs, run.stats, seed=seed, render_mode="human" if render else None)
    try:
        rewards, lengths = evaluate_episodes(run.model, env, episodes, deterministic)
    finally:
        env.close()
    return float(np.mean(rewards)), float(np.std(rewards)), lengths


def main(argv: list[str] | None = None) -> int:
    args = evaluate_parser().parse_args(argv)
    if args.episodes < 1:
        raise ZooError(f"--episodes must be >= 1, got {args.episodes}")
    check_seed(args.seed, "--seed")
    mean, std, lengths = evaluate(args.model, args.env, args.episodes, args.deterministic, args.render, args.seed)
    mode = "deterministic" if args.deterministic else "stochastic"
    print(f"{args.env}: mean_reward = {mean:.2f} +/- {std:.2f} over {args.episodes} {mode} episodes")
    print(f"episode lengths: {lengths}")
    return 0
