"""A training run's periodic evaluation, timed: :class:`TimedEvalCallback` adds up what its evaluations take and
:class:`TrainingClock` takes it off the run's time, so that the training time a run reports excludes them.

:mod:`zoo.train` trains with them; the checkpoints (:mod:`zoo.checkpoints`) keep and restore their state.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import EvalCallback
from stable_baselines3.common.vec_env import VecEnv

from zoo.checkpoints import Checkpoint, EvaluationState, generator_states, set_generator_states
from zoo.folders import write_atomically
from zoo.runs import BEST_MODEL_FILE


class TimedEvalCallback(EvalCallback):
    """EvalCallback that also adds up the wall-clock and the CPU time its evaluations take, so training time can
    exclude them, and writes each new best model atomically (SB3's own writes in place: a failed save would
    truncate the last one)."""

    eval_seconds = 0.0
    eval_cpu_seconds = 0.0
    evaluated_at_update: int | None = None

    def __init__(
        self, eval_env: VecEnv, *, best_model_save_path: str | None = None, report: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(eval_env, best_model_save_path=None, **kwargs)
        self.best_model_file = Path(best_model_save_path) / BEST_MODEL_FILE if best_model_save_path else None
        self.report = report

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
            evaluations = len(self.evaluations_timesteps)
            continue_training = super()._on_step()
            if self.best_model_file is not None and self.best_mean_reward > best:
                write_atomically(self.best_model_file, self.model.save, "best model")
            if self.report and len(self.evaluations_timesteps) > evaluations:
                rewards = self.evaluations_results[-1]
                print(
                    f"step {self.num_timesteps:,}: mean reward {np.mean(rewards):.2f} +/- {np.std(rewards):.2f} "
                    f"over {len(rewards)} episodes" + (" (best so far)" if self.best_mean_reward > best else "")
                )
            return continue_training
        finally:
            self.eval_seconds += time.perf_counter() - start
            self.eval_cpu_seconds += time.process_time() - cpu_start

    def checkpoint_state(self) -> EvaluationState:
        """What a checkpoint keeps of the evaluations so far (:mod:`zoo.checkpoints`)."""
        return EvaluationState(
            timesteps=[int(step) for step in self.evaluations_timesteps],
            results=[[float(value) for value in row] for row in self.evaluations_results],
            ep_lengths=[[int(value) for value in row] for row in self.evaluations_length],
            successes=[[bool(value) for value in row] for row in self.evaluations_successes],
            best_mean_reward=float(self.best_mean_reward),
            last_mean_reward=float(self.last_mean_reward),
            evaluated_at_update=self.evaluated_at_update,
            # Before the first evaluation the envs have not been reset: they still hold the seed they were made with.
            generators=generator_states(self.eval_env) if self.evaluations_timesteps else None,
        )

    def resume(self, checkpoint: Checkpoint, n_envs: int) -> None:
        """Go on from a checkpoint: its learning curve, best score and evaluation-env generators, and the count of
        vector steps that times the evaluations."""
        state = checkpoint.evaluation
        self.evaluations_timesteps = list(state.timesteps)
        self.evaluations_results = [list(row) for row in state.results]
        self.evaluations_length = [list(row) for row in state.ep_lengths]
        self.evaluations_successes = [list(row) for row in state.successes]
        self.best_mean_reward = state.best_mean_reward
        self.last_mean_reward = state.last_mean_reward
        self.evaluated_at_update = state.evaluated_at_update
        self.n_calls = checkpoint.num_timesteps // n_envs
        if state.generators is not None:
            set_generator_states(self.eval_env, state.generators)

    def put_back_files(self, checkpoint: Checkpoint) -> None:
        """best_model.zip and evaluations.npz as they were at the checkpoint: the run that was cut may have
        evaluated, and saved a best model, past it."""
        state = checkpoint.evaluation
        best = checkpoint.best_model
        if self.best_model_file is not None and best is not None:
            write_atomically(self.best_model_file, lambda path: shutil.copyfile(best, path), "best model")
        elif self.best_model_file is not None:
            self.best_model_file.unlink(missing_ok=True)
        if self.log_path is not None:
            curve = Path(f"{self.log_path}.npz")  # where SB3's EvalCallback saves it
            if state.timesteps:
                write_atomically(curve, lambda path: np.savez(path, **self.curve()), "learning curve")
            else:
                curve.unlink(missing_ok=True)

    def learning_curve(self) -> tuple[list[int], list[float]]:
        """The steps of every evaluation so far (those before a checkpoint the run resumed from included), and the
        mean return of each: what evaluations.npz holds, without reading it back."""
        means = [float(np.mean(returns)) for returns in self.evaluations_results]
        return [int(step) for step in self.evaluations_timesteps], means

    def curve(self) -> dict[str, Any]:
        """The arrays of evaluations.npz, as SB3's EvalCallback writes them."""
        arrays: dict[str, Any] = {
            "timesteps": self.evaluations_timesteps,
            "results": self.evaluations_results,
            "ep_lengths": self.evaluations_length,
        }
        if self.evaluations_successes:
            arrays["successes"] = self.evaluations_successes
        return arrays


@dataclass
class TrainingClock:
    """The training time of the steps that count, evaluations excluded: what the checkpoint a run resumed from
    carried, plus this process's since :meth:`start` (the steps a cut run trained past its checkpoint are not
    counted: the resumed run trains them again)."""

    evaluation: TimedEvalCallback
    carried_seconds: float = 0.0
    carried_cpu_seconds: float = 0.0
    started: tuple[float, float] = (0.0, 0.0)

    def start(self) -> None:
        self.started = (time.perf_counter(), time.process_time())

    def elapsed(self) -> tuple[float, float]:
        """Wall-clock and CPU seconds."""
        wall, cpu = self.started
        return (
            self.carried_seconds + time.perf_counter() - wall - self.evaluation.eval_seconds,
            self.carried_cpu_seconds + time.process_time() - cpu - self.evaluation.eval_cpu_seconds,
        )
