"""Reliability at the newer edges: budgets, bounds, benchmark records, journals, orphans and waits.

Classes of failure, one section each: wrong results, silently (a NaN or misfiled record; a negative rate is in
tests/test_reliability.py beside nan and inf); work that never ends or grows without bound (n_episodes, a tiny
budget's evaluations); one line and status 2 where a traceback or a silent default was (budgets of 0, an empty
--envs, a negative --timeout, a string gamma); data loss (a torn journal); orphans (a reused PID, a retry counted
as the handing worker's failure); waits (a silent Hub).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial, TrialState
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_reinforce import Reinforce
from tests.envs import ScriptedEnv
from tests.helpers import one_error_line, run_record
from zoo.agent_format import load_agent, save_agent
from zoo.cli import main as cli
from zoo.errors import ZooError
from zoo.hub import client
from zoo.measure import read_record
from zoo.tune.orphans import (
    FAIL_REASON_ATTR,
    HEARTBEAT_ATTR,
    WORKER_ATTR,
    WORKER_MACHINE_ATTR,
    hand_on_orphans,
    heartbeat,
    machine_identity,
    trial_id,
)

TINY = {"net_arch": [4]}

# ------------------------------------------------------------------------------------- wrong results, silently


def good_record(folder: Path) -> dict[str, object]:
    """The record a run filed in ``folder`` (``runs/<algo>/<env>/seed<k>``) would hold."""
    return run_record(folder.parent.parent.name, folder.parent.name, int(folder.name.removeprefix("seed")))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mean_reward": math.nan}, "mean_reward is nan"),
        ({"train_cpu_seconds": math.inf}, "train_cpu_seconds is inf"),
        ({"env_id": "Acrobot-v1"}, "it records reinforce Acrobot-v1 seed 0, filed under reinforce/CartPole-v1/seed0"),
        ({"seed": 3}, "filed under reinforce/CartPole-v1/seed0"),
        ({"curve_mean_reward": [5.0, math.nan]}, "its learning curve is not one finite number per evaluation"),
        ({"curve_mean_reward": [5.0]}, "its learning curve is not one finite number per evaluation"),
        ({"curve_mean_reward": ["5", 1.0]}, "its learning curve is not one finite number per evaluation"),
        ({"train_cpu_seconds": None}, "train_cpu_seconds is None"),
    ],
    ids=lambda value: value if isinstance(value, str) else next(iter(value)),
)
def test_a_record_that_is_not_a_measurement_of_its_run_is_corrupt(
    change: dict[str, object], message: str, tmp_path: Path
) -> None:
    folder = tmp_path / "runs" / "reinforce" / "CartPole-v1" / "seed0"
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps({**good_record(folder), **change}))
    with pytest.raises(ZooError, match="is corrupt") as error:
        read_record(folder)
    assert message in str(error.value)


def test_a_good_record_reads() -> None:
    folder = Path("runs/reinforce/CartPole-v1/seed2")
    assert good_record(folder)["seed"] == 2


# ------------------------------------------------------------------------ work that grows without bound


@pytest.mark.parametrize("n_episodes", [10**9, 100_001])
def test_episodes_per_update_are_bounded_before_any_env_step(n_episodes: int) -> None:
    with pytest.raises(ValueError, match=r"n_episodes must be an integer in \[2, 100,000\]"):
        Reinforce("MlpPolicy", DummyVecEnv([lambda: ScriptedEnv([3])]), n_episodes=n_episodes)


def test_a_tiny_budget_evaluates_once_per_policy(tmp_path: Path) -> None:
    # 100 steps: the first collection (16 CartPole episodes over 8 envs) outlasts every evaluation period, which
    # evaluated the same untrained policy at every vector step.
    started = time.monotonic()
    argv = ["train", "--env", "CartPole-v1", "--n-timesteps", "100", "--log-folder", str(tmp_path)]
    assert cli([*argv, "--no-progress-bar", "--verbose", "0", "--eval-episodes", "2"]) == 0
    run = tmp_path / "reinforce" / "CartPole-v1_1"
    evaluations = np.load(run / "evaluations.npz")["timesteps"]
    model = Reinforce.load(run / "CartPole-v1.zip", device="cpu")
    assert len(evaluations) <= model._n_updates + 1
    assert time.monotonic() - started < 60


@pytest.mark.parametrize(
    ("net_arch", "message"),
    [
        ([1] * 100_000, r"policy_kwargs\.net_arch has 100,000 layers; at most 64"),
        ({"pi": [64], "vf": [1] * 100_000}, r"policy_kwargs\.net_arch\.vf has 100,000 layers; at most 64"),
        ([64, 10**9], r"policy_kwargs\.net_arch\[1\] must be a layer width in \[1, 65,536\], got 1000000000"),
        ({"pi": [64], "qf": [64]}, r"policy_kwargs\.net_arch must be a list of layer widths or a mapping of pi"),
    ],
    ids=["many-layers", "many-critic-layers", "huge-width", "unknown-net"],
)
def test_a_downloaded_config_of_many_layers_is_refused_before_any_module_is_built(
    net_arch: object, message: str, tmp_path: Path
) -> None:
    # Before, the policy was built (on the meta device, module by module) and only then compared with the
    # manifest: 100,000 layers of width 1 cost minutes, growing with the layer count.
    save_agent(
        tmp_path,
        Reinforce("MlpPolicy", DummyVecEnv([lambda: ScriptedEnv([3])]), policy_kwargs=TINY),
        env_id="CartPole-v1",
    )
    config = json.loads((tmp_path / "config.json").read_text())
    config["policy_kwargs"]["net_arch"] = net_arch
    (tmp_path / "config.json").write_text(json.dumps(config))
    started = time.perf_counter()
    with pytest.raises(ZooError, match=message):
        load_agent(tmp_path, device="cpu")
    assert time.perf_counter() - started < 1


def test_a_network_beyond_the_bounds_is_one_line_in_the_zoo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "--env", "CartPole-v1", "--n-timesteps", "100", "--log-folder", str(tmp_path / "logs")]
    assert cli([*argv, "--hyperparams", "policy_kwargs={net_arch: [64, 100000]}"]) == 2
    assert "policy_kwargs.net_arch[1] must be a layer width in [1, 65,536], got 100000" in one_error_line(capsys)
    assert not (tmp_path / "logs").exists()


# ----------------------------------------------------------------------------------- one line and status 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--env", "CartPole-v1", "--n-timesteps", "0"], "--n-timesteps must be >= 1"),
        (["train", "--env", "CartPole-v1", "--n-timesteps", "-5"], "--n-timesteps must be >= 1"),
        (["benchmark", "--n-timesteps", "0"], "--n-timesteps must be >= 1"),
        (["benchmark", "--envs"], "--envs needs at least one env id"),
        (["tune", "--env", "CartPole-v1", "--n-timesteps", "0"], "--n-timesteps must be >= 1"),
        (["tune", "--env", "CartPole-v1", "--timeout", "-1"], "--timeout must be a number of seconds >= 0"),
        (["tune", "--env", "CartPole-v1", "--timeout", "nan"], "--timeout must be a number of seconds >= 0"),
    ],
    ids=lambda value: value if isinstance(value, str) else " ".join(value),
)
def test_budgets_and_lists_are_checked_before_work_starts(
    argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli(argv) == 2
    assert message in one_error_line(capsys)
    assert list(tmp_path.iterdir()) == []  # no run folder, no study, no results folder


# -------------------------------------------------------------------------------------------------- waits


def test_a_silent_hub_costs_under_30_seconds_by_default() -> None:
    # Every attempt waits DEFAULT_TIMEOUT_S, then the backoff doubles from RETRY_BACKOFF_S.
    backoffs = sum(client.RETRY_BACKOFF_S * 2**attempt for attempt in range(client.RETRY_ATTEMPTS - 1))
    assert client.RETRY_ATTEMPTS * client.DEFAULT_TIMEOUT_S + backoffs < 30
    assert client.check_timeout(None) == client.DEFAULT_TIMEOUT_S
    assert client.check_timeout(120) == 120.0  # --timeout still raises it


# ------------------------------------------------------------------------------------------------ data loss


def test_a_study_whose_journal_was_torn_resumes_with_every_finished_trial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = ["tune", "--env", "CartPole-v1", "--space", "none", "--n-timesteps", "300", "--log-folder", str(tmp_path)]
    options += ["--hyperparams", "n_envs=2", "n_episodes=2", "policy_kwargs={net_arch: [4]}", "--study", "torn"]
    options += ["--enqueue", "{learning_rate: 1.0e-3}", "--enqueue", "{learning_rate: 2.0e-3}"]
    assert cli([*options, "--trials", "2"]) == 0
    journal = tmp_path / "tune" / "torn" / "study.journal"
    data = journal.read_bytes()
    journal.write_bytes(data[:-15])  # the last record cut mid-write
    capsys.readouterr()

    assert cli([*options[: options.index("--enqueue")], "--trials", "3"]) == 0
    out = capsys.readouterr().out
    assert "ended in a torn record" in out
    torn = list(journal.parent.glob("study.journal.torn-*"))
    assert len(torn) == 1
    assert torn[0].read_bytes() == data[data[:-15].rfind(b"\n") + 1 : -15]
    study = optuna.load_study(study_name="torn", storage=JournalStorage(JournalFileBackend(str(journal))))
    complete = [trial for trial in study.trials if trial.state == TrialState.COMPLETE]
    assert len(complete) >= 2  # the first finished trial survived, and the study went on to its target
    assert complete[0].params == {} or complete[0].number == 0


# ------------------------------------------------------------------------------------------------- orphans


def test_a_retry_taken_over_from_a_dead_worker_is_not_this_workers_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = ["tune", "--env", "CartPole-v1", "--space", "none", "--n-timesteps", "300", "--log-folder", str(tmp_path)]
    options += ["--hyperparams", "n_envs=2", "n_episodes=2", "policy_kwargs={net_arch: [4]}", "--study", "dead"]
    assert cli([*options, "--trials", "1", "--timeout", "0"]) == 1  # the study, set up, with no trial yet
    journal = tmp_path / "tune" / "dead" / "study.journal"
    study = optuna.load_study(study_name="dead", storage=JournalStorage(JournalFileBackend(str(journal))))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = study.ask()
    orphan.set_user_attr(WORKER_ATTR, f"{socket.gethostname()}:{dead.pid}")
    capsys.readouterr()

    # --trials 1 allows one failure of this worker's own; the dead worker's is not one of them.
    assert cli([*options, "--trials", "1"]) == 0
    study = optuna.load_study(study_name="dead", storage=JournalStorage(JournalFileBackend(str(journal))))
    states = [trial.state for trial in study.trials]
    assert states == [TrialState.FAIL, TrialState.COMPLETE]
    assert isinstance(study.trials[1].system_attrs.get(HEARTBEAT_ATTR), float)  # its worker's sign of life


def running_trial(
    study: optuna.Study, worker: str, started: float, heartbeat: float | None, machine: str | None = None
) -> int:
    """A RUNNING trial written into ``study`` as a worker elsewhere would leave it; its number."""
    system_attrs = {} if heartbeat is None else {HEARTBEAT_ATTR: heartbeat}
    user_attrs = {WORKER_ATTR: worker, **({} if machine is None else {WORKER_MACHINE_ATTR: machine})}
    start = datetime.datetime.fromtimestamp(started)
    study.add_trial(
        FrozenTrial(len(study.trials), TrialState.RUNNING, None, start, None, {}, {}, user_attrs, system_attrs, {}, 0)
    )
    return len(study.trials) - 1


def test_a_journal_trial_of_another_host_is_handed_on_once_its_heartbeat_is_stale(tmp_path: Path) -> None:
    # Before, a trial of another host (or container) was never handed on: only a PID on this host was checked.
    storage = JournalStorage(JournalFileBackend(str(tmp_path / "study.journal")))
    study = optuna.create_study(storage=storage, study_name="hosts", direction="maximize")
    now = time.time()
    stale = running_trial(study, "elsewhere:4242", started=now - 600, heartbeat=now - 60)
    fresh = running_trial(study, "elsewhere:4243", started=now - 600, heartbeat=now - 5)
    # A worker that died before its first beat is judged by the trial's start (before, it was never handed on).
    silent = running_trial(study, "elsewhere:4244", started=now - 600, heartbeat=None)
    starting = running_trial(study, "elsewhere:4246", started=now - 5, heartbeat=None)  # its first beat is due
    restarted = running_trial(study, "elsewhere:4245", started=now - 5, heartbeat=now - 600)  # a retry's old beat
    assert hand_on_orphans(study, storage, grace_period=30) == [stale, silent]
    trials = study.get_trials()
    assert trials[fresh].state == trials[restarted].state == trials[starting].state == TrialState.RUNNING
    assert trials[stale].state == TrialState.FAIL
    assert re.fullmatch(
        r"its worker elsewhere:4242 sent no heartbeat for 6\d s \(the limit is 30 s\)",
        trials[stale].user_attrs[FAIL_REASON_ATTR],
    )
    assert re.fullmatch(
        r"its worker elsewhere:4244 sent no heartbeat in the 60\d s since the trial started \(the limit is 30 s\)",
        trials[silent].user_attrs[FAIL_REASON_ATTR],
    )
    retries = {trial.system_attrs["failed_trial"]: trial for trial in trials if "failed_trial" in trial.system_attrs}
    assert sorted(retries) == [stale, silent]
    retry = retries[stale]
    assert retry.state == TrialState.WAITING
    assert HEARTBEAT_ATTR not in retry.system_attrs  # nothing of the dead worker's passes the retry off as its trial
    assert WORKER_ATTR not in retry.user_attrs
    assert hand_on_orphans(study, storage, grace_period=30) == []


def test_a_journal_trial_of_a_container_that_shares_the_host_name_is_judged_by_its_heartbeat(tmp_path: Path) -> None:
    # Same host name, another PID namespace: its PID means nothing here, so a live worker is not taken for dead.
    storage = JournalStorage(JournalFileBackend(str(tmp_path / "study.journal")))
    study = optuna.create_study(storage=storage, study_name="containers", direction="maximize")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    now, worker, container = time.time(), f"{socket.gethostname()}:{dead.pid}", "another-boot/pid:[1]"
    alive = running_trial(study, worker, started=now - 600, heartbeat=now - 5, machine=container)
    gone = running_trial(study, worker, started=now - 600, heartbeat=now - 60, machine=container)
    here = running_trial(study, worker, started=now - 600, heartbeat=now - 5, machine=machine_identity())
    assert hand_on_orphans(study, storage, grace_period=30) == [gone, here]  # here: the PID check, at once
    assert study.get_trials()[alive].state == TrialState.RUNNING


def test_a_heartbeat_is_refreshed_until_the_trial_ends(tmp_path: Path) -> None:
    storage = JournalStorage(JournalFileBackend(str(tmp_path / "study.journal")))
    study = optuna.create_study(storage=storage, study_name="beats", direction="maximize")
    trial = study.ask()
    with heartbeat(storage, trial_id(trial), interval=0.05):
        first = study.trials[0].system_attrs[HEARTBEAT_ATTR]
        time.sleep(0.5)
        last = study.trials[0].system_attrs[HEARTBEAT_ATTR]
    assert last > first
    time.sleep(0.2)
    assert study.trials[0].system_attrs[HEARTBEAT_ATTR] == last
    study.tell(trial, 1.0)
    with heartbeat(storage, trial_id(trial), interval=0.05):  # a finished trial: no beat, no error
        time.sleep(0.1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"gamma": "0.99"}, "gamma must be a number in [0, 1], got '0.99'"),
        ({"gae_lambda": True}, "gae_lambda must be a number in [0, 1], got True"),
        ({"stats_window_size": -1}, "stats_window_size must be an integer >= 1"),
        ({"stats_window_size": 0}, "stats_window_size must be an integer >= 1"),
        ({"device": "gpu7"}, "device must be 'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device, got 'gpu7'"),
    ],
    ids=lambda value: value if isinstance(value, str) else next(iter(value)),
)
def test_the_librarys_arguments_fail_with_their_name_before_any_step(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Reinforce("MlpPolicy", DummyVecEnv([lambda: ScriptedEnv([3])]), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["gamma=abc", "stats_window_size=-1"])
def test_a_bad_hyperparameter_is_one_line_in_the_zoo(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["train", "--env", "CartPole-v1", "--n-timesteps", "100", "--log-folder", str(tmp_path / "logs")]
    assert cli([*argv, "--no-progress-bar", "--verbose", "0", "--hyperparams", value]) == 2
    assert "bad hyperparameters for reinforce on CartPole-v1" in one_error_line(capsys)
    assert not (tmp_path / "logs").exists()


def test_report_of_a_missing_sqlite_database_creates_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    database = tmp_path / "missing.db"
    argv = ["tune", "report", "--env", "CartPole-v1", "--storage", f"sqlite:///{database}"]
    assert cli(argv) == 2
    assert f"the SQLite database {database} does not exist" in one_error_line(capsys)
    assert not database.exists()


# ------------------------------------------------------------------------------------- paths of the wrong kind


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["benchmark", "--quick", "--out", "afile"], "--out afile: afile is a file, not a folder"),
        (["benchmark", "--quick", "--out", "afile/results"], "--out afile/results: afile is a file, not a folder"),
        (["tune", "--env", "CartPole-v1", "--log-folder", "afile"], "--log-folder afile: afile is a file"),
        (["tune", "--env", "CartPole-v1", "--storage", "adir"], "--storage adir is a folder"),
        (["tune", "--env", "CartPole-v1", "--storage", "afile/study.journal"], "afile is a file, not a folder"),
        (["tune", "export", "--env", "CartPole-v1", "adir"], "tune export adir is a folder"),
        (["tune", "export", "--env", "CartPole-v1", "afile/entry.yml"], "afile is a file, not a folder"),
        (["tune", "--env", "CartPole-v1", "--study", "x" * 300], "at most 128 characters"),
        (["tune", "--env", "CartPole-v1", "--storage", "y" * 300], "File name too long"),
    ],
    ids=[
        "out-file",
        "out-under-file",
        "log-folder-file",
        "storage-dir",
        "storage-under-file",
        "export-dir",
        "export-under-file",
        "long-study",
        "long-storage-name",
    ],
)
def test_a_path_of_the_wrong_kind_is_one_line(
    argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("keep")
    (tmp_path / "adir").mkdir()
    budget = [] if argv[:2] == ["tune", "export"] else ["--n-timesteps", "100"]  # an export trains nothing
    assert cli([*argv, *budget]) == 2
    assert message in one_error_line(capsys)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["adir", "afile"]
    assert (tmp_path / "afile").read_text() == "keep"


def test_a_results_table_cut_short_keeps_the_previous_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from zoo import benchmark_table

    (tmp_path / "benchmark.csv").write_text("previous csv\n")
    (tmp_path / "benchmark.md").write_text("previous table\n")
    row = {
        "env": "CartPole-v1",
        "algorithm": "reinforce",
        "n_timesteps": 100,
        "seeds": 1,
        "mean": 1.0,
        "std": 0.0,
        "iqm": 1.0,
        "train_seconds": 1.0,
        "train_cpu_seconds": 1.0,
    }

    def disk_full(self: object, rows: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(benchmark_table.csv.DictWriter, "writerows", disk_full)
    with pytest.raises(ZooError, match=r"could not write the results table .*No space left on device"):
        benchmark_table.write_table([row], tmp_path, "python -m zoo benchmark", "Machines: -.")
    assert (tmp_path / "benchmark.csv").read_text() == "previous csv\n"
    assert (tmp_path / "benchmark.md").read_text() == "previous table\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["benchmark.csv", "benchmark.md"]  # no temporary


def test_a_plot_cut_short_keeps_the_previous_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib.figure

    from zoo import benchmark_table

    plots = tmp_path / "plots"
    plots.mkdir()
    (plots / "CartPole-v1.png").write_bytes(b"previous plot")
    record = {"env_id": "CartPole-v1", "algo": "reinforce", "curve_timesteps": [1, 2], "curve_mean_reward": [1.0, 2.0]}

    def disk_full(self: object, path: Path, **kwargs: object) -> None:
        Path(path).write_bytes(b"half a p")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", disk_full)
    with pytest.raises(ZooError, match="could not write the learning-curve plot"):
        benchmark_table.plot_curves([record], tmp_path)
    assert (plots / "CartPole-v1.png").read_bytes() == b"previous plot"
    assert [path.name for path in plots.iterdir()] == ["CartPole-v1.png"]


@pytest.fixture(scope="module")
def reported_study(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """``zoo tune report`` options of a study of one finished trial in a SQLite database (without --log-folder:
    the report's plots go there, apart from the study)."""
    database = tmp_path_factory.mktemp("study") / "study.db"
    options = ["--env", "CartPole-v1", "--study", "s", "--storage", f"sqlite:///{database}"]
    argv = ["tune", "run", *options, "--space", "none", "--n-timesteps", "300", "--hyperparams", "n_envs=2"]
    assert cli([*argv, "n_episodes=2", "--log-folder", str(database.parent / "logs"), "--trials", "1"]) == 0
    return ["tune", "report", *options]


@pytest.mark.parametrize("kind", ["folder-is-a-file", "plot-is-a-folder", "read-only-folder"])
def test_an_unwritable_plots_folder_of_the_report_is_one_line(
    kind: str, reported_study: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "tune" / "s"
    folder.parent.mkdir()
    if kind == "folder-is-a-file":
        folder.write_text("keep")
        message = f"the plots folder {folder}: {folder} is a file, not a folder"
    elif kind == "plot-is-a-folder":
        (folder / "optimization_history.png").mkdir(parents=True)
        message = f"could not write the plot {folder / 'optimization_history.png'}: IsADirectoryError"
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only folder")
        folder.mkdir()
        (folder / "optimization_history.png").write_bytes(b"previous plot")
        folder.chmod(0o555)
        message = "PermissionError"
    capsys.readouterr()
    try:
        assert cli([*reported_study, "--log-folder", str(tmp_path)]) == 2
        assert message in one_error_line(capsys)
    finally:
        if folder.is_dir():
            folder.chmod(0o755)
    if kind == "folder-is-a-file":
        assert folder.read_text() == "keep"
    else:
        names = [path.name for path in folder.iterdir()]
        assert names == ["optimization_history.png"]  # no temporary left behind


def test_an_unwritable_plots_folder_of_the_benchmark_is_one_line_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "benchmark.csv").write_text("previous csv\n")
    (out / "benchmark.md").write_text("previous table\n")
    (out / "plots").write_text("keep")
    argv = ["benchmark", "--envs", "CartPole-v1", "--seeds", "1", "--jobs", "1", "--n-timesteps", "200"]
    assert cli([*argv, "--out", str(out)]) == 2
    assert f"the plots folder {out / 'plots'}: {out / 'plots'} is a file, not a folder" in one_error_line(capsys)
    assert (out / "benchmark.csv").read_text() == "previous csv\n"
    assert (out / "benchmark.md").read_text() == "previous table\n"
    assert (out / "plots").read_text() == "keep"
    assert not (out / "runs").exists()  # refused before the work, not after it


# ------------------------------------------------------------------------------ YAML that costs more than a line


def alias_bomb(levels: int = 9) -> str:
    """Nine lists of nine references to the previous one: a few hundred bytes that walk to 9**9 values."""
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (alias_bomb() + "reinforce: {default: {n_episodes: {categorical: *a9}}}\n", "more than 100,000 values"),
        ("reinforce: {default: {n_episodes: " + "[" * 40 + "]" * 40 + "}}\n", "nests deeper than 32 levels"),
        ("reinforce: " + "[" * 5000 + "]" * 5000 + "\n", "RecursionError"),
        (b"reinforce: {default: {gamma: {uniform: [0.9, 0.99]}}} # \xff\xfe\n", "is not UTF-8 text"),
        ("reinforce: {default: {n_episodes: {int: [2, 9223372036854775807]}}}\n", r"n_episodes must be an integer"),
        ("reinforce: {default: {n_envs: {categorical: [8, 1000000]}}}\n", r"n_envs must be an integer in \[1, 1,024\]"),
    ],
    ids=["alias-bomb", "deep", "very-deep", "not-utf8", "huge-int-range", "huge-n-envs"],
)
def test_a_hostile_search_space_is_one_line_in_a_moment(
    text: str | bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = tmp_path / "space.yml"
    space.write_bytes(text if isinstance(text, bytes) else text.encode())
    start = time.perf_counter()
    argv = ["tune", "--env", "CartPole-v1", "--space", str(space), "--log-folder", str(tmp_path / "logs")]
    assert cli(argv) == 2
    assert re.search(message, one_error_line(capsys))
    assert time.perf_counter() - start < 10
    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize(
    "flag",
    [
        ["--enqueue", "{n_episodes: " + "[" * 40 + "]" * 40 + "}"],
        ["--enqueue", "[" * 5000 + "]" * 5000],
        ["--enqueue", "{n_episodes: 99999999999999999999999}"],
        ["--hyperparams", "n_episodes=" + "[" * 5000 + "]" * 5000],
        ["--hyperparams", "n_envs=100000000"],
    ],
    ids=["enqueue-deep", "enqueue-very-deep", "enqueue-huge-int", "hyperparams-very-deep", "hyperparams-n-envs"],
)
def test_hostile_overrides_are_one_line(flag: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["tune", "--env", "CartPole-v1", "--n-timesteps", "100", "--log-folder", str(tmp_path / "logs"), *flag]
    assert cli(argv) == 2
    one_error_line(capsys)


DATE_VALUES = "only numbers, strings, booleans, null, lists and mappings are allowed"


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (["tune", "--env", "CartPole-v1", "--hyperparams", "gamma=2001-01-01"], "--hyperparams gamma is a date"),
        (["tune", "--env", "CartPole-v1", "--enqueue", "{gamma: 2001-01-01}"], ": gamma is a date"),
        (
            ["tune", "--env", "CartPole-v1", "--enqueue", "{policy_kwargs: {net_arch: [4], at: 2001-01-01 10:00:00}}"],
            ": policy_kwargs.at is a date and time",
        ),
        (
            ["tune", "--env", "CartPole-v1", "--space", "space.yml"],
            ": reinforce.default.gamma.categorical[1] is a date",
        ),
        (["train", "--env", "CartPole-v1", "--hyperparams", "gamma=2001-01-01"], "--hyperparams gamma is a date"),
        (["train", "--env", "CartPole-v1", "--hyperparams", "learning_rate=!!binary aGk="], "is a binary value"),
        (["benchmark", "--quick", "--out", "logs", "--hyperparams", "gamma=2001-01-01"], "gamma is a date"),
    ],
    ids=["tune-hyperparams", "tune-enqueue", "tune-enqueue-nested", "tune-space", "train", "train-binary", "benchmark"],
)
def test_a_value_json_cannot_hold_is_refused_with_its_key(
    argv: list[str], where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # YAML reads 2001-01-01 as a date: before, tune and benchmark ended in "date is not JSON serializable" and
    # train blamed gamma's range.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "space.yml").write_text("reinforce: {default: {gamma: {categorical: [0.9, 2001-01-01]}}}\n")
    options = [] if "--out" in argv else ["--log-folder", "logs"]
    assert cli([*argv, *options, "--n-timesteps", "100"]) == 2
    line = one_error_line(capsys)
    assert where in line
    assert DATE_VALUES in line
    assert not (tmp_path / "logs").exists()


# --------------------------------------------------------------------------------------------------- leaks


def foreign_study(storage: str) -> optuna.Study:
    """A study named 'shared' made by another tool in the same storage: a finished trial, no setup record of ours."""
    opened = JournalStorage(JournalFileBackend(storage)) if "://" not in storage else storage
    study = optuna.create_study(storage=opened, study_name="shared", direction="maximize")
    study.add_trial(optuna.trial.create_trial(value=500.0))
    return study


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_a_study_another_tool_made_in_the_same_storage_is_refused_by_name(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before, the zoo wrote its setup record into the other tool's study and counted its trials as its own.
    storage = f"sqlite:///{tmp_path / 'shared.db'}" if kind == "sqlite" else str(tmp_path / "shared.journal")
    foreign_study(storage)
    study = ["--env", "CartPole-v1", "--log-folder", str(tmp_path), "--study", "shared", "--storage", storage]
    run = [
        "run",
        "--space",
        "none",
        "--n-timesteps",
        "300",
        "--hyperparams",
        "n_envs=2",
        "n_episodes=2",
        "--trials",
        "2",
    ]
    for command in (run, ["report"], ["export"]):
        assert cli(["tune", *command, *study]) == 2
        line = one_error_line(capsys)
        assert "study 'shared' in " in line
        assert "was not created by the zoo (it has no setup record of ours)" in line
    opened = JournalStorage(JournalFileBackend(storage)) if kind == "journal" else storage
    study = optuna.load_study(study_name="shared", storage=opened)
    assert len(study.trials) == 1
    assert study.user_attrs == {}  # nothing of ours written into it
