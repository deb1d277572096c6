"""``python -m zoo train``: train an agent with the zoo's tuned hyperparameters and save everything to redo it."""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
import yaml
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import VecEnv, VecNormalize, sync_envs_normalization

from zoo.algos import ALGOS
from zoo.config import (
    RunConfig,
    check_budget_flag,
    check_env_id,
    check_seed,
    get_config,
    make_model,
    parse_overrides,
    training_envs,
)
from zoo.errors import ZooError, first_line
from zoo.evaluate import evaluate_episodes
from zoo.folders import write_atomically
from zoo.runs import BEST_MODEL_FILE, COMMAND_FILE, CONFIG_YML, VEC_NORMALIZE_PKL, claim_run_dir, model_file


class TimedEvalCallback(EvalCallback):
    """EvalCallback that also adds up the wall-clock and the CPU time its evaluations take, so training time can
    exclude them, and writes each new best model atomically (SB3's own writes in place: a failed save would
    truncate the last one)."""

    eval_seconds = 0.0
    eval_cpu_seconds = 0.0
    evaluated_at_update: int | None = None

    def __init__(self, eval_env: VecEnv, *, best_model_save_path: str | None = None, **kwargs: Any) -> None:
        super().__init__(eval_env, best_model_save_path=None, **kwargs)
        self.best_model_file = Path(best_model_save_path) / BEST_MODEL_FILE if best_model_save_path else None

    def _on_step(self) -> bool:
        updates = getattr(self.model, "_n_updates", None)
        if self.eval_freq > 0 and self.n_calls % self.eval_freq == 0 and updates is not None:
            # The same policy as at the last evaluation would score the same: an episodic algorithm's collection
            # can outlast many evaluation periods on a tiny budget, and would be evaluated at every vector step.
            if updates == self.evaluated_at_update:
                return True
            self.evaluated_at_update = updates
        start, cpu_start = time.perf_counter(), time.process_time()
        best = self.best_mean_reward
        try:
            continue_training = super()._on_step()
            if self.best_model_file is not None and self.best_mean_reward > best:
                write_atomically(self.best_model_file, self.model.save, "best model")
            return continue_training
        finally:
            self.eval_seconds += time.perf_counter() - start
            self.eval_cpu_seconds += time.process_time() - cpu_start


@dataclass
class TrainResult:
    run_dir: Path
    model_path: Path
    mean_reward: float
    std_reward: float
    n_timesteps: int
    train_seconds: float
    # The process's CPU time over the same span. A run is one process with one torch thread, so on a machine
    # shared with other jobs this is close to the wall-clock it would take alone; the wall-clock is not.
    train_cpu_seconds: float


def save_final(model: BaseAlgorithm, env: VecEnv, run_dir: Path, env_id: str) -> list[Path]:
    """The final model, and the VecNormalize statistics when the run normalizes, each written atomically."""
    saved = [write_atomically(run_dir / model_file(env_id), model.save, "final model")]
    if isinstance(env, VecNormalize):
        saved.append(write_atomically(run_dir / VEC_NORMALIZE_PKL, lambda path: env.save(str(path)), "statistics"))
    return saved


def start_run_folder(config: RunConfig, seed: int, log_folder: Path | str, command: str | None, verbose: int) -> Path:
    """Claim ``<log_folder>/<algo>/<env>_<k>/`` and write what redoes the run: config.yml and command.txt."""
    run_dir = claim_run_dir(Path(log_folder), config.algo, config.env_id)
    try:
        (run_dir / CONFIG_YML).write_text(yaml.safe_dump(config.to_data(seed), sort_keys=False))
        (run_dir / COMMAND_FILE).write_text((command or "") + "\n")
    except OSError as error:
        raise ZooError(f"cannot write in the run folder {run_dir}: {first_line(error)}") from None
    if verbose:
        print(f"Training {config.algo} on {config.env_id} (seed {seed}) into {run_dir}")
        print(yaml.safe_dump(config.to_data(seed), sort_keys=False))
    return run_dir


def periodic_evaluation(
    config: RunConfig,
    eval_env: VecEnv,
    run_dir: Path,
    eval_freq: int | None,
    eval_episodes: int,
    verbose: int,
    after_eval: BaseCallback | None,
) -> TimedEvalCallback:
    """Deterministic evaluations every ``eval_freq`` steps (default: 20 over the budget), keeping the best model."""
    frequency = eval_freq or max(config.n_timesteps // 20, 1)
    return TimedEvalCallback(
        eval_env,
        eval_freq=max(frequency // config.n_envs, 1),
        n_eval_episodes=eval_episodes,
        best_model_save_path=str(run_dir),
        log_path=str(run_dir),
        deterministic=True,
        verbose=verbose,
        callback_after_eval=after_eval,
    )


def timed_learn(
    model: BaseAlgorithm,
    env: VecEnv,
    run_dir: Path,
    config: RunConfig,
    evaluation: TimedEvalCallback,
    progress_bar: bool,
) -> tuple[float, float]:
    """``model.learn`` over the budget; the wall-clock and CPU seconds it took, evaluations excluded.

    Ctrl-C saves the final model and statistics as they are, says where, and raises KeyboardInterrupt again; the
    algorithm's own guards (a diverged loss, an endless episode) and a failed write become one-line ZooErrors.
    """
    start, cpu_start = time.perf_counter(), time.process_time()
    try:
        model.learn(config.n_timesteps, callback=evaluation, progress_bar=progress_bar)
    except KeyboardInterrupt:
        saved = save_final(model, env, run_dir, config.env_id)
        print(f"\ninterrupted after {model.num_timesteps} steps; saved {', '.join(map(str, saved))}", file=sys.stderr)
        raise
    except (FloatingPointError, RuntimeError) as error:
        raise ZooError(f"training stopped after {model.num_timesteps} steps: {first_line(error)}") from None
    except OSError as error:  # the logger or the evaluation could not write
        raise ZooError(f"training stopped: cannot write in {run_dir}: {first_line(error)}") from None
    seconds = time.perf_counter() - start - evaluation.eval_seconds
    return seconds, time.process_time() - cpu_start - evaluation.eval_cpu_seconds


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
    after_eval: BaseCallback | None = None,
) -> TrainResult:
    """Train ``config`` and write a run folder: the final and best model, config.yml, command.txt,
    VecNormalize statistics when used, evaluations.npz, progress.csv and TensorBoard events.

    ``after_eval`` runs after each periodic evaluation (SB3's ``callback_after_eval``: it reads
    ``self.parent.last_mean_reward``); returning False stops training early, as ``zoo tune``'s pruner does.

    The envs and the model are built before the run folder is claimed, and a run that fails before it saved a
    model removes its folder, so a failure leaves no stub behind. Models and statistics are written atomically.
    Ctrl-C saves the final model and statistics as they are, says where, and raises KeyboardInterrupt again.
    """
    check_seed(seed)
    env, eval_env = training_envs(config, seed)
    run_dir: Path | None = None
    try:
        model = make_model(config, env, seed)
        run_dir = start_run_folder(config, seed, log_folder, command, verbose)
        model.set_logger(
            configure(str(run_dir), ["stdout", "csv", "tensorboard"] if verbose else ["csv", "tensorboard"])
        )
        evaluation = periodic_evaluation(config, eval_env, run_dir, eval_freq, eval_episodes, verbose, after_eval)
        seconds, cpu_seconds = timed_learn(model, env, run_dir, config, evaluation, progress_bar)
        model_path, *_ = save_final(model, env, run_dir, config.env_id)
        sync_envs_normalization(env, eval_env)  # the final evaluation reads the final statistics
        rewards, _ = evaluate_episodes(model, eval_env, final_eval_episodes)
    except BaseException:
        if run_dir is not None and not any(run_dir.glob("*.zip")):
            shutil.rmtree(run_dir, ignore_errors=True)  # nothing worth keeping: no stub run folder
        raise
    finally:
        env.close()
        eval_env.close()
    mean, std = float(np.mean(rewards)), float(np.std(rewards))
    if verbose:
        print(
            f"{config.env_id}: mean_reward = {mean:.2f} +/- {std:.2f} over {final_eval_episodes} deterministic "
            f"episodes after {model.num_timesteps} steps ({seconds:.1f} s of training, evaluations excluded)"
        )
        print(f"saved {model_path}")
    return TrainResult(run_dir, model_path, mean, std, model.num_timesteps, seconds, cpu_seconds)


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
    check_seed(args.seed, "--seed")
    for name in ("eval_freq", "eval_episodes"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ZooError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    check_budget_flag(args.n_timesteps)
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
