"""Worker processes: each runs trials of the study until it has its trials done, and the progress they make.

A worker is a loop around Optuna's ``study.optimize(n_trials=1)`` (which keeps the heartbeat of an RDB storage
and fails stale trials before asking for a new one). Before each trial it counts the study's trials:

- the study has ``target`` trials done (complete or pruned): stop;
- the trials done and running already make ``target`` and none is waiting: wait, looking for orphans (trials
  whose worker died, :func:`zoo.tune.orphans.hand_on_orphans`), which are failed and re-queued, so a study is
  never left short by a dead worker;
- otherwise run one trial (a waiting one first: enqueued or re-queued).

``--jobs J`` starts J such processes (spawned: each has its own interpreter, torch thread and storage
connection). Ctrl-C reaches every process: the trials under way are recorded FAIL ("interrupted"), the finished
ones stay in the storage, and rerunning the command resumes the study.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from multiprocessing.queues import SimpleQueue

import optuna
import yaml
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial, TrialState
from tqdm import tqdm

from zoo.errors import ZooError
from zoo.tune import interrupt
from zoo.tune.objective import OVERRIDES_ATTR, PRUNED_AT_ATTR, SCORES_ATTR, Setup, run_trial
from zoo.tune.orphans import FAIL_REASON_ATTR, hand_on_orphans
from zoo.tune.storage import StorageSpec

POLL_SECONDS = 2.0
RETRIED_ATTR = "failed_trial"  # the system attribute of Optuna's retry callback: the trial a retry runs again
FORWARD_SECONDS = 2.0  # after Ctrl-C, how long the workers have to stop by themselves before it is passed on
JOIN_SECONDS = 30.0  # then how long a worker may take to record its interrupted trial


@dataclass(frozen=True)
class Plan:
    """How workers run the study: plain data, passed to each spawned process."""

    setup: Setup
    storage: StorageSpec
    study_name: str
    target: int  # trials done (complete or pruned) the study should have
    deadline: float | None  # time.time() after which no trial starts
    max_failures: int  # failed trials this command tolerates before it stops
    sampler: str = "tpe"
    pruner: str = "median"


def make_sampler(name: str) -> optuna.samplers.BaseSampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if name == "random":
            return optuna.samplers.RandomSampler()
        # Multivariate TPE (Optuna's default for one objective) with groups: the parameters are modelled jointly,
        # within each set that a `when:` switches on together.
        return optuna.samplers.TPESampler(n_startup_trials=10, group=True)


def make_pruner(name: str, n_timesteps: int) -> optuna.pruners.BasePruner:
    if name == "none":
        return optuna.pruners.NopPruner()
    # Median of the trials at the same step, after 5 trials, never in the first third of the first seed.
    return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=n_timesteps // 3)


def load(plan: Plan, storage: BaseStorage) -> optuna.Study:
    return optuna.load_study(
        study_name=plan.study_name,
        storage=storage,
        sampler=make_sampler(plan.sampler),
        pruner=make_pruner(plan.pruner, int(plan.setup.base["n_timesteps"])),
    )


@dataclass
class Counts:
    done: int = 0
    running: int = 0
    waiting: int = 0
    failed: int = 0

    @classmethod
    def of(cls, trials: list[FrozenTrial]) -> Counts:
        states = [trial.state for trial in trials]
        return cls(
            done=sum(state in (TrialState.COMPLETE, TrialState.PRUNED) for state in states),
            running=states.count(TrialState.RUNNING),
            waiting=states.count(TrialState.WAITING),
            failed=states.count(TrialState.FAIL),
        )


def work(plan: Plan, storage: BaseStorage, on_poll: Callable[[optuna.Study], None] | None = None) -> None:
    """Run trials until the study has its trials, the deadline passes or too many fail (see the module doc)."""
    identity = plan.storage.file_identity()
    with plan.storage.lost_as_error():
        study = load(plan, storage)
        failed_at_start = Counts.of(study.get_trials(deepcopy=False)).failed
    # Trials this worker failed for a dead worker are that worker's failures, retried here: not ours.
    handed_on = 0
    objective = partial(
        run_trial, setup=plan.setup, target=plan.target, heartbeat_interval=plan.storage.heartbeat_interval
    )
    with interrupt.deferred(), plan.storage.lost_as_error(identity):
        while True:
            interrupt.check()
            plan.storage.check_unchanged(identity)
            handed_on += len(hand_on_orphans(study, storage, plan.storage.grace_period))
            counts = Counts.of(study.get_trials(deepcopy=False))
            if on_poll is not None:
                on_poll(study)
            late = plan.deadline is not None and time.time() >= plan.deadline
            own_failures = counts.failed - failed_at_start - handed_on
            if counts.done >= plan.target or late or own_failures >= plan.max_failures:
                return
            if counts.waiting == 0 and counts.done + counts.running >= plan.target:
                time.sleep(POLL_SECONDS)  # the last trials are under way elsewhere: wait for them, or for orphans
                continue
            study.optimize(objective, n_trials=1, catch=(Exception,), gc_after_trial=True)


def worker_main(plan: Plan, errors: SimpleQueue[str]) -> None:
    """A spawned worker process; its one-line error, if it stops on one, goes to ``errors`` for the parent to say."""
    import torch as th

    th.set_num_threads(1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        work(plan, plan.storage.open())
    except KeyboardInterrupt:
        sys.exit(130)
    except ZooError as error:
        errors.put(str(error))
        sys.exit(2)


def run_processes(plan: Plan, jobs: int, progress: Progress, study: optuna.Study) -> list[int]:
    """Start ``jobs`` worker processes and follow the study until they stop; their exit codes. A ZooError that
    stopped a worker (the storage lost, the journal unwritable) is raised here, once, however many it stopped."""
    context = multiprocessing.get_context("spawn")
    errors: SimpleQueue[str] = context.SimpleQueue()
    processes = [context.Process(target=worker_main, args=(plan, errors), name=f"zoo-tune-{k}") for k in range(jobs)]
    for process in processes:
        process.start()
    identity = plan.storage.file_identity()
    try:
        while any(process.is_alive() for process in processes):
            plan.storage.check_unchanged(identity)
            progress.poll(study)
            time.sleep(POLL_SECONDS / 2)
    except KeyboardInterrupt:
        # A terminal's Ctrl-C reached the workers too; a signal sent to this process alone is passed on.
        deadline = time.monotonic() + FORWARD_SECONDS
        while any(process.is_alive() for process in processes) and time.monotonic() < deadline:
            time.sleep(0.1)
        for process in processes:
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signal.SIGINT)
        for process in processes:
            process.join(JOIN_SECONDS)
            if process.is_alive():
                process.terminate()
                process.join()
        progress.poll(study)
        raise
    except Exception:
        # The storage went away (or this process failed): the workers can record nothing more.
        for process in processes:
            process.terminate()
        for process in processes:
            process.join()
        raise
    if not errors.empty():
        raise ZooError(errors.get())
    progress.poll(study)
    return [process.exitcode if process.exitcode is not None else -1 for process in processes]


@dataclass
class Progress:
    """A bar of trials done (complete or pruned) with the best value so far, and one line per finished trial."""

    target: int
    seen: set[int] = field(default_factory=set)
    bar: tqdm | None = None

    def poll(self, study: optuna.Study) -> None:
        trials = study.get_trials(deepcopy=False)
        counts = Counts.of(trials)
        if self.bar is None:
            self.seen = {trial.number for trial in trials if trial.state.is_finished()}
            self.bar = tqdm(total=self.target, initial=min(counts.done, self.target), unit="trial", disable=None)
        for trial in trials:
            if trial.state.is_finished() and trial.number not in self.seen:
                self.seen.add(trial.number)
                self.bar.write(describe(trial, trials))
        self.bar.n = min(counts.done, self.target)
        complete = [trial.value for trial in trials if trial.state == TrialState.COMPLETE and trial.value is not None]
        best = f"{max(complete):.1f}" if complete else "-"
        self.bar.set_postfix_str(f"best {best}, running {counts.running}, failed {counts.failed}", refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def describe(trial: FrozenTrial, trials: list[FrozenTrial] | None = None) -> str:
    """One line for a finished trial; ``trials`` (the study's) tells which trial retried a failed one."""
    if trial.state == TrialState.COMPLETE:
        seeds = ", ".join(f"{score:.1f}" for score in trial.user_attrs.get(SCORES_ATTR, []))
        return f"trial {trial.number}: {trial.value:.1f} (per seed: {seeds})  {format_params(trial)}"
    if trial.state == TrialState.PRUNED:
        at = trial.user_attrs.get(PRUNED_AT_ATTR)
        last = trial.intermediate_values.get(at) if at is not None else None
        where = f" at step {at:,} ({last:.1f})" if at is not None and last is not None else ""
        return f"trial {trial.number}: pruned{where}  {format_params(trial)}"
    reason = trial.user_attrs.get(FAIL_REASON_ATTR, "its worker stopped (no heartbeat) or lost the storage")
    retries = [t.number for t in trials or [] if t.system_attrs.get(RETRIED_ATTR) == trial.number]
    return f"trial {trial.number}: FAILED: {reason}" + (f"; run again as trial {retries[-1]}" if retries else "")


def format_params(trial: FrozenTrial) -> str:
    """``name=value`` for the overrides an enqueued trial was given (``--enqueue``), then its sampled parameters."""
    shown = {**(trial.user_attrs.get(OVERRIDES_ATTR) or {}), **trial.params}
    return " ".join(f"{name}={format_value(value)}" for name, value in shown.items())


def format_value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return one_line_yaml(value) if isinstance(value, (dict, list)) else str(value)


def one_line_yaml(value: object) -> str:
    """``value`` as YAML flow style on one line, keys in their order."""
    return yaml.safe_dump(value, sort_keys=False, default_flow_style=True, width=10**6).strip()
