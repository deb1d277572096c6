"""Where a study lives, and how the trials of a worker that died are found and handed on.

- **Embedded** (no ``--storage``): Optuna's JournalStorage in ``<log folder>/tune/<study>/study.journal``, a
  file that every worker process on this machine appends to under a lock. Rerunning the command resumes it.
- **Shared** (``--storage URL``, any URL SQLAlchemy takes: ``postgresql://user:password@host/db``,
  ``mysql+pymysql://...``, ``sqlite:///file.db``): Optuna's RDBStorage, with its heartbeat. Each running trial
  records a heartbeat every ``heartbeat_interval`` seconds; a trial whose heartbeat is older than
  ``grace_period`` is failed by the next worker of the study that looks, and re-queued once more
  (:class:`optuna.storages.RetryHeartbeatStaleTrialCallback`) with the same parameters.
  A plain path instead of a URL is a journal file.

A journal has no heartbeat. There, each trial records its worker (``host:pid``, the :data:`WORKER_ATTR` user
attribute) and a RUNNING trial whose process no longer exists on this host is failed and re-queued the same way.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import optuna
from optuna.storages import BaseStorage, JournalStorage, RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

from zoo.errors import ZooError, first_line
from zoo.folders import check_file_path, make_folder

JOURNAL_FILE = "study.journal"
WORKER_ATTR = "worker"
# The worker process's identity beside its PID (process_identity), so a PID that a new process reuses does not pass
# for the dead worker.
WORKER_PROCESS_ATTR = "worker_process"
FAIL_REASON_ATTR = "fail_reason"
MAX_RETRY = 2  # a trial whose worker keeps dying (out of memory, say) is retried twice, then left failed
OPEN_ATTEMPTS = 3  # workers starting together on a fresh database may race to create Optuna's tables


def study_folder(log_folder: str | Path, study_name: str) -> Path:
    """Where a study's journal (when embedded), plots and exported entry are written."""
    return Path(log_folder) / "tune" / study_name


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


def cut_torn_tail(journal: Path) -> Path | None:
    """Cut off a journal's torn last record, keeping it beside the journal; return where, or None if whole.

    Optuna's journal is one JSON record a line, appended. A crash or a full disk mid-write leaves a last line
    without its newline. Optuna skips such a line when it reads the journal, but appends the next record right
    after it, gluing the two into one line it cannot read. Every record before it is whole: the finished trials
    are kept; a trial whose last record was torn shows as running and is handed on like a dead worker's.
    """
    if not journal.is_file():
        return None
    with journal.open("rb+") as file:
        size = file.seek(0, 2)
        if size == 0:
            return None
        file.seek(size - 1)
        if file.read(1) == b"\n":
            return None
        file.seek(0)
        data = file.read()
        whole = data.rfind(b"\n") + 1
        torn = journal.with_name(f"{journal.name}.torn-{int(time.time())}")
        torn.write_bytes(data[whole:])
        file.truncate(whole)
    return torn


@dataclass(frozen=True)
class StorageSpec:
    """How to open the study's storage: plain data, so that spawned worker processes open their own."""

    url: str | None  # an RDB URL, or None for a journal file
    journal: str | None  # the journal file, when url is None
    heartbeat_interval: int = 60
    grace_period: int = 120

    @classmethod
    def parse(cls, storage: str | None, folder: Path, heartbeat_interval: int, grace_period: int) -> StorageSpec:
        if heartbeat_interval < 1 or grace_period <= heartbeat_interval:
            raise ZooError(
                f"--heartbeat-interval must be >= 1 and --grace-period larger than it, got {heartbeat_interval} "
                f"and {grace_period}"
            )
        if storage is None:
            return cls(None, str(folder / JOURNAL_FILE), heartbeat_interval, grace_period)
        if "://" in storage:
            return cls(storage, None, heartbeat_interval, grace_period)
        check_file_path(storage, "--storage")
        return cls(None, storage, heartbeat_interval, grace_period)

    @property
    def shown(self) -> str:
        """The storage as it can be printed: the URL without its password, or the journal's path."""
        if self.url is None:
            return str(self.journal)
        try:
            from sqlalchemy.engine import make_url

            return make_url(self.url).render_as_string(hide_password=True)
        except Exception:
            return self.url.split("://", 1)[0] + "://..."

    def sqlite_file(self) -> Path | None:
        """The file of a SQLite URL (``sqlite:///path``), or None for any other storage or an in-memory database."""
        if self.url is None or not self.url.startswith("sqlite"):
            return None
        from sqlalchemy.engine import make_url

        database = make_url(self.url).database
        return Path(database) if database and database != ":memory:" else None

    def file(self) -> Path | None:
        """The file the study lives in (a journal, a SQLite database), or None for a database server."""
        return Path(self.journal) if self.journal is not None else self.sqlite_file()

    def file_identity(self) -> tuple[int, int] | None:
        """The device and inode of :meth:`file` (None without a file, or while it does not exist)."""
        file = self.file()
        try:
            return None if file is None else (file.stat().st_dev, file.stat().st_ino)
        except OSError:
            return None

    def check_unchanged(self, identity: tuple[int, int] | None) -> None:
        """ZooError if the study's file, seen with ``identity`` when the work began, was deleted or replaced since:
        a worker would go on writing into a file that no longer has a name, and lose every trial."""
        if identity is not None and self.file_identity() != identity:
            raise ZooError(
                f"the storage {self.file()} was deleted or replaced mid-study, so the trials written after that "
                "are lost; the study stops here"
            )

    @contextlib.contextmanager
    def lost_as_error(self) -> Iterator[None]:
        """Turn the loss of the database mid-study (a server stopped, a network cut) into one ZooError."""
        try:
            yield
        except ZooError:
            raise
        except Exception as error:
            failure = storage_failure(error)
            if failure is None:
                raise
            raise ZooError(
                f"lost the storage {self.shown} mid-study ({first_line(failure)}); the trials it recorded stay "
                "there, and rerunning the same command once it is back resumes the study"
            ) from None

    def open(self) -> BaseStorage:
        """The Optuna storage; one ZooError naming the storage when it cannot be opened."""
        if self.url is None:
            assert self.journal is not None
            make_folder(Path(self.journal).parent, "the journal's folder")
            torn = cut_torn_tail(Path(self.journal))
            if torn is not None:
                print(
                    f"warning: {self.journal} ended in a torn record (a crash or a full disk mid-write); "
                    f"kept it in {torn}"
                )
            return JournalStorage(JournalFileBackend(self.journal))
        from sqlalchemy import exc

        for attempt in range(OPEN_ATTEMPTS):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                    return RDBStorage(
                        self.url,
                        engine_kwargs={"pool_pre_ping": True},
                        heartbeat_interval=self.heartbeat_interval,
                        grace_period=self.grace_period,
                        heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRY),
                    )
            except (exc.IntegrityError, exc.ProgrammingError, exc.InternalError) as error:
                if attempt == OPEN_ATTEMPTS - 1:  # else another worker was creating the tables at the same time
                    raise ZooError(f"cannot open storage {self.shown}: {first_line(error)}") from None
                time.sleep(1.0 + attempt)
            except ModuleNotFoundError as error:
                raise ZooError(
                    f"cannot open storage {self.shown}: {first_line(error)} (the zoo's extra installs psycopg for "
                    "postgresql://; other databases need their own driver)"
                ) from None
            except Exception as error:  # sqlalchemy's OperationalError (no server), ArgumentError (bad URL)...
                raise ZooError(f"cannot open storage {self.shown}: {first_line(error)}") from None
        raise AssertionError("unreachable")


def storage_failure(error: BaseException) -> BaseException | None:
    """The database error behind ``error``, or None. Optuna re-raises a lost connection as its own
    StorageInternalError, or loses it behind an error of its own (an AssertionError, an UnboundLocalError) raised
    while handling it, so the causes and contexts are searched too; SQLAlchemy's error is the one that says why."""
    from sqlalchemy.exc import SQLAlchemyError

    found: BaseException | None = None
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, SQLAlchemyError):
            return current
        if isinstance(current, optuna.exceptions.StorageInternalError):
            found = found or current
        current = current.__cause__ or current.__context__
    return found


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


def hand_on_orphans(study: optuna.Study, storage: BaseStorage) -> list[int]:
    """Fail the RUNNING trials whose worker died, and re-queue them; the numbers of those failed.

    With a heartbeat (RDB storages), Optuna's own check does it. On a journal, a trial whose worker process
    (recorded on this host) no longer exists, or whose PID now belongs to another process (another start time or
    boot), is failed and re-queued with the same callback. A journal trial of another host cannot be checked from
    here: its own host's workers hand it on.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if isinstance(storage, RDBStorage):
            before = {t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))}
            optuna.storages.fail_stale_trials(study)
            now_failed = study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
            return sorted(t.number for t in now_failed if t.number in before)
        host = socket.gethostname()
        failed = []
        retry = RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRY)
        study_id = storage.get_study_id_from_name(study.study_name)
        for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            worker_host, _, pid = str(trial.user_attrs.get(WORKER_ATTR, "")).rpartition(":")
            if worker_host != host or not pid.isdigit() or worker_alive(int(pid), trial.user_attrs):
                continue
            trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, trial.number)
            try:
                storage.set_trial_user_attr(trial_id, FAIL_REASON_ATTR, f"its worker (pid {pid}) died")
                if not storage.set_trial_state_values(trial_id, TrialState.FAIL):
                    continue
            except optuna.exceptions.UpdateFinishedTrialError:
                continue  # another worker got there first
            failed.append(trial.number)
            retry(study, storage.get_trial(trial_id))
        return failed
