"""One trial: a configuration drawn from the search space, trained and scored as ``zoo benchmark`` scores a run.

Each seed (``first_seed`` to ``first_seed + seeds - 1``, 0 to ``seeds - 1`` by default) trains through
:func:`zoo.measure.measured_run`: a deterministic evaluation on 5 episodes every ``n_timesteps / 20`` steps, and
the final model on 20 deterministic episodes. Every periodic evaluation is reported to the trial, at step
``k * n_timesteps + timesteps`` for its k-th seed, so that the pruner compares trials on the same seed at the same
point of training; a pruned trial stops there. The trial's value is the mean over the seeds of the final scores.

A trial that raises (a non-finite loss is ``FloatingPointError``, a bad combination of hyperparameters a
``ZooError`` from the constructor's ``ValueError``) is recorded FAIL with its reason in the ``fail_reason`` user
attribute, and the study goes on.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback

from zoo.config import RunConfig
from zoo.errors import first_line
from zoo.machine import cpu_model
from zoo.measure import FINAL_EVAL_EPISODES, measured_run
from zoo.tune import interrupt
from zoo.tune.orphans import (
    FAIL_REASON_ATTR,
    WORKER_ATTR,
    WORKER_MACHINE_ATTR,
    WORKER_PROCESS_ATTR,
    heartbeat,
    machine_identity,
    process_identity,
    trial_id,
    worker_id,
)
from zoo.tune.space import POLICY_KWARGS, SearchSpace, apply, suggest

# The trial's user attributes, read by the report and the export.
OVERRIDES_ATTR = "overrides"  # an enqueued trial's overrides, in --hyperparams syntax
CONFIG_ATTR = "config"  # the configuration trained (RunConfig.to_data)
SCORES_ATTR = "scores"  # final score per seed
TRAIN_SECONDS_ATTR = "train_seconds"  # training wall-clock over all seeds, evaluations excluded
PRUNED_AT_ATTR = "pruned_at"
CPU_ATTR = "cpu"
INTERRUPTED = "interrupted (Ctrl-C)"  # the fail_reason of a trial stopped by Ctrl-C
SETUP_ATTR = "zoo"  # the study's user attribute holding its Setup, checked by every command that joins it
COUNTED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING, TrialState.WAITING)


@dataclass(frozen=True)
class Setup:
    """What defines a study, as data: every worker of the study must run the same one."""

    algo: str
    env_id: str
    base: dict[str, Any]  # RunConfig.to_data() of the env's entry with --hyperparams and --n-timesteps
    space: SearchSpace
    seeds: int
    first_seed: int = 0

    @cached_property
    def base_config(self) -> RunConfig:
        """``base`` validated, once for all the trials a worker runs."""
        return RunConfig.from_data(self.base)

    def to_data(self) -> dict[str, Any]:
        return {
            "algo": self.algo,
            "env_id": self.env_id,
            "base": self.base,
            "space": self.space.to_data(),
            "seeds": self.seeds,
            "first_seed": self.first_seed,
        }

    @property
    def seed_range(self) -> str:
        last = self.first_seed + self.seeds - 1
        return f"seed {last}" if self.seeds == 1 else f"seeds {self.first_seed}-{last}"


class Surplus(Exception):
    """The study already had its trials done or under way when this one started (two workers asked at once)."""


class PruningReporter(BaseCallback):
    """SB3 callback run after each periodic evaluation: reports it to the trial, stops training when pruned."""

    def __init__(self, trial: optuna.Trial, offset: int) -> None:
        super().__init__()
        self.trial = trial
        self.offset = offset
        self.pruned_at: int | None = None
        self.last_value = float("nan")

    def _on_step(self) -> bool:
        assert isinstance(self.parent, EvalCallback)
        step = self.offset + self.num_timesteps
        self.last_value = float(self.parent.last_mean_reward)
        with interrupt.protected():  # storage writes: a Ctrl-C here is raised after them
            self.trial.report(self.last_value, step)
            prune = self.trial.should_prune()
        if prune:
            self.pruned_at = step
        return not prune


def run_trial(trial: optuna.Trial, setup: Setup, target: int, heartbeat_interval: float) -> float:
    """The objective: train the trial's configuration on each seed and return the mean final score; on a journal,
    its heartbeat is refreshed every ``heartbeat_interval`` seconds meanwhile."""
    trial.set_user_attr(WORKER_ATTR, worker_id())
    trial.set_user_attr(WORKER_PROCESS_ATTR, process_identity(os.getpid()))
    trial.set_user_attr(WORKER_MACHINE_ATTR, machine_identity())
    with heartbeat(trial.storage, trial_id(trial), heartbeat_interval):
        return train_trial(trial, setup, target)


def train_trial(trial: optuna.Trial, setup: Setup, target: int) -> float:
    """The trial's work, its failure reason recorded."""
    try:
        check_not_surplus(trial, target)
        overrides = dict(trial.user_attrs.get(OVERRIDES_ATTR, {}))
        asked = set(overrides) | {f"{POLICY_KWARGS}{key}" for key in overrides.get("policy_kwargs", {})}
        config = apply(setup.base_config.with_overrides(overrides), suggest(trial, setup.space), keep=asked)
        trial.set_user_attr(CONFIG_ATTR, config.to_data())
        trial.set_user_attr(CPU_ATTR, cpu_model())
        scores: list[float] = []
        seconds = 0.0
        for k, seed in enumerate(range(setup.first_seed, setup.first_seed + setup.seeds)):
            reporter = PruningReporter(trial, offset=k * config.n_timesteps)
            command = f"python -m zoo tune --env {setup.env_id} --study {trial.study.study_name}"
            with tempfile.TemporaryDirectory(prefix="zoo-tune-") as scratch, interrupt.interruptible():
                _, measured = measured_run(config, seed, scratch, command, after_eval=reporter)
            seconds += measured["train_seconds"]
            trial.set_user_attr(TRAIN_SECONDS_ATTR, seconds)
            if reporter.pruned_at is not None:
                trial.set_user_attr(PRUNED_AT_ATTR, reporter.pruned_at)
                raise optuna.TrialPruned(f"at step {reporter.pruned_at:,} (seed {seed}): {reporter.last_value:.1f}")
            score = float(measured["mean_reward"])
            if not np.isfinite(score):
                raise FloatingPointError(f"seed {seed}: the final score over {FINAL_EVAL_EPISODES} episodes is {score}")
            scores.append(score)
            trial.set_user_attr(SCORES_ATTR, scores)
        return float(np.mean(scores))
    except optuna.TrialPruned:
        raise
    except KeyboardInterrupt:
        trial.set_user_attr(FAIL_REASON_ATTR, INTERRUPTED)
        raise
    except Exception as error:
        trial.set_user_attr(FAIL_REASON_ATTR, first_line(error))
        raise


def check_not_surplus(trial: optuna.Trial, target: int) -> None:
    """Trial numbers are unique and increasing, so the trials before this one decide, whoever asked first."""
    ahead = sum(1 for t in trial.study.get_trials(deepcopy=False, states=COUNTED) if t.number < trial.number)
    if ahead >= target:
        raise Surplus(f"the study had its {target} trials done or under way when trial {trial.number} started")
