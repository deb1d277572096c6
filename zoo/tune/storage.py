"""Where a study lives: an embedded journal or a shared database, opened, checked and read.

- **Embedded** (no ``--storage``): Optuna's JournalStorage in ``<log folder>/tune/<study>/study.journal``, a
  file that every worker process on this machine appends to under a lock. Rerunning the command resumes it.
- **Shared** (``--storage URL``, any URL SQLAlchemy takes: ``postgresql://user:password@host/db``,
  ``mysql+pymysql://...``, ``sqlite:///file.db``): Optuna's RDBStorage, with its heartbeat.
  A plain path instead of a URL is a journal file (a regular file: a device or a pipe is refused, and so is a
  SQLite database, which is named by its URL).

How the trials of a worker that died are found and handed on, on either storage, is :mod:`zoo.tune.orphans`'.

A journal is read whole or not at all: a line in its middle that is not a record (:func:`read_journal`) stops
``run`` and ``export`` with one line naming it, and ``report`` shows the study as the lines before it left it
(:class:`JournalView`). The zoo never rewrites a journal, except to cut off a torn last record, under the lock,
before it appends (:class:`TornTailLock`).
"""

from __future__ import annotations

import contextlib
import json
import re
import stat
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import BaseStorage, JournalStorage, RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.storages.journal import BaseJournalBackend, JournalFileBackend, JournalFileSymlinkLock

from zoo.checks import SHOWN_CHARS, clipped, is_integer
from zoo.errors import ZooError, first_line
from zoo.folders import check_file_path, make_folder
from zoo.tune.orphans import JOURNAL_GRACE_SECONDS, JOURNAL_HEARTBEAT_SECONDS, MAX_RETRY

JOURNAL_FILE = "study.journal"
# A database's: Optuna's heartbeat is a row update, and the defaults Optuna's documentation suggests.
RDB_HEARTBEAT_SECONDS = 60
RDB_GRACE_SECONDS = 120
OPEN_ATTEMPTS = 3  # workers starting together on a fresh database may race to create Optuna's tables
SQLITE_HEADER = b"SQLite format 3\x00"  # the first bytes of every SQLite database file


# A database URL whose '://' was mistyped (postgresql//user:pw@host, sqlite:/user:pw@file): a scheme, perhaps a
# driver, then one or two slashes and a user before an '@'.
MISTYPED_URL = re.compile(r"^[A-Za-z][A-Za-z0-9]*(\+\w+)?:?/{1,2}[^/]*@")


def mask_userinfo(text: str) -> str:
    """``text`` with the password of its first ``user:password@`` hidden."""
    return re.sub(r"(/{1,2}[^/:@]*:)[^/@]*@", r"\1***@", text, count=1)


def study_folder(log_folder: str | Path, study_name: str) -> Path:
    """Where a study's journal (when embedded), plots and exported entry are written."""
    return Path(log_folder) / "tune" / study_name


def cut_torn_tail(journal: Path) -> Path | None:
    """Cut off a journal's torn last record, keeping it beside the journal; return where, or None if whole.

    Optuna's journal is one JSON record a line, appended. A crash or a full disk mid-write leaves a last line
    without its newline. Optuna skips such a line when it reads the journal, but appends the next record right
    after it, gluing the two into one line it cannot read. Every record before it is whole: the finished trials
    are kept; a trial whose last record was torn shows as running and is handed on like a dead worker's.
    Call it holding the journal's lock (:class:`TornTailLock`): the last line of a record being appended is torn
    until its write ends.
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
        torn = journal.with_name(f"{journal.name}.torn-{time.time_ns()}")
        torn.write_bytes(data[whole:])  # on a full disk this fails, and nothing is cut or appended
        file.truncate(whole)
    return torn


class TornTailLock(JournalFileSymlinkLock):
    """Optuna's lock of a journal, that cuts off a torn last record (:func:`cut_torn_tail`) each time it is taken.

    A write that fails midway (a full disk) leaves a torn record, and the next one, appended right after it by any
    worker once there is room again, would be glued to it into a line that hides every later record from Optuna.
    """

    def __init__(self, journal: str) -> None:
        super().__init__(journal)
        self.journal = Path(journal)
        self.torn: list[Path] = []  # where the torn records this lock cut off were kept

    def acquire(self) -> bool:
        super().acquire()
        try:
            torn = cut_torn_tail(self.journal)
        except BaseException:
            self.release()
            raise
        if torn is not None:
            self.torn.append(torn)
        return True


class JournalWriteError(Exception):
    """A record that could not be written to the journal (a full disk, a file size limit): one line, said by
    :meth:`StorageSpec.lost_as_error`, wherever Optuna raised it from."""


class JournalBackend(JournalFileBackend):
    """Optuna's journal file as the zoo writes it: a torn last record is cut off before each write
    (:class:`TornTailLock`), and a write that fails raises :class:`JournalWriteError`."""

    def __init__(self, journal: str) -> None:
        self.lock = TornTailLock(journal)
        super().__init__(journal, lock_obj=self.lock)

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        try:
            super().append_logs(logs)
        except OSError as error:
            raise JournalWriteError(first_line(error)) from error


@dataclass(frozen=True)
class JournalDamage:
    """The first line of a journal that is not a record, and what Optuna cannot read because of it."""

    journal: Path
    line: int  # counted from 1
    reason: str
    lines_after: int

    @property
    def where(self) -> str:
        return f"{self.journal} line {self.line} is not a journal record ({self.reason})"

    @property
    def prefix(self) -> str:
        """How to copy the records before the damaged line, which make a study Optuna reads."""
        return f"`head -n {self.line - 1} {self.journal} > NEW`"


def read_journal(journal: Path) -> tuple[list[dict[str, Any]], JournalDamage | None]:
    """The records of ``journal`` up to its first damaged line, and that line (None if there is none).

    A line that is not a JSON object with an ``op_code`` is damage: Optuna would stop on it with a traceback, and
    cannot read the records after it. Only the records before it are returned: each record changes the study's
    state, and the ones after a lost record (perhaps the trial or study they refer to by number) would change it
    in ways nobody can check; the lines before it are the study as it was at that moment. A last line without its
    newline is a torn record, skipped as Optuna skips it. ZooError if the file is a SQLite database, or if its
    first line is no record: it is no journal.
    """
    try:
        with journal.open("rb") as file:
            if file.read(len(SQLITE_HEADER)) == SQLITE_HEADER:
                raise ZooError(
                    f"{journal} is a SQLite database, not a journal: name it by its URL, sqlite:///{journal}"
                )
            file.seek(0)
            records: list[dict[str, Any]] = []
            damage: tuple[int, str] | None = None
            lines_after = 0
            for number, line in enumerate(file, 1):
                if not line.endswith(b"\n"):
                    break
                if damage is not None:
                    lines_after += 1
                    continue
                reason = record_error(line)
                if reason is None:
                    records.append(json.loads(line))
                else:
                    damage = (number, reason)
    except OSError as error:
        raise ZooError(f"cannot read the journal {journal}: {first_line(error)}") from None
    if damage is None:
        return records, None
    found = JournalDamage(journal, damage[0], damage[1], lines_after)
    if found.line == 1:
        raise ZooError(f"{journal} is not an Optuna journal (line 1: {found.reason})")
    return records, found


def record_error(line: bytes) -> str | None:
    """Why ``line`` is not a journal record, or None."""
    try:
        record = json.loads(line)
    except ValueError as error:  # JSONDecodeError, or UnicodeDecodeError on bytes that are no text
        return clipped(first_line(error), SHOWN_CHARS)
    if not isinstance(record, dict) or not is_integer(record.get("op_code")):
        return f"JSON without an op_code: {clipped(line.decode(errors='replace'), SHOWN_CHARS)}"
    return None


class JournalView(BaseJournalBackend):
    """A journal's records read once, up to its first damaged line (:func:`read_journal`): the study as ``report``
    and ``export`` read it. Reading takes no lock and cuts no torn tail, so it leaves the file as it was."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records

    def read_logs(self, log_number_from: int) -> Iterator[dict[str, Any]]:
        return iter(self.records[log_number_from:])

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        raise ZooError("a study opened to be read is not written")


def check_journal_file(journal: Path, what: str) -> None:
    """ZooError naming ``what`` if ``journal`` exists and is not a regular file (a device, a pipe, a socket): a
    journal is appended to and synced to disk, which a device refuses, and read whole, which a pipe never is."""
    try:
        mode = journal.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as error:
        raise ZooError(f"{what} {journal}: {first_line(error)}") from None
    if not stat.S_ISREG(mode):
        raise ZooError(f"{what} {journal} is not a regular file; a journal is one (or give a database URL)")


@dataclass(frozen=True)
class StorageSpec:
    """How to open the study's storage: plain data, so that spawned worker processes open their own."""

    url: str | None  # an RDB URL, or None for a journal file
    journal: str | None  # the journal file, when url is None
    heartbeat_interval: int = RDB_HEARTBEAT_SECONDS
    grace_period: int = RDB_GRACE_SECONDS

    @classmethod
    def parse(
        cls, storage: str | None, folder: Path, heartbeat_interval: int | None, grace_period: int | None
    ) -> StorageSpec:
        """The ``--storage`` of a study whose folder is ``folder``; a heartbeat interval or grace period of None is
        the storage's default (Optuna's on a database, :data:`JOURNAL_HEARTBEAT_SECONDS` on a journal)."""
        if storage is not None and "://" not in storage and MISTYPED_URL.match(storage):
            # Taken for a journal path, it would name a file after the password and print it with every run.
            raise ZooError(
                f"--storage {clipped(mask_userinfo(storage), SHOWN_CHARS)} looks like a database URL without its "
                "'://'; a database is a URL such as postgresql://user:password@host/db, a journal a file path"
            )
        url = storage if storage is not None and "://" in storage else None
        journal = None
        if url is None:
            journal = str(folder / JOURNAL_FILE) if storage is None else str(check_file_path(storage, "--storage"))
            check_journal_file(Path(journal), "--storage" if storage is not None else "the journal")
        defaults = (
            (RDB_HEARTBEAT_SECONDS, RDB_GRACE_SECONDS) if url else (JOURNAL_HEARTBEAT_SECONDS, JOURNAL_GRACE_SECONDS)
        )
        beat = defaults[0] if heartbeat_interval is None else heartbeat_interval
        grace = defaults[1] if grace_period is None else grace_period
        if beat < 1 or grace <= beat:
            raise ZooError(
                f"--heartbeat-interval must be >= 1 and --grace-period larger than it, got {beat} and {grace}"
            )
        return cls(url, journal, beat, grace)

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
    def lost_as_error(self, identity: tuple[int, int] | None = None) -> Iterator[None]:
        """Turn the loss of the database mid-study (a server stopped, a network cut) into one ZooError; with the
        ``identity`` of the study's file when the work began, a file deleted or replaced is named as such (SQLite
        may fail first on the empty database a new connection makes in its place)."""
        try:
            yield
        except ZooError:
            raise
        except Exception as error:
            failure = storage_failure(error)
            # A journal deleted under Optuna fails in Optuna's own ways (a FileNotFoundError on its next read, an
            # UnboundLocalError while handling it): whatever the error, a file gone or replaced is the cause.
            self.check_unchanged(identity)
            if failure is None:
                raise
            if isinstance(failure, JournalWriteError):
                raise ZooError(
                    f"could not write to the journal {self.journal} ({failure}); the trials it recorded stay there, "
                    "and rerunning the same command resumes the study once it can be written again (a full disk? a "
                    "file size limit?)"
                ) from None
            raise ZooError(
                f"lost the storage {self.shown} mid-study ({first_line(failure)}); the trials it recorded stay "
                "there, and rerunning the same command once it is back resumes the study"
            ) from None

    def open(self) -> BaseStorage:
        """The Optuna storage; one ZooError naming the storage when it cannot be opened."""
        if self.url is None:
            assert self.journal is not None
            make_folder(Path(self.journal).parent, "the journal's folder")
            if Path(self.journal).exists():
                _, damage = read_journal(Path(self.journal))
                if damage is not None:
                    raise ZooError(
                        f"{damage.where}: Optuna cannot read the study past it. The zoo does not rewrite the file; "
                        f"`tune report` shows the study as its first {damage.line - 1} lines left it, and "
                        f"{damage.prefix} with --storage NEW goes on from there"
                    )
            backend = JournalBackend(self.journal)
            backend.lock.acquire()  # cuts off a torn record that a crash left, said here where the user sees it
            backend.lock.release()
            for torn in backend.lock.torn:
                print(
                    f"warning: {self.journal} ended in a torn record (a crash or a full disk mid-write); "
                    f"kept it in {torn}"
                )
            return JournalStorage(backend)
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
            except (exc.IntegrityError, exc.ProgrammingError, exc.InternalError, exc.OperationalError) as error:
                # Another worker creating the tables at the same time: PostgreSQL says so with a unique violation,
                # SQLite with "table ... already exists"; any other OperationalError (no server) is final.
                raced = not isinstance(error, exc.OperationalError) or "already exists" in str(error.orig)
                if not raced or attempt == OPEN_ATTEMPTS - 1:
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

    def open_to_read(self) -> tuple[BaseStorage, JournalDamage | None]:
        """The Optuna storage to read the study from, and the journal's damaged line if it has one. A journal is
        read as :class:`JournalView`: the file is left as it was, and the study is what the lines before a
        damaged one recorded."""
        if self.url is not None:
            return self.open(), None
        assert self.journal is not None
        records, damage = read_journal(Path(self.journal))
        return JournalStorage(JournalView(records)), damage


def storage_failure(error: BaseException) -> BaseException | None:
    """The database error or the failed journal write behind ``error``, or None. Optuna re-raises a lost
    connection as its own StorageInternalError, or loses it (or a failed write) behind an error of its own (an
    AssertionError, an UnboundLocalError) raised while handling it, so the causes and contexts are searched too;
    SQLAlchemy's error is the one that says why."""
    from sqlalchemy.exc import SQLAlchemyError

    found: BaseException | None = None
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (SQLAlchemyError, JournalWriteError)):
            return current
        if isinstance(current, optuna.exceptions.StorageInternalError):
            found = found or current
        current = current.__cause__ or current.__context__
    return found
