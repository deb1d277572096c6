"""``python -m zoo evaluate``: mean +/- std return and per-episode lengths of a saved agent."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from zoo.config import RunConfig, ZooError
from zoo.train import VEC_NORMALIZE_FILE, load_model, make_env


def check_spaces(model: BaseAlgorithm, env: VecEnv, env_id: str) -> None:
    if model.observation_space != env.observation_space or model.action_space != env.action_space:
        raise ZooError(
            f"the model does not fit {env_id}: it was trained on observations {model.observation_space} and "
            f"actions {model.action_space}, the env has {env.observation_space} and {env.action_space}"
        )


def evaluation_env(model_path: Path, config: RunConfig, seed: int, render_mode: str | None = None) -> VecEnv:
    """One env as the model was trained on it, with its frozen VecNormalize statistics when it used them."""
    env = make_env(config, seed, n_envs=1, render_mode=render_mode)
    stats = model_path.parent / VEC_NORMALIZE_FILE
    if stats.is_file():
        env = VecNormalize.load(str(stats), env)
        env.training = False
        env.norm_reward = False
    return env


def evaluate(
    model_path: Path | str,
    env_id: str,
    episodes: int = 20,
    deterministic: bool = True,
    render: bool = False,
    seed: int = 12_345,
) -> tuple[float, float, list[int]]:
    model_path = Path(model_path)
    model, config = load_model(model_path)
    if config is None:
        config = RunConfig(algo="reinforce", env_id=env_id, n_timesteps=1)
    elif config.env_id != env_id:
        config = RunConfig(algo=config.algo, env_id=env_id, n_timesteps=1, env_kwargs={})
    env = evaluation_env(model_path, config, seed, render_mode="human" if render else None)
    check_spaces(model, env, env_id)
    rewards, lengths = evaluate_policy(
        model, env, n_eval_episodes=episodes, deterministic=deterministic, render=False, return_episode_rewards=True
    )
    env.close()
    assert isinstance(rewards, list)
    assert isinstance(lengths, list)
    return float(np.mean(rewards)), float(np.std(rewards)), [int(n) for n in lengths]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m zoo evaluate", description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--env", required=True, help="Gymnasium env id")
    parser.add_argument("--model", required=True, help="path to a saved model zip")
    parser.add_argument("--episodes", type=int, default=20, help="evaluation episodes")
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--deterministic", dest="deterministic", action="store_true", default=True, help="greedy actions"
    )
    group.add_argument("--stochastic", dest="deterministic", action="store_false", help="sampled actions")
    parser.add_argument("--render", action="store_true", help="render in a window (render_mode='human')")
    parser.add_argument("--seed", type=int, default=12_345, help="seed of the evaluation env")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.episodes < 1:
        raise ZooError(f"--episodes must be >= 1, got {args.episodes}")
    mean, std, lengths = evaluate(args.model, args.env, args.episodes, args.deterministic, args.render, args.seed)
    mode = "deterministic" if args.deterministic else "stochastic"
    print(f"{args.env}: mean_reward = {mean:.2f} +/- {std:.2f} over {args.episodes} {mode} episodes")
    print(f"episode lengths: {lengths}")
    return 0
