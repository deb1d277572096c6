"""``python -m zoo tune`` on damaged or unusual storage and destinations: each ends in one clear line
and exit status 2 where a traceback, a hang or a rewritten file was, and loses nothing the study recorded.

A journal with a damaged line in its middle, a journal that is not a regular file, a full disk mid-study, a SQLite
database given as a plain path, export destinations that exist or are not files, ``--enqueue`` and seed errors,
and trials whose worker died before its first heartbeat. Trials are tiny (CartPole-v1, 300 steps, a 4-unit
network).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

from tests.helpers import one_error_line
from zoo.cli import main as cli
from zoo.tune.orphans import FAIL_REASON_ATTR, WORKER_ATTR

STUDY = ["--env", "CartPole-v1", "--study", "s"]
TINY = ["--space", "none", "--n-timesteps", "300", "--hyperparams", "n_envs=2", "n_episodes=2"]
TINY += ["policy_kwargs={net_arch: [4]}"]
LEARNING_RATES = ("{learning_rate: 1.0e-3}", "{learning_rate: 2.0e-3}")


def run_options(journal: Path, logs: Path) -> list[str]:
    return ["tune", "run", *STUDY, *TINY, "--storage", str(journal), "--log-folder", str(logs)]


def read_options(command: str, journal: Path, logs: Path) -> list[str]:
    return ["tune", command, *STUDY, "--storage", str(journal), "--log-folder", str(logs)]


def load(journal: Path) -> optuna.Study:
    return optuna.load_study(study_name="s", storage=JournalStorage(JournalFileBackend(str(journal))))


def states(journal: Path) -> list[TrialState]:
    return [trial.state for trial in load(journal).trials]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A journal of study ``s``: two enqueued trials, both complete. Copy it before changing it."""
    folder = tmp_path_factory.mktemp("finished")
    journal = folder / "study.journal"
    enqueue = [item for rate in LEARNING_RATES for item in ("--enqueue", rate)]
    assert cli([*run_options(journal, folder / "logs"), *enqueue, "--trials", "2"]) == 0
    assert states(journal) == [TrialState.COMPLETE, TrialState.COMPLETE]
    return journal


def copy_of(journal: Path, tmp_path: Path) -> Path:
    return Path(shutil.copy(journal, tmp_path / "study.journal"))


def files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}


# ------------------------------------------------------------------------------- a journal damaged in its middle


def test_a_journal_damaged_in_its_middle_is_named_reported_up_to_the_damage_and_never_rewritten(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: every command died with a JSONDecodeError traceback from inside Optuna.
    journal = copy_of(finished, tmp_path)
    lines = journal.read_bytes().splitlines(keepends=True)
    # The record that completed trial 0; the line after it is zeroed, as a crash on some filesystems leaves it.
    kept = 1 + next(
        k
        for k, line in enumerate(lines)
        if json.loads(line).get("trial_id") == 0 and json.loads(line).get("state") == TrialState.COMPLETE.value
    )
    lines[kept] = b"\x00" * (len(lines[kept]) - 1) + b"\n"
    journal.write_bytes(b"".join(lines))
    damaged = journal.read_bytes()
    logs = tmp_path / "logs"
    where = f"{journal} line {kept + 1} is not a journal record"

    assert cli([*run_options(journal, logs), "--trials", "3"]) == 2
    line = one_error_line(capsys)
    assert where in line
    assert f"head -n {kept} {journal}" in line

    assert cli(read_options("report", journal, logs)) == 0
    captured = capsys.readouterr()
    assert where in captured.err
    assert f"the study as its first {kept} lines left it" in captured.err
    assert "Traceback" not in captured.err
    assert "study s: 1 complete" in captured.out  # trial 0, recorded before the damage

    assert cli(read_options("export", journal, logs)) == 2
    assert where in one_error_line(capsys)
    assert not (logs / "tune" / "s" / "best.yml").exists()

    assert files(tmp_path) == {"study.journal": damaged}  # no repair, lock or torn tail beside it

    # The error's way on: the lines before the damage, copied, are a study that resumes.
    copy = tmp_path / "kept.journal"
    copy.write_bytes(b"".join(lines[:kept]))
    assert cli([*run_options(copy, logs), "--trials", "2"]) == 0
    assert states(copy) == [TrialState.COMPLETE, TrialState.COMPLETE]


@pytest.mark.parametrize("command", ["run", "report"])
def test_a_file_that_is_no_journal_at_all_is_one_line(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = tmp_path / "notes.txt"
    journal.write_text("a shopping list\n")
    options = run_options(journal, tmp_path / "logs") if command == "run" else read_options(command, journal, tmp_path)
    assert cli(options) == 2
    assert f"{journal} is not an Optuna journal (line 1:" in one_error_line(capsys)
    assert journal.read_text() == "a shopping list\n"


# -------------------------------------------------------------------------------- a journal that is not a file


@pytest.mark.parametrize(
    ("kind", "command"),
    [("dev-null", "run"), ("dev-null", "report"), ("fifo", "report"), ("fifo", "export")],
)
def test_a_journal_that_is_not_a_regular_file_is_one_line(
    kind: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: /dev/null, where fsync is refused, ended `run` in an OSError traceback from inside Optuna, and a fifo
    # was "a study that does not exist". A link to /dev/null stands for it, so that nothing is made beside /dev/null.
    storage = tmp_path / "journal"
    if kind == "dev-null":
        storage.symlink_to(os.devnull)
    else:
        os.mkfifo(storage)
    logs = tmp_path / "logs"
    options = (
        [*run_options(storage, logs), "--trials", "1"] if command == "run" else read_options(command, storage, logs)
    )
    assert cli(options) == 2
    assert f"--storage {storage} is not a regular file" in one_error_line(capsys)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["journal"]


# ------------------------------------------------------------------------------------- a full disk mid-study


def limit_file_size(size: int) -> None:
    """In the child: writes past ``size`` bytes fail with EFBIG, as on a full disk (SIGXFSZ ignored, so the write
    raises instead of killing the process)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_full_disk_mid_study_ends_in_one_line_and_loses_nothing(
    jobs: int, finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: a traceback, from inside Optuna's journal.
    journal = copy_of(finished, tmp_path)
    size = journal.stat().st_size
    logs = tmp_path / "logs"
    command = [sys.executable, "-m", "zoo", *run_options(journal, logs), "--trials", "4", "--jobs", str(jobs)]
    process = subprocess.run(
        command, capture_output=True, text=True, timeout=600, preexec_fn=lambda: limit_file_size(size + 600)
    )
    errors = [line for line in process.stderr.splitlines() if line.strip() and not line.startswith("\r")]
    assert process.returncode == 2, process.stderr[-3000:]
    assert "Traceback" not in process.stderr, process.stderr[-3000:]
    assert len([line for line in errors if line.startswith("error: ")]) == 1, process.stderr[-3000:]
    assert f"could not write to the journal {journal}" in process.stderr
    assert "rerunning the same command resumes the study" in process.stderr

    # Nothing lost: the report reads every finished trial, and the same command, with room again, goes on.
    assert cli(read_options("report", journal, logs)) == 0
    assert "study s: 2 complete" in capsys.readouterr().out
    assert cli([*run_options(journal, logs), "--trials", "3"]) == 0
    complete = [trial for trial in load(journal).trials if trial.state == TrialState.COMPLETE]
    assert len(complete) == 3


# ------------------------------------------------------------------------------------ errors that name the flag


def test_an_unknown_key_in_enqueue_names_enqueue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Before: "config.yml: unknown key 'bogus'", a file the user never gave.
    options = ["tune", "run", "--env", "CartPole-v1", "--log-folder", str(tmp_path), "--enqueue", "{bogus: 1}"]
    assert cli(options) == 2
    line = one_error_line(capsys)
    assert line.startswith("error: --enqueue '{bogus: 1}': unknown key 'bogus' for reinforce")
    assert "config.yml" not in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("first", "seeds"), [("4294967295", "2"), ("4294967296", "1")])
def test_a_seed_range_past_the_largest_seed_is_refused_before_any_trial(
    first: str, seeds: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: found inside the first trial, which failed, and the command ended "stopped with 0 of 1 trials done".
    options = ["tune", "run", "--env", "CartPole-v1", "--log-folder", str(tmp_path), "--trials", "1"]
    assert cli([*options, "--first-seed", first, "--seeds", seeds]) == 2
    line = one_error_line(capsys)
    assert "--first-seed" in line
    assert "4,294,967,295" in line
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------------------------- export


def export_options(finished: Path, tmp_path: Path, *extra: str) -> list[str]:
    return [*read_options("export", finished, tmp_path / "logs"), *extra]


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_export_refuses_a_destination_that_is_not_a_regular_file(
    kind: str, finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: the entry replaced it with a regular file (as root, `tune export /dev/null` replaced /dev/null).
    destination = tmp_path / "destination"
    target = tmp_path / "target.yml"
    target.write_text("kept\n")
    if kind == "fifo":
        os.mkfifo(destination)
    else:
        destination.symlink_to(target)
    for extra in ([], ["--force"]):
        assert cli(export_options(finished, tmp_path, str(destination), *extra)) == 2
        assert f"tune export {destination} is not a regular file" in one_error_line(capsys)
    assert destination.is_fifo() if kind == "fifo" else destination.is_symlink()
    assert target.read_text() == "kept\n"


def test_export_replaces_an_existing_file_only_with_force(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: `tune export hyperparams/reinforce.yml` replaced the whole file with one entry, without a word.
    hyperparams = tmp_path / "reinforce.yml"
    hyperparams.write_text("CartPole-v1: {n_timesteps: 1}\nAcrobot-v1: {n_timesteps: 2}\n")
    assert cli(export_options(finished, tmp_path, str(hyperparams))) == 2
    line = one_error_line(capsys)
    assert f"tune export {hyperparams} exists" in line
    assert "--force" in line
    assert hyperparams.read_text() == "CartPole-v1: {n_timesteps: 1}\nAcrobot-v1: {n_timesteps: 2}\n"

    assert cli(export_options(finished, tmp_path, str(hyperparams), "--force")) == 0
    assert hyperparams.read_text().startswith("# Tuned")
    # The study's own best.yml, in the folder the zoo writes its plots to, is the zoo's file: replaced each time.
    for _ in range(2):
        assert cli(export_options(finished, tmp_path)) == 0
    assert (tmp_path / "logs" / "tune" / "s" / "best.yml").read_text() == hyperparams.read_text()


# --------------------------------------------------------------------------------------- reading only reads


@pytest.mark.parametrize("command", ["report", "export", "run"])
def test_a_sqlite_database_given_as_a_plain_path_is_named_and_left_as_it_was(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: a plain path is a journal, and the journal's torn-tail repair truncated the database at its last
    # newline byte, even for `tune report`.
    database = tmp_path / "study.db"
    optuna.create_study(storage=f"sqlite:///{database}", study_name="s")
    before = (database.read_bytes(), database.stat().st_mtime_ns)
    logs = tmp_path / "logs"
    options = run_options(database, logs) if command == "run" else read_options(command, database, logs)
    assert cli(options) == 2
    message = f"{database} is a SQLite database, not a journal: name it by its URL, sqlite:///{database}"
    assert message in one_error_line(capsys)
    assert (database.read_bytes(), database.stat().st_mtime_ns) == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["study.db"]


def test_report_leaves_a_journal_with_a_torn_tail_as_it_was(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: reading a study cut the torn tail off the journal; cutting it is for the command that writes next.
    journal = copy_of(finished, tmp_path)
    journal.write_bytes(journal.read_bytes() + b'{"op_code": 8, "trial_id": 1, "user_')
    torn = journal.read_bytes()
    assert cli(read_options("report", journal, tmp_path / "logs")) == 0
    assert "study s: 2 complete" in capsys.readouterr().out
    assert files(tmp_path) == {"study.journal": torn}


# --------------------------------------------------------------------------- trials that never sent a heartbeat


def test_a_trial_whose_worker_died_before_its_first_heartbeat_is_handed_on_after_the_grace_period(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: a resumed study waited on them forever. Two workers died right after `study.ask()` and writing their
    # name: one on this host, whose PID a new process reuses, one on another host.
    journal = tmp_path / "study.journal"
    options = run_options(journal, tmp_path / "logs")
    assert cli([*options, "--trials", "2", "--timeout", "0"]) == 1  # the study, set up, with no trial yet
    newcomer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        study = load(journal)
        here, elsewhere = study.ask(), study.ask()
        here.set_user_attr(WORKER_ATTR, f"{socket.gethostname()}:{newcomer.pid}")
        elsewhere.set_user_attr(WORKER_ATTR, "elsewhere:4242")
        capsys.readouterr()
        # --timeout only bounds the test if the trials are never handed on: no new trial starts after it.
        grace = ["--heartbeat-interval", "1", "--grace-period", "2", "--timeout", "300"]
        assert cli([*options, "--trials", "2", *grace]) == 0
    finally:
        newcomer.kill()
        newcomer.wait()
    trials = load(journal).trials
    assert [trial.state for trial in trials] == [TrialState.FAIL] * 2 + [TrialState.COMPLETE] * 2
    for trial, worker in zip(trials, (f"{socket.gethostname()}:{newcomer.pid}", "elsewhere:4242"), strict=False):
        assert trial.user_attrs[FAIL_REASON_ATTR].startswith(f"its worker {worker} sent no heartbeat in the ")
    assert {trial.system_attrs["failed_trial"] for trial in trials[2:]} == {0, 1}


# ------------------------------------------------------------------------------------ workers opening together

OPEN_WHEN_TOLD = """
import sys, time
from pathlib import Path
from zoo.tune.storage import StorageSpec
url, ready, go = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
spec = StorageSpec.parse(url, ready.parent, None, None)
ready.touch()
while not go.exists():
    time.sleep(0.005)
spec.open()
"""


def test_workers_opening_a_fresh_sqlite_study_together_all_open_it(tmp_path: Path) -> None:
    # Before: Optuna's tables are created by whichever worker opens the database first, and SQLite reports a worker
    # that raced another's creation as "table ... already exists" (PostgreSQL: a unique violation, retried): that
    # worker ended with "cannot open storage". Four workers, released at once on each of three fresh databases.
    for attempt in range(3):
        url, go = f"sqlite:///{tmp_path / f'study{attempt}.db'}", tmp_path / f"go{attempt}"
        ready = [tmp_path / f"ready{attempt}-{worker}" for worker in range(4)]
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_WHEN_TOLD, url, str(flag), str(go)], stderr=subprocess.PIPE, text=True
            )
            for flag in ready
        ]
        try:
            while not all(flag.exists() for flag in ready):
                assert all(worker.poll() is None for worker in workers), [w.communicate()[1] for w in workers]
                time.sleep(0.01)
            go.touch()
            errors = [worker.communicate(timeout=300)[1] for worker in workers]
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.kill()
        assert [worker.returncode for worker in workers] == [0] * 4, errors
        optuna.create_study(storage=url, study_name="s")  # the schema the winner created is whole
