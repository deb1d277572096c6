"""``python -m zoo train``: train an agent with the zoo's tuned hyperparameters and save everything to redo it."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
import yaml
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback, ProgressBarCallback
from stable_baselines3.common.logger import Logger, configure
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from zoo.bounds import check_seed
from zoo.checkpoints import (
    CHECKPOINT_DIR,
    MANIFEST,
    PROGRESS_CSV,
    Checkpoint,
    FolderInUse,
    continue_csv,
    default_interval,
    exclusive,
    find_resumable,
    logged_rows,
    read_checkpoint,
    read_checkpoint_of,
    remove_checkpoint,
    restore,
    save_checkpoint,
)
from zoo.config import RunConfig, entry_of, schedule_warning
from zoo.episodes import episodes, play
from zoo.errors import ZooError, first_line
from zoo.factories import check_env_id, make_model, training_envs
from zoo.folders import write_atomically
from zoo.interrupts import terminated_as_interrupted
from zoo.normalization import VecNormalizeStats
from zoo.parsers import DEFAULT_EVAL_EPISODES, DEFAULT_EVAL_SEED, check_budget_flag, parse_overrides, train_parser
from zoo.runs import (
    COMMAND_FILE,
    CONFIG_YML,
    VEC_NORMALIZE_JSON,
    claim_run_dir,
    model_file,
    save_stats,
)
from zoo.timed_eval import TimedEvalCallback, TrainingClock

# Evaluation episodes run side by side in this many envs: one policy call per vector step instead of one per
# env step, which took three quarters of a CartPole-v1 run's wall-clock when the episodes ran one at a time.
EVAL_ENVS = 10
# Periodic evaluations over a run of `zoo train` (the benchmark's learning curves take their own 20).
DEFAULT_EVALUATIONS = 10


class PeriodicCheckpoint(BaseCallback):
    """Writes the run's checkpoint (:mod:`zoo.checkpoints`) at the first update boundary at or past each multiple
    of ``every`` steps: the start of a collection, when the last update is done and the next has taken no step."""

    def __init__(
        self,
        run_dir: Path,
        config: dict[str, Any],
        every: int,
        evaluation: TimedEvalCallback,
        clock: TrainingClock,
        resumed_at: list[int],
    ) -> None:
        super().__init__()
        self.run_dir, self.config, self.every = run_dir, config, every
        self.evaluation, self.clock, self.resumed_at = evaluation, clock, resumed_at
        self.due = every

    def _init_callback(self) -> None:
        self.due = (self.model.num_timesteps // self.every + 1) * self.every

    def _on_rollout_start(self) -> None:
        steps = self.model.num_timesteps
        if steps < self.due:
            return
        seconds, cpu_seconds = self.clock.elapsed()
        save_checkpoint(
            self.run_dir,
            self.model,
            config=self.config,
            train_seconds=seconds,
            train_cpu_seconds=cpu_seconds,
            resumed_at=self.resumed_at,
            evaluation=self.evaluation.checkpoint_state(),
            best_model=self.evaluation.best_model_file,
        )
        self.due = (steps // self.every + 1) * self.every

    def _on_step(self) -> bool:
        return True


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
    # The steps at which the run was resumed from a checkpoint, if it was.
    resumed_at: list[int] = field(default_factory=list)
    # The periodic evaluations: the steps of each, and its mean return.
    curve_timesteps: list[int] = field(default_factory=list)
    curve_mean_reward: list[float] = field(default_factory=list)


def save_final(model: BaseAlgorithm, env: VecEnv, run_dir: Path, env_id: str) -> list[Path]:
    """The final model, and the VecNormalize statistics when the run normalizes, each written atomically."""
    saved = [write_atomically(run_dir / model_file(env_id), model.save, "final model")]
    if isinstance(env, VecNormalize):
        saved.append(write_atomically(run_dir / VEC_NORMALIZE_JSON, lambda path: save_stats(env, path), "statistics"))
    return saved


def start_run_folder(config: RunConfig, log_folder: Path | str, command: str | None, verbose: int) -> Path:
    """Claim ``<log_folder>/<algo>/<env>_<k>/`` and write what redoes the run (``config`` with its seed):
    config.yml and command.txt."""
    run_dir = claim_run_dir(Path(log_folder), config.algo, config.env_id)
    try:
        (run_dir / CONFIG_YML).write_text(yaml.safe_dump(config.to_data(), sort_keys=False))
        (run_dir / COMMAND_FILE).write_text((command or "") + "\n")
    except OSError as error:
        raise ZooError(f"cannot write in the run folder {run_dir}: {first_line(error)}") from None
    if verbose:
        print(f"Training {config.algo} on {config.env_id} (seed {config.seed}) into {run_dir}")
        print(yaml.safe_dump(config.to_data(), sort_keys=False))
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
    """Deterministic evaluations every ``eval_freq`` steps (default: 10 over the budget), keeping the best model."""
    frequency = eval_freq or max(config.n_timesteps // DEFAULT_EVALUATIONS, 1)
    return TimedEvalCallback(
        eval_env,
        eval_freq=max(frequency // config.n_envs, 1),
        n_eval_episodes=eval_episodes,
        best_model_save_path=str(run_dir),
        log_path=str(run_dir),
        deterministic=True,
        verbose=0,  # SB3 prints three lines an evaluation; the callback prints one (verbose >= 1)
        callback_after_eval=after_eval,
        report=verbose >= 1,
    )


def run_logger(run_dir: Path, verbose: int, checkpoint: Checkpoint | None) -> Logger:
    """SB3's logger into the run folder: progress.csv, TensorBoard events, and stdout when verbose. A resumed run's
    progress.csv keeps the rows logged up to its checkpoint, which SB3's CSV writer would truncate; TensorBoard
    keeps the events of the steps the cut run trained past it, in the file it wrote them to."""
    header, rows = logged_rows(run_dir / PROGRESS_CSV, checkpoint.num_timesteps) if checkpoint else ([], [])
    # SB3's log tables on stdout come with --verbose 2: a table an update buries the evaluations.
    logger = configure(str(run_dir), ["stdout", "csv", "tensorboard"] if verbose >= 2 else ["csv", "tensorboard"])
    continue_csv(logger, header, rows)
    return logger


def resume_from(
    checkpoint: Checkpoint, model: BaseAlgorithm, evaluation: TimedEvalCallback, clock: TrainingClock, n_envs: int
) -> list[int]:
    """Put a checkpoint's state into the run's model, evaluation and clock, then its evaluation files back into the
    run folder; the steps the run was resumed at. A checkpoint that does not fit the model changes no file."""
    clock.carried_seconds, clock.carried_cpu_seconds = checkpoint.train_seconds, checkpoint.train_cpu_seconds
    evaluation.resume(checkpoint, n_envs)
    restore(checkpoint, model)  # the last state: it sets the generators that training draws from next
    evaluation.put_back_files(checkpoint)
    return [*checkpoint.resumed_at, checkpoint.num_timesteps]


def checkpoint_step(run_dir: Path) -> str:
    """ " (step N)" of the run's checkpoint, or nothing when it cannot be read."""
    try:
        return f" (step {read_checkpoint(run_dir).num_timesteps:,})"
    except ZooError:
        return ""


def timed_learn(
    model: BaseAlgorithm,
    env: VecEnv,
    run_dir: Path,
    config: RunConfig,
    callbacks: list[BaseCallback],
    clock: TrainingClock,
    progress_bar: bool,
    resumed: bool,
) -> tuple[float, float]:
    """``model.learn`` to the budget; the training time of the steps that count (:class:`TrainingClock`).

    A resumed run counts on from its checkpoint's step to the same total, so its schedules' progress is the
    uninterrupted run's. Ctrl-C saves the final model and statistics as they are, says where (and where the last
    checkpoint is), and raises KeyboardInterrupt again; the algorithm's own guards (a diverged loss, an endless
    episode) and a failed write become one-line ZooErrors.
    """
    # The bar is the run's own, rather than learn(progress_bar=True)'s, so that an interrupt can close it: left
    # open, rich's bar went on redrawing itself below the "interrupted" message.
    bar = ProgressBarCallback() if progress_bar else None
    clock.start()
    try:
        model.learn(
            config.n_timesteps - model.num_timesteps,
            callback=[*callbacks, *([bar] if bar is not None else [])],
            reset_num_timesteps=not resumed,
        )
    except KeyboardInterrupt:
        if bar is not None and hasattr(bar, "pbar"):
            bar.pbar.close()
        saved = save_final(model, env, run_dir, config.env_id)
        kept = run_dir / CHECKPOINT_DIR
        last = f"; its last checkpoint is in {kept}{checkpoint_step(run_dir)}" if (kept / MANIFEST).is_file() else ""
        print(
            f"\ninterrupted after {model.num_timesteps} steps; saved {', '.join(map(str, saved))}{last}",
            file=sys.stderr,
        )
        raise
    except (FloatingPointError, RuntimeError) as error:
        raise ZooError(f"training stopped after {model.num_timesteps} steps: {first_line(error)}") from None
    except OSError as error:  # the logger or the evaluation could not write
        raise ZooError(f"training stopped: cannot write in {run_dir}: {first_line(error)}") from None
    return clock.elapsed()


def train(
    config: RunConfig,
    seed: int | None = None,
    log_folder: Path | str = "logs",
    eval_freq: int | None = None,
    eval_episodes: int = 10,
    final_eval_episodes: int = DEFAULT_EVAL_EPISODES,
    progress_bar: bool = True,
    verbose: int = 1,
    command: str | None = None,
    after_eval: BaseCallback | None = None,
    checkpoint_freq: int | None = None,
    resume: Path | None = None,
    notes: tuple[str, ...] = (),
) -> TrainResult:
    """Train ``config`` and write a run folder: the final and best model, config.yml, command.txt,
    VecNormalize statistics when used, evaluations.npz, progress.csv and TensorBoard events.

    ``after_eval`` runs after each periodic evaluation (SB3's ``callback_after_eval``: it reads
    ``self.parent.last_mean_reward``); returning False stops training early, as ``zoo tune``'s pruner does.

    ``checkpoint_freq``: steps between checkpoints (:mod:`zoo.checkpoints`), each written at the first update
    boundary at or past a multiple of it into ``<run folder>/checkpoint/``, and removed once the run has finished;
    None writes none. ``resume``: a run folder whose checkpoint to go on from, to the same budget; the checkpoint
    must be of ``config`` and ``seed`` (its config and every file are checked: anything else is one ZooError).
    ``seed``: None takes the one ``config`` carries, or 0. One process at a time trains in a run folder.

    The envs and the model are built before the run folder is claimed, and a new run that fails before it saved a
    model or a checkpoint removes its folder, so a failure leaves no stub behind. Models, statistics and
    checkpoints are written atomically. Ctrl-C saves the final model and statistics as they are, says where, and
    raises KeyboardInterrupt again.
    """
    run_seed = seed if seed is not None else config.seed or 0
    config = config.with_seed(run_seed)
    check_run_arguments(checkpoint_freq, resume)
    env, eval_env = training_envs(config, run_seed, eval_n_envs=EVAL_ENVS)
    run_dir: Path | None = None
    try:
        with contextlib.ExitStack() as held:
            model = make_model(config, env, run_seed)
            run_dir = resume if resume is not None else start_run_folder(config, log_folder, command, verbose)
            held.enter_context(exclusive(run_dir))
            checkpoint = None if resume is None else read_checkpoint_of(resume, config.to_data())
            evaluation = periodic_evaluation(config, eval_env, run_dir, eval_freq, eval_episodes, verbose, after_eval)
            clock = TrainingClock(evaluation)
            resumed_at: list[int] = []
            if checkpoint is not None:
                resumed_at = resume_from(checkpoint, model, evaluation, clock, config.n_envs)
                if verbose:
                    print(f"Resuming {run_dir} at step {checkpoint.num_timesteps:,} of {config.n_timesteps:,}")
            model.set_logger(run_logger(run_dir, verbose, checkpoint))
            callbacks: list[BaseCallback] = [evaluation]
            if checkpoint_freq is not None:
                callbacks.insert(
                    0, PeriodicCheckpoint(run_dir, config.to_data(), checkpoint_freq, evaluation, clock, resumed_at)
                )
            for note in notes:  # said once the run is under way: a run refused before it says only why
                print(note, file=sys.stderr)
            seconds, cpu_seconds = timed_learn(
                model, env, run_dir, config, callbacks, clock, progress_bar, resumed=checkpoint is not None
            )
            model_path, *_ = save_final(model, env, run_dir, config.env_id)
            mean, std = final_score(model, env, config, final_eval_episodes)
            remove_checkpoint(run_dir)  # finished: there is nothing left to resume
    except BaseException:
        if run_dir is not None and resume is None:
            remove_stub(run_dir)
        raise
    finally:
        env.close()
        eval_env.close()
    if verbose:
        print(
            f"{config.env_id}: mean_reward = {mean:.2f} +/- {std:.2f} over {episodes(final_eval_episodes)} "
            f"(deterministic, eval seed {DEFAULT_EVAL_SEED}) after {model.num_timesteps} steps ({seconds:.1f} s of "
            "training, evaluations excluded)\n"
            f"saved {model_path}"
        )
    curve = evaluation.learning_curve()
    return TrainResult(run_dir, model_path, mean, std, model.num_timesteps, seconds, cpu_seconds, resumed_at, *curve)


def check_run_arguments(checkpoint_freq: int | None, resume: Path | None) -> None:
    """What :func:`train` checks of its arguments before it builds anything."""
    if checkpoint_freq is not None and checkpoint_freq < 1:
        raise ZooError(f"checkpoint_freq must be >= 1 (None: no checkpoints), got {checkpoint_freq}")
    if resume is not None and not resume.is_dir():
        raise ZooError(f"cannot resume {resume}: it is not a run folder")


def final_score(model: BaseAlgorithm, env: VecEnv, config: RunConfig, n_episodes: int) -> tuple[float, float]:
    """Mean and std return of the final model: `zoo evaluate`'s score of the saved model, on a fresh env from the
    default eval seed with the final statistics, so that the two commands, and a tune trial, agree on one model."""
    stats = VecNormalizeStats.from_vec_normalize(env) if isinstance(env, VecNormalize) else None
    rewards = play(model, config.env_id, config.env_kwargs, stats, n_episodes).rewards
    return float(np.mean(rewards)), float(np.std(rewards))


def remove_stub(run_dir: Path) -> None:
    """Remove a new run's folder that a failure left with neither a model nor a checkpoint: it holds nothing worth
    keeping. (A resumed run's folder is kept whatever happens.)"""
    if not (run_dir / CHECKPOINT_DIR / MANIFEST).is_file() and not any(run_dir.glob("*.zip")):
        shutil.rmtree(run_dir, ignore_errors=True)


def resume_folder(flag: str | bool | None, log_folder: Path, config: RunConfig, verbose: int) -> Path | None:
    """The run folder ``--resume`` names: the one given, or the newest interrupted run of ``config`` (its seed
    included). Without ``--resume``, an interrupted run of ``config`` is named, since a new run leaves it behind."""
    if flag is None:
        left = find_resumable(log_folder, config.algo, config.env_id, config.to_data())
        if left is not None and verbose:
            print(
                f"note: {left} is an interrupted run of this configuration{checkpoint_step(left)}: this starts a new "
                "run; add --resume to go on from it instead"
            )
        return None
    if flag is not True:
        return Path(str(flag))
    found = find_resumable(log_folder, config.algo, config.env_id, config.to_data())
    if found is None and verbose:
        print(f"--resume: no interrupted run of this configuration in {log_folder}; starting a new one")
    return found


def train_taking_a_free_run(
    args: argparse.Namespace, config: RunConfig, command: str, every: int | None, notes: tuple[str, ...]
) -> None:
    """:func:`train` as ``zoo train``'s flags say. With ``--resume`` alone, a run found free and then taken by
    another ``--resume`` started at the same time (a job script's array) is passed over for the next interrupted
    run or, failing one, a new run; a folder the user named stays theirs to wait for."""
    resume = resume_folder(args.resume, Path(args.log_folder), config, args.verbose)
    while True:
        try:
            train(
                config,
                log_folder=args.log_folder,
                eval_freq=args.eval_freq,
                eval_episodes=args.eval_episodes,
                progress_bar=not args.no_progress_bar,
                verbose=args.verbose,
                command=command,
                checkpoint_freq=every,
                resume=resume,
                notes=notes,
            )
            return
        except FolderInUse:
            if args.resume is not True or resume is None:
                raise
            resume = resume_folder(True, Path(args.log_folder), config, args.verbose)


def main(argv: list[str] | None = None) -> int:
    args = train_parser().parse_args(argv)
    check_env_id(args.env)
    check_seed(args.seed, "--seed")
    for name in ("eval_freq", "eval_episodes"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ZooError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    if args.checkpoint_freq is not None and args.checkpoint_freq < 0:
        raise ZooError(f"--checkpoint-freq must be >= 0 (0: no checkpoints), got {args.checkpoint_freq}")
    check_budget_flag(args.n_timesteps)
    config = entry_of(
        args.algo,
        args.env,
        parse_overrides(args.hyperparams),
        variant=args.variant,
        conf_file=args.conf_file,
        defaults=args.defaults,
    )
    warning = None
    if args.n_timesteps is not None:
        warning = schedule_warning(config, args.n_timesteps)
        config = config.with_overrides({"n_timesteps": args.n_timesteps}, "--n-timesteps")
    config = config.with_seed(args.seed)
    th.set_num_threads(1)
    np.set_printoptions(precision=4)
    command = shlex.join(["python", "-m", "zoo", "train", *(sys.argv[1:] if argv is None else argv)])
    every = default_interval(config.n_timesteps) if args.checkpoint_freq is None else args.checkpoint_freq or None
    # SIGTERM (kill, a scheduler's preemption) ends the run as Ctrl-C does: the final model saved, the way on said.
    with terminated_as_interrupted():
        try:
            train_taking_a_free_run(args, config, command, every, (warning,) if warning else ())
        except KeyboardInterrupt:
            if every is not None:
                print(
                    f"to go on from the last checkpoint: {command}{'' if args.resume else ' --resume'}", file=sys.stderr
                )
            raise
    return 0
