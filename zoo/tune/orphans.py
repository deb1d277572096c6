"""The trials of a worker that died: found, failed and handed on to another worker.

On a database (``--storage URL``), Optuna's heartbeat does it: each running trial records a heartbeat every
``heartbeat_interval`` seconds; a trial whose heartbeat is older than ``grace_period`` is failed by the next worker
of the study that looks, and re-queued once more (:class:`optuna.storages.RetryHeartbeatStaleTrialCallback`) with
the same parameters.

A journal has no heartbeat of Optuna's. There, each trial records its worker (``host:pid``, the :data:`WORKER_ATTR`
user attribute), the process's start time and boot, and the machine (boot and PID namespace) its PID means something
on; and its worker refreshes a heartbeat (:func:`heartbeat`, the :data:`HEARTBEAT_ATTR` system attribute) every
``heartbeat_interval`` seconds (:data:`JOURNAL_HEARTBEAT_SECONDS` by default). A RUNNING trial is failed and
re-queued the same way as on a database when its worker's process no longer exists on this machine (seen at once),
or, on any host or container, when its last heartbeat, or its start if it has none, is older than ``grace_period``
(:data:`JOURNAL_GRACE_SECONDS`).
"""

from __future__ import annotations

import contextlib
import copy
import os
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import optuna
from optuna.storages import BaseStorage, RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.trial import FrozenTrial, TrialState

from zoo.checks import is_real

WORKER_ATTR = "worker"
# The worker process's identity beside its PID (process_identity), so a PID that a new process reuses does not pass
# for the dead worker.
WORKER_PROCESS_ATTR = "worker_process"
# The machine a worker's PID means something on: its boot and PID namespace. Two containers may share a host name
# (host networking) but not their PIDs: a trial of another machine is judged by its heartbeat only.
WORKER_MACHINE_ATTR = "worker_machine"
HEARTBEAT_ATTR = "heartbeat"  # a journal trial's system attribute: time.time() of its worker's last sign of life
# A journal worker's heartbeat: a record every 15 s costs nothing beside a trial's minutes. A trial is handed on
# after 3 missed beats (45 s), so that a worker slowed by a busy disk or a loaded machine is not taken for dead,
# while a dead one's trial runs again within a minute. Hosts sharing a journal need clocks that agree to well
# within that (NTP keeps them within milliseconds); a trial that has just started is never judged stale.
JOURNAL_HEARTBEAT_SECONDS = 15
JOURNAL_GRACE_SECONDS = 3 * JOURNAL_HEARTBEAT_SECONDS
FAIL_REASON_ATTR = "fail_reason"
MAX_RETRY = 2  # a trial whose worker keeps dying (out of memory, say) is retried twice, then left failed


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def process_identity(pid: int) -> str | None:
    """What tells a process from a later one that got its PID: the boot it runs in and its start time (clock ticks
    since boot, /proc/PID/stat field 22); None where /proc cannot say."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        start = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
    return f"{boot}:{start}"


def machine_identity() -> str | None:
    """This process's machine as far as its PIDs go: the boot and the PID namespace; None where /proc cannot say."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return None


def trial_id(trial: optuna.Trial) -> int:
    """The id by which ``trial``'s storage knows it, asked of the storage's public API (Optuna keeps the trial's own
    copy private)."""
    study_id = trial.storage.get_study_id_from_name(trial.study.study_name)
    return trial.storage.get_trial_id_from_study_id_trial_number(study_id, trial.number)


@contextlib.contextmanager
def heartbeat(storage: BaseStorage, trial_id: int, interval: float = JOURNAL_HEARTBEAT_SECONDS) -> Iterator[None]:
    """Refresh the trial's :data:`HEARTBEAT_ATTR` now and every ``interval`` seconds, in a daemon thread, until
    the block ends. Nothing on an RDB storage (Optuna's own heartbeat runs there). A beat that fails (the trial was
    handed on, the storage is gone) stops the beats: the trial's own writes say what happened."""
    if isinstance(storage, RDBStorage):
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        while True:
            try:
                storage.set_trial_system_attr(trial_id, HEARTBEAT_ATTR, time.time())
            except Exception:
                return
            if stop.wait(interval):
                return

    thread = threading.Thread(target=beat, name="zoo-tune-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(interval)


def process_exists(pid: int) -> bool:
    """Whether ``pid`` is a live process on this host (a zombie, dead but not yet reaped, counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def worker_alive(pid: int, attrs: dict[str, object]) -> bool:
    """Whether the worker that recorded ``attrs`` still runs its trial. Called between trials, so this very
    process runs none: a trial recorded by it was left behind (by an earlier call in the same process)."""
    identity = attrs.get(WORKER_PROCESS_ATTR)
    if pid == os.getpid():
        return identity is not None and identity != process_identity(pid)
    if not process_exists(pid):
        return False
    return identity is None or identity == process_identity(pid)


def hand_on_orphans(
    study: optuna.Study, storage: BaseStorage, grace_period: float = JOURNAL_GRACE_SECONDS
) -> list[int]:
    """Fail the RUNNING trials whose worker died, and re-queue them; the numbers of those failed.

    With a heartbeat (RDB storages), Optuna's own check does it. On a journal, a trial is handed on when its worker
    ran on this machine (host name, boot and PID namespace) and its process no longer exists, or its PID now
    belongs to another process (another start time); or, wherever it ran, when its last heartbeat, or its start if
    it has none, is older than ``grace_period`` seconds (see :func:`orphan_reason`).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if isinstance(storage, RDBStorage):
            before = {t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))}
            optuna.storages.fail_stale_trials(study)
            now_failed = study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
            return sorted(t.number for t in now_failed if t.number in before)
        host, machine = socket.gethostname(), machine_identity()
        failed = []
        retry = RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRY)
        study_id = storage.get_study_id_from_name(study.study_name)
        for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            reason = orphan_reason(trial, host, machine, grace_period)
            if reason is None:
                continue
            trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, trial.number)
            try:
                storage.set_trial_user_attr(trial_id, FAIL_REASON_ATTR, reason)
                if not storage.set_trial_state_values(trial_id, TrialState.FAIL):
                    continue
            except optuna.exceptions.UpdateFinishedTrialError:
                continue  # another worker got there first
            failed.append(trial.number)
            retry(study, without_worker(storage.get_trial(trial_id)))
        return failed


def orphan_reason(trial: FrozenTrial, host: str, machine: str | None, grace_period: float) -> str | None:
    """Why the RUNNING journal ``trial`` has lost its worker, or None while it may still have one.

    A worker of this machine is judged by its process: dead, or its PID taken by another process, at once; alive
    and recorded with its start time, never. Any other trial is judged by its heartbeat, or by its start while it
    has none: a worker that died before its first beat (after ``study.ask()``, before or while recording itself)
    left no process identity to check, and a PID that a new process reuses would keep its trial forever.
    """
    worker = str(trial.user_attrs.get(WORKER_ATTR, ""))
    worker_host, _, pid = worker.rpartition(":")
    recorded_machine = trial.user_attrs.get(WORKER_MACHINE_ATTR)
    here = worker_host == host and (recorded_machine is None or recorded_machine == machine)
    if here and pid.isdigit():
        if not worker_alive(int(pid), trial.user_attrs):
            return f"its worker (pid {pid}) died"
        if trial.user_attrs.get(WORKER_PROCESS_ATTR) is not None:
            return None
    if trial.datetime_start is None:
        return None  # a RUNNING trial has its start; nothing to judge by otherwise
    started = trial.datetime_start.timestamp()
    beat = trial.system_attrs.get(HEARTBEAT_ATTR)
    # A retry carries no beat, but a copied one would be its start's: the later of the two counts.
    silent = time.time() - (max(beat, started) if is_real(beat) else started)
    if silent <= grace_period:
        return None
    since = f"for {silent:.0f} s" if is_real(beat) else f"in the {silent:.0f} s since the trial started"
    return f"its worker {worker or '(unknown)'} sent no heartbeat {since} (the limit is {grace_period:g} s)"


def without_worker(trial: FrozenTrial) -> FrozenTrial:
    """``trial`` without its worker's identity and heartbeat: what its retry inherits is the dead worker's, and
    would pass the retry off as the dead worker's trial until its own worker records itself."""
    worker_attrs = (WORKER_ATTR, WORKER_PROCESS_ATTR, WORKER_MACHINE_ATTR)
    trial = copy.deepcopy(trial)  # the journal's own record of it, otherwise
    trial.user_attrs = {key: value for key, value in trial.user_attrs.items() if key not in worker_attrs}
    trial.system_attrs = {key: value for key, value in trial.system_attrs.items() if key != HEARTBEAT_ATTR}
    return trial
