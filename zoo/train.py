"""``python -m zoo train``: train an agent with the zoo's tuned hyperparameters and save everything to redo it."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
import yaml
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import EvalCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from zoo.config import ALGOS, RunConfig, ZooError, get_config

VEC_NORMALIZE_FILE = "vecnormalize.pkl"
CONFIG_FILE = "config.yml"


def check_env_id(env_id: str) -> None:
    if env_id not in gym.registry:
        close = [name for name in gym.registry if name.lower().startswith(env_id.lower().split("-")[0])][:5]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ZooError(f"unknown env id {env_id!r}{hint}")


def make_env(config: RunConfig, seed: int, n_envs: int | None = None, render_mode: str | None = None) -> VecEnv:
    """The VecEnv a run trains on (without normalization), seeded."""
    check_env_id(config.env_id)
    env_kwargs = dict(config.env_kwargs)
    if render_mode is not None:
        env_kwargs["render_mode"] = render_mode
    return make_vec_env(config.env_id, n_envs=n_envs or config.n_envs, seed=seed, env_kwargs=env_kwargs)


def normalize_kwargs(config: RunConfig) -> dict[str, Any] | None:
    if config.normalize is False:
        return None
    return {} if config.normalize is True else dict(config.normalize)


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``key=value`` pairs; values are YAML (``1e-3`` and ``3e5`` are numbers here, as a user means them)."""
    overrides: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ZooError(f"--hyperparams takes key=value pairs, got {item!r}")
        value = yaml.safe_load(text)
        if isinstance(value, str):
            for number in (int, float):
                try:
                    value = number(text)
                    break
                except ValueError:
                    continue
        overrides[key] = value
    return overrides


def next_run_dir(log_folder: Path, algo: str, env_id: str) -> Path:
    parent = log_folder / algo
    parent.mkdir(parents=True, exist_ok=True)
    taken = {p.name for p in parent.iterdir()}
    index = 1
    while f"{env_id}_{index}" in taken:
        index += 1
    return parent / f"{env_id}_{index}"


class TimedEvalCallback(EvalCallback):
    """EvalCallback that also adds up the wall-clock its evaluations take, so training time can exclude it."""

    eval_seconds = 0.0

    def _on_step(self) -> bool:
        start = time.perf_counter()
        try:
            return super()._on_step()
        finally:
            self.eval_seconds += time.perf_counter() - start


@dataclass
class TrainResult:
    run_dir: Path
    model_path: Path
    mean_reward: float
    std_reward: float
    n_timesteps: int
    train_seconds: float


def train(
    config: RunConfig,
    seed: int = 0,
    log_folder: Path | str = "logs",
    eval_freq: int | None = None,
    eval_episodes: int = 10,
    final_eval_episodes: int = 20,
    progress_bar: bool = True,
    verbose: int = 1,
    command: str | None = None,
) -> TrainResult:
    """Train ``config`` and write a run folder: the final and best model, config.yml, command.txt,
    VecNormalize statistics when used, evaluations.npz, progress.csv and TensorBoard events."""
    run_dir = next_run_dir(Path(log_folder), config.algo, config.env_id)
    run_dir.mkdir(parents=True)
    (run_dir / CONFIG_FILE).write_text(yaml.safe_dump(config.to_data(seed), sort_keys=False))
    (run_dir / "command.txt").write_text((command or "") + "\n")
    if verbose:
        print(f"Training {config.algo} on {config.env_id} (seed {seed}) into {run_dir}")
        print(yaml.safe_dump(config.to_data(seed), sort_keys=False))

    env = make_env(config, seed)
    eval_env = make_env(config, seed + 10_000, n_envs=1)
    norm = normalize_kwargs(config)
    if norm is not None:
        env = VecNormalize(env, **{"gamma": config.hyperparams.get("gamma", 0.99), **norm})
        # Evaluation reads the training statistics (EvalCallback syncs them) and reports raw rewards.
        eval_env = VecNormalize(eval_env, training=False, **{**norm, "norm_reward": False})
    try:
        model = ALGOS[config.algo](config.policy, env, seed=seed, verbose=0, device="cpu", **config.algorithm_kwargs())
    except (ValueError, TypeError) as error:
        raise ZooError(f"bad hyperparameters for {config.algo} on {config.env_id}: {error}") from None
    model.set_logger(configure(str(run_dir), ["stdout", "csv", "tensorboard"] if verbose else ["csv", "tensorboard"]))
    frequency = eval_freq or max(config.n_timesteps // 20, 1)
    evaluation = TimedEvalCallback(
        eval_env,
        eval_freq=max(frequency // config.n_envs, 1),
        n_eval_episodes=eval_episodes,
        best_model_save_path=str(run_dir),
        log_path=str(run_dir),
        deterministic=True,
        verbose=verbose,
    )
    start = time.perf_counter()
    model.learn(config.n_timesteps, callback=evaluation, progress_bar=progress_bar)
    seconds = time.perf_counter() - start - evaluation.eval_seconds
    model_path = run_dir / f"{config.env_id}.zip"
    model.save(model_path)
    if isinstance(env, VecNormalize) and isinstance(eval_env, VecNormalize):
        env.save(str(run_dir / VEC_NORMALIZE_FILE))
        eval_env.obs_rms = env.obs_rms
    mean, std = evaluate_policy(model, eval_env, n_eval_episodes=final_eval_episodes, deterministic=True)
    assert isinstance(mean, float)
    assert isinstance(std, float)
    env.close()
    eval_env.close()
    if verbose:
        print(
            f"{config.env_id}: mean_reward = {mean:.2f} +/- {std:.2f} over {final_eval_episodes} deterministic "
            f"episodes after {model.num_timesteps} steps ({seconds:.1f} s of training, evaluations excluded)"
        )
        print(f"saved {model_path}")
    return TrainResult(run_dir, model_path, float(mean), float(std), model.num_timesteps, seconds)


def load_model(path: Path | str, env_id: str | None = None) -> tuple[BaseAlgorithm, RunConfig | None]:
    """A model saved by ``train`` and its config (read from config.yml beside it when present)."""
    path = Path(path)
    if not path.is_file():
        raise ZooError(f"model file not found: {path}")
    config_path = path.parent / CONFIG_FILE
    config = RunConfig.from_data(yaml.safe_load(config_path.read_text())) if config_path.is_file() else None
    algo_names = [config.algo] if config else list(ALGOS)
    errors = []
    for name in algo_names:
        try:
            return ALGOS[name].load(path, device="cpu"), config
        except Exception as error:  # SB3 raises many kinds for a file that is not its zip
            errors.append(f"{name}: {type(error).__name__}: {error}")
    raise ZooError(f"{path} is not a model this zoo can load ({'; '.join(errors)[:300]})")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m zoo train", description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--env", required=True, help="Gymnasium env id, e.g. CartPole-v1")
    parser.add_argument("--algo", default="reinforce", choices=list(ALGOS), help="algorithm")
    parser.add_argument("--variant", default=None, help="a named entry ENV/VARIANT of the hyperparameter file")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--n-timesteps", type=int, default=None, help="override the tuned budget (env steps)")
    parser.add_argument(
        "--hyperparams", nargs="*", default=[], metavar="KEY=VALUE", help="override hyperparameters (YAML values)"
    )
    parser.add_argument("--log-folder", default="logs", help="where run folders are created")
    parser.add_argument(
        "--eval-freq", type=int, default=None, help="env steps between evaluations (default: n_timesteps / 20)"
    )
    parser.add_argument("--eval-episodes", type=int, default=10, help="episodes per periodic evaluation")
    parser.add_argument("--no-progress-bar", action="store_true", help="hide the progress bar")
    parser.add_argument("--verbose", type=int, default=1, help="0 quiet, 1 info")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    check_env_id(args.env)
    overrides = parse_overrides(args.hyperparams)
    if args.n_timesteps is not None:
        overrides["n_timesteps"] = args.n_timesteps
    config = get_config(args.algo, args.env, overrides, variant=args.variant)
    th.set_num_threads(1)
    np.set_printoptions(precision=4)
    command = shlex.join(["python", "-m", "zoo", "train", *(sys.argv[1:] if argv is None else argv)])
    train(
        config,
        seed=args.seed,
        log_folder=args.log_folder,
        eval_freq=args.eval_freq,
        eval_episodes=args.eval_episodes,
        progress_bar=not args.no_progress_bar,
        verbose=args.verbose,
        command=command,
    )
    return 0
