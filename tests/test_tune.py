"""``python -m zoo tune``: search spaces, an embedded study that resumes, reports and exports, Ctrl-C, and a real
PostgreSQL server shared by worker processes, one of them killed mid-trial. Trials are tiny (CartPole-v1,
2,000 steps, an 8-unit network)."""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import optuna
import pytest
import torch as th
import yaml
from optuna.storages import JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FixedTrial, TrialState
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from tests.postgres import crash, postgres_server, server_binaries
from zoo import config as zoo_config
from zoo.algos import hyperparams_from_model
from zoo.cli import main as cli
from zoo.config import RunConfig, get_config, known_env_ids
from zoo.errors import ZooError
from zoo.factories import make_model, run_vec_env
from zoo.train import train
from zoo.tune.objective import CONFIG_ATTR, SCORES_ATTR, Surplus, check_not_surplus
from zoo.tune.orphans import FAIL_REASON_ATTR, WORKER_ATTR, WORKER_PROCESS_ATTR, hand_on_orphans, process_identity
from zoo.tune.report import table
from zoo.tune.space import Sample, apply, fixed_params, load_space, suggest
from zoo.tune.storage import JOURNAL_FILE

ZOO_ENVS = ["CartPole-v1", "Acrobot-v1", "LunarLander-v3", "Pendulum-v1", "MountainCarContinuous-v0"]
TINY_SPACE = """
reinforce:
  default:
    baseline: {categorical: [mean, value]}
    learning_rate: {log_uniform: [1.0e-3, 3.0e-2], schedule: [constant, linear]}
    n_episodes: {categorical: [2, 4]}
    gae_lambda: {categorical: [0.95, 1.0], when: {baseline: value}}
    vf_update: {categorical: [joint, fit], when: {baseline: value}}
    vf_n_epochs: {int: [1, 3], when: {vf_update: fit}}
"""
TERMINAL = (TrialState.COMPLETE, TrialState.PRUNED)
ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "benchmarks" / "results" / "tuning"


@pytest.fixture
def tiny(tmp_path: Path) -> list[str]:
    """Options for tiny trials: the tiny search space, 2,000 steps, 2 envs, an 8-unit network."""
    space = tmp_path / "space.yml"
    space.write_text(TINY_SPACE)
    return [
        "--env",
        "CartPole-v1",
        "--n-timesteps",
        "2000",
        "--space",
        str(space),
        "--log-folder",
        str(tmp_path),
        "--hyperparams",
        "n_envs=2",
        "policy_kwargs={net_arch: [8]}",
    ]


def journal_study(tmp_path: Path, name: str = "reinforce-CartPole-v1") -> optuna.Study:
    path = tmp_path / "tune" / name / JOURNAL_FILE
    return optuna.load_study(study_name=name, storage=JournalStorage(JournalFileBackend(str(path))))


def tune_process(options: list[str], cwd: Path) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "zoo", "tune", *options]
    return subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(condition: Any, timeout: float, what: str, command: subprocess.Popen[str]) -> Any:
    """Poll ``condition`` until it holds, failing at once with the command's errors if ``command`` ends first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        if command.poll() is not None:
            raise AssertionError(
                f"the command ended (status {command.returncode}) before {what}: {command.communicate()[1][-3000:]}"
            )
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


# ---------------------------------------------------------------------------------------------- search spaces


@pytest.mark.parametrize("env_id", known_env_ids())
def test_the_zoo_space_covers_every_env_and_the_critic(env_id: str) -> None:
    if env_id.endswith("-v5"):
        pytest.importorskip("mujoco", reason="the mujoco extra is not installed")
    space = load_space("reinforce", env_id)
    names = [param.name for param in space.params]
    assert {"learning_rate", "n_episodes", "gamma", "gae_lambda", "ent_coef"} <= set(names)
    assert {"vf_update", "vf_coef", "vf_learning_rate", "vf_n_epochs", "vf_batch_size"} <= set(names)
    # Every current entry lies inside its space, so any of them can be enqueued and reproduced exactly: the
    # trial builds the same model (its defaults written out, lin_5e-3 as lin_0.005).
    entry = get_config("reinforce", env_id)
    trial = apply(entry, suggest(FixedTrial(fixed_params(space, entry)), space))
    assert trial != entry
    env = run_vec_env(entry, seed=0, n_envs=1)
    models = [make_model(config, env, seed=0) for config in (entry, trial)]
    env.close()
    hyperparams = [hyperparams_from_model(model) for model in models]
    for data in hyperparams:
        data.pop("policy_kwargs")  # {} against the defaults written out; the weights below compare the policies
    assert hyperparams[0] == hyperparams[1]
    weights = [model.policy.state_dict() for model in models]
    assert weights[0].keys() == weights[1].keys()
    assert all(th.equal(weights[0][key], weights[1][key]) for key in weights[0])


def test_sampled_configurations_build_and_respect_their_conditions() -> None:
    space = load_space("reinforce", "CartPole-v1")
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0), direction="maximize")
    # 4 envs: the fewest that every same-start group size the space draws (2, 4) divides.
    base = get_config("reinforce", "CartPole-v1", {"n_envs": 4})
    env = run_vec_env(base, seed=0)
    critic_keys = {"gae_lambda", "vf_update", "vf_n_epochs", "vf_learning_rate", "vf_batch_size"}
    critics = joint = groups = 0
    for _ in range(30):
        trial = study.ask()
        sample = suggest(trial, space)
        config = apply(base, sample)
        hyperparams = config.hyperparams
        if "group_size" in hyperparams:
            assert hyperparams["baseline"] in ("loo", "grpo")
            groups += hyperparams["group_size"] > 1
        if hyperparams["baseline"] != "value":
            assert not critic_keys & set(hyperparams)
        elif hyperparams["vf_update"] == "joint":
            joint += 1
            assert "vf_coef" in hyperparams
            assert "vf_learning_rate" not in hyperparams
            assert "vf_n_epochs" not in hyperparams
        else:
            critics += 1
            assert hyperparams["vf_update"] == "fit"
            assert "vf_coef" not in hyperparams
            assert hyperparams["vf_n_epochs"] >= 1
            assert isinstance(hyperparams["vf_learning_rate"], float) or hyperparams["vf_learning_rate"].startswith(
                "lin_"
            )
        make_model(config, env, seed=0)  # the constructor accepts every combination the space can draw
        study.tell(trial, 0.0)
    assert critics > 0
    assert joint > 0
    assert groups > 0
    env.close()


def test_a_schedule_and_a_choice_written_as_a_list_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "space.yml"
    path.write_text(
        "reinforce:\n  default:\n    learning_rate: {log_uniform: [1.0e-4, 1.0e-2], schedule: [constant, linear]}\n"
        "    policy_kwargs.net_arch: {categorical: [[8], [64, 64]]}\n"
    )
    space = load_space("reinforce", "CartPole-v1", str(path))
    config = get_config("reinforce", "CartPole-v1").with_overrides({"policy_kwargs": {"net_arch": [8]}})
    params = fixed_params(space, config)
    assert params == {"learning_rate": 5e-3, "learning_rate_schedule": "linear", "policy_kwargs.net_arch": "[8]"}
    trial = apply(config, suggest(FixedTrial(params), space))
    assert trial.hyperparams == {**config.hyperparams, "learning_rate": "lin_0.005"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a list", "must be a mapping of algorithms to search spaces"),
        ("a2c: {}", "has no search space for reinforce; it has: a2c"),
        ("reinforce: {default: {gama: {uniform: [0.9, 0.99]}}}", "unknown parameter 'gama' for reinforce"),
        ("reinforce: {default: {gamma: [0.9, 0.99]}}", "gamma must be a mapping with one of log_uniform"),
        ("reinforce: {default: {gamma: {uniform: [0.9, 0.99], int: [1, 2]}}}", "gamma: 2 distributions"),
        ("reinforce: {default: {gamma: {unifrom: [0.9, 0.99]}}}", "gamma: unknown key 'unifrom'"),
        ("reinforce: {default: {gamma: {uniform: [0.99, 0.9]}}}", "gamma: uniform needs low < high"),
        ("reinforce: {default: {learning_rate: {log_uniform: [1e-4, 1.0e-2]}}}", "YAML reads 1e-4 as text"),
        ("reinforce: {default: {ent_coef: {log_uniform: [0.0, 0.1]}}}", "log_uniform needs 0 < low"),
        ("reinforce: {default: {n_episodes: {int: [2.5, 8]}}}", "int needs integer bounds"),
        ("reinforce: {default: {n_episodes: {categorical: []}}}", "categorical needs a non-empty list"),
        ("reinforce: {default: {n_episodes: {categorical: [4, 4]}}}", "categorical choices repeat"),
        ("reinforce: {default: {gamma: {uniform: [0.9, 0.99], schedule: linear}}}", "schedule applies to the float"),
        (
            "reinforce: {default: {gae_lambda: {uniform: [0.9, 1.0], when: {baseline: value}}}}",
            "when refers to 'baseline', which is not a categorical parameter sampled before it",
        ),
        (
            "reinforce: {default: {baseline: {categorical: [mean, value]}, "
            "gae_lambda: {uniform: [0.9, 1.0], when: {baseline: valu}}}}",
            "must be among baseline's choices",
        ),
        (
            "reinforce: {default: {policy_kwargs.activation_fn: {categorical: [tanh, swish]}}}",
            "'swish' is not a valid value: policy_kwargs.activation_fn must be one of tanh",
        ),
        ("reinforce: {default: {learning_rate: {categorical: [fast]}}}", "'fast' is not a valid value"),
        ("reinforce: {CartPole-v1: {gamma: null}}", "null removes a parameter, but default has no gamma"),
        ("reinforce: {default: {gamma: {uniform: [0.9, 0.99]}}}\n  bad: [indent", "is not valid YAML"),
    ],
)
def test_bad_search_space_files_are_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "space.yml"
    path.write_text(text)
    with pytest.raises(ZooError, match=None) as error:
        load_space("reinforce", "CartPole-v1", str(path))
    assert message in str(error.value)
    assert str(path) in str(error.value)


def test_the_command_reports_a_bad_space_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "space.yml"
    path.write_text("reinforce: {default: {gamma: {uniform: [0.99, 0.9]}}}")
    assert cli(["tune", "--env", "CartPole-v1", "--space", str(path), "--log-folder", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "error: " in err
    assert "gamma: uniform needs low < high" in err
    assert "Traceback" not in err


# ------------------------------------------------------------------------------------------ an embedded study


def test_embedded_study_records_failures_resumes_reports_and_exports(
    tiny: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bad combination first: recorded FAIL with its reason, and the study goes on to its 2 trials.
    bad = "{baseline: mean, gae_lambda: 0.9, n_episodes: 4}"
    assert cli(["tune", *tiny, "--trials", "2", "--enqueue", bad]) == 0
    out = capsys.readouterr().out
    assert "0 of 2 trials done" in out
    assert "enqueued: " + bad in out
    study = journal_study(tmp_path)
    first = {trial.number: trial.value for trial in study.get_trials(states=TERMINAL)}
    assert len(first) == 2
    failed = study.get_trials(states=(TrialState.FAIL,))
    assert [trial.number for trial in failed] == [0]
    assert "gae_lambda=0.9 needs baseline='value'" in failed[0].user_attrs[FAIL_REASON_ATTR]

    # Rerun with a larger target: it resumes, keeps what was done, and runs the one missing trial.
    assert cli(["tune", *tiny, "--trials", "3", "--enqueue", bad]) == 0
    out = capsys.readouterr().out
    assert "2 of 3 trials done" in out
    assert "already in the study as trial 0 (FAIL)" in out
    study = journal_study(tmp_path)
    trials = study.get_trials(states=TERMINAL)
    assert len(trials) == 3
    assert {t.number: t.value for t in trials if t.number in first} == first
    assert [t.number for t in study.trials] == list(range(len(study.trials)))

    # The same study with other options is refused rather than mixed.
    assert cli(["tune", *tiny, "--trials", "3", "--seeds", "2"]) == 2
    assert "seeds: study 1, this command 2" in capsys.readouterr().err

    # Report: the table of the best trials and the two plots.
    folder = tmp_path / "tune" / "reinforce-CartPole-v1"
    assert cli(["tune", "report", "--env", "CartPole-v1", "--log-folder", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "3 complete" in out or "pruned" in out
    assert "| rank | trial | value | per seed |" in out
    assert "trial 0: FAILED: ZooError" in out
    for png in ("optimization_history.png", "param_importances.png"):
        assert (folder / png).stat().st_size > 5000

    # Export: a `# Tuned` entry naming the study, the trial count and the score, that zoo.config loads and trains.
    assert cli(["tune", "export", "--env", "CartPole-v1", "--log-folder", str(tmp_path)]) == 0
    text = (folder / "best.yml").read_text()
    assert cli(["tune", "export", "--env", "CartPole-v1", "--log-folder", str(tmp_path), str(tmp_path / "e.yml")]) == 0
    assert (tmp_path / "e.yml").read_text() == text
    capsys.readouterr()
    assert cli(["tune", "report", "--env", "CartPole-v1", "--trials", "3"]) == 2  # run's options are not report's
    assert "unrecognized arguments: --trials 3" in capsys.readouterr().err
    best = max(study.get_trials(states=(TrialState.COMPLETE,)), key=lambda trial: trial.value or 0.0)
    assert text.startswith(f"# Tuned (python -m zoo tune, study reinforce-CartPole-v1): trial {best.number}, the best")
    assert (
        f"{best.value:.1f} = the final model's mean return on 20 deterministic episodes, averaged over seed 0" in text
    )
    table = yaml.safe_load(text)
    monkeypatch.setattr(zoo_config, "load_file", lambda algo: table)
    config = get_config("reinforce", "CartPole-v1")
    assert config == RunConfig.from_data(best.user_attrs[CONFIG_ATTR])
    assert config.hyperparams["policy_kwargs"] == {"net_arch": [8]}
    result = train(config, log_folder=tmp_path / "export", eval_freq=1000, progress_bar=False, verbose=0)
    assert result.model_path.is_file()


def test_ctrl_c_stops_cleanly_and_keeps_finished_trials(tiny: list[str], tmp_path: Path) -> None:
    process = tune_process([*tiny, "--trials", "50"], tmp_path)
    journal = tmp_path / "tune" / "reinforce-CartPole-v1" / JOURNAL_FILE

    def one_done_and_one_running() -> bool:
        if not journal.exists():  # not opened here first: opening creates the file
            return False
        try:
            trials = journal_study(tmp_path).get_trials(deepcopy=False)
        except KeyError:  # the journal file is opened before the study is written into it
            return False
        running = [t for t in trials if t.state == TrialState.RUNNING and t.user_attrs.get(WORKER_ATTR)]
        return any(t.state in TERMINAL for t in trials) and bool(running)

    try:
        wait_for(one_done_and_one_running, 90, "a finished trial and a running one", process)
    finally:
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "interrupted: study reinforce-CartPole-v1" in err
    assert "rerun the same command to resume" in err
    trials = journal_study(tmp_path).get_trials()
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    assert [t.user_attrs[FAIL_REASON_ATTR] for t in trials if t.state == TrialState.FAIL] == ["interrupted (Ctrl-C)"]
    assert all(t.user_attrs[SCORES_ATTR] for t in trials if t.state == TrialState.COMPLETE)


# ------------------------------------------------------------------------------------- PostgreSQL, shared


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    binaries = server_binaries()
    if binaries is None:
        pytest.skip(
            "PostgreSQL server binaries (initdb, pg_ctl) not found: `apt-get install postgresql` (.ci/run does)"
        )
    with postgres_server(binaries) as url:
        yield url


@functools.cache
def rdb_storage(url: str) -> RDBStorage:
    return RDBStorage(url)  # one engine for the test's many reads: an engine per read would exhaust connections


def rdb_study(url: str, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=rdb_storage(url))


def test_workers_on_two_machines_share_one_postgres_study_and_survive_a_killed_worker(
    postgres_url: str, tiny: list[str], tmp_path: Path
) -> None:
    # Two commands, as on two machines, with the plain postgresql:// URL a user types (psycopg 3): the first with
    # two worker processes, one of which is killed mid-trial. A short heartbeat lets the test wait 3 s, not 2 min.
    # The server trusts loopback connections, so a password in the URL is accepted and must never be shown.
    url_with_password = postgres_url.replace("postgresql://zoo@", "postgresql://zoo:hunter2@")
    options = [*tiny, "--storage", url_with_password, "--study", "shared", "--trials", "4"]
    options += ["--heartbeat-interval", "1", "--grace-period", "3"]
    first, second = tune_process([*options, "--jobs", "2"], tmp_path), tune_process(options, tmp_path)

    def a_trial_of_the_first_in_training() -> tuple[int, int] | None:
        try:
            trials = rdb_study(postgres_url, "shared").get_trials(states=(TrialState.RUNNING,))
        except KeyError:
            return None  # the study is not created yet
        except (IntegrityError, ProgrammingError):
            return None  # this poll raced the workers creating the schema
        for trial in trials:
            pid = int(str(trial.user_attrs.get(WORKER_ATTR, ":0")).rpartition(":")[2])
            started = trial.datetime_start
            training = CONFIG_ATTR in trial.user_attrs and started and (datetime.now() - started).total_seconds() > 0.3
            if pid not in (0, first.pid, second.pid) and training:
                return trial.number, pid  # a worker process of the first command (--jobs: processes, not threads)
        return None

    try:
        killed, pid = wait_for(a_trial_of_the_first_in_training, 600, "a trial of the first command in training", first)
        os.kill(pid, signal.SIGKILL)
        outputs = [process.communicate(timeout=180) for process in (first, second)]
    finally:
        for process in (first, second):
            if process.poll() is None:
                process.kill()
    for process, (out, err) in zip((first, second), outputs, strict=True):
        assert process.returncode == 0, err
        assert "more workers on other machines: python -m zoo tune" in out
        assert "zoo:***@127.0.0.1" in out
        assert "hunter2" not in out + err
    assert "exited with status -9" in outputs[0][1]
    assert (
        f"trial {killed}: FAILED: its worker stopped (no heartbeat) or lost the storage; run again as" in outputs[1][0]
    )

    trials = rdb_study(postgres_url, "shared").get_trials()
    assert [t.number for t in trials] == list(range(len(trials)))  # unique, none lost
    assert len([t for t in trials if t.state in TERMINAL]) == 4
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    # The killed worker's trial was failed (no heartbeat) and run again, with the same parameters.
    assert trials[killed].state == TrialState.FAIL
    retried = [t for t in trials if t.system_attrs.get("failed_trial") == killed]
    assert len(retried) == 1
    assert retried[0].state in TERMINAL
    assert retried[0].params == trials[killed].params
    reason = "its worker stopped (no heartbeat) or lost the storage"
    assert f"trial {killed}: FAILED: {reason}; run again as trial {retried[0].number}" in table(
        rdb_study(postgres_url, "shared")
    )
    others = [t for t in trials if t.state == TrialState.FAIL and t.number != killed]
    assert all("surplus" in t.user_attrs[FAIL_REASON_ATTR] for t in others)  # two workers asked at the same instant
    workers = {t.user_attrs[WORKER_ATTR].rpartition(":")[2] for t in trials if t.state in TERMINAL}
    assert str(second.pid) in workers
    assert len(workers - {str(second.pid)}) >= 1


def test_a_bad_storage_url_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = "postgresql://zoo:secret@127.0.0.1:1/optuna"
    assert cli(["tune", "--env", "CartPole-v1", "--storage", url, "--log-folder", str(tmp_path), "--trials", "1"]) == 2
    err = capsys.readouterr().err
    assert "error: cannot open storage postgresql://zoo:***@127.0.0.1:1/optuna" in err
    assert "secret" not in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "storage",
    [
        "postgresql//zoo:secret@127.0.0.1/optuna",
        "postgresql:/zoo:secret@127.0.0.1/optuna",
        "mysql+pymysql//zoo:secret@db/optuna",
        "sqlite:/zoo:secret@studies.db",
    ],
    ids=["no-colon", "one-slash", "driver", "sqlite"],
)
def test_a_database_url_mistyped_as_a_path_is_refused_without_its_password(
    storage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before, it was taken for a journal path: a journal file named with the password was created, and every run
    # printed it in clear.
    monkeypatch.chdir(tmp_path)
    for command in (["run", "--trials", "1"], ["report"]):
        assert cli(["tune", *command, "--env", "CartPole-v1", "--storage", storage, "--log-folder", "logs"]) == 2
        captured = capsys.readouterr()
        line = captured.err.strip()
        assert line.startswith("error: --storage ")
        assert "looks like a database URL without its '://'" in line
        assert ":***@" in line
        assert "secret" not in captured.out + captured.err
    assert list(tmp_path.iterdir()) == []


def test_a_password_in_the_storage_url_is_shown_nowhere(
    postgres_url: str,
    tiny: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The run's own lines are checked by the two-machine test; here: the report, the export, errors, and what a
    # trial writes (its runs' command.txt).
    from zoo.tune import objective

    commands: list[str] = []
    measured_run = objective.measured_run

    def recording(config: RunConfig, seed: int, log_folder: str, command: str, **kwargs: Any) -> Any:
        commands.append(command)
        result = measured_run(config, seed, log_folder, command, **kwargs)
        commands.extend(path.read_text() for path in Path(log_folder).rglob("command.txt"))
        return result

    monkeypatch.setattr(objective, "measured_run", recording)
    url = postgres_url.replace("postgresql://zoo@", "postgresql://zoo:hunter2@")
    study = ["--env", "CartPole-v1", "--storage", url, "--study", "masked", "--log-folder", str(tmp_path)]
    outputs = []
    for command in (
        ["run", *tiny, "--storage", url, "--study", "masked", "--n-timesteps", "300", "--trials", "1"],
        ["report", *study],
        ["export", *study],
        ["report", *study, "--study", "missing"],
    ):
        cli(["tune", *command])
        captured = capsys.readouterr()
        outputs.append(captured.out + captured.err)
    # The equals form and an abbreviation of the flag: the command for other machines showed these in clear.
    for storage in (f"--storage={url}", f"--stor={url}"):
        assert cli(["tune", *tiny, storage, "--study", "masked", "--n-timesteps", "300", "--trials", "1"]) == 0
        captured = capsys.readouterr()
        outputs.append(captured.out + captured.err)
        assert "more workers on other machines: " in outputs[-1]
    assert "zoo:***@" in outputs[1] + outputs[3] + outputs[4] + outputs[5]
    assert "best:" in outputs[0]
    assert commands
    assert not [text for text in outputs + commands if "hunter2" in text]
    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert not [path for path in files if b"hunter2" in path.read_bytes()]


def a_trial_done(storage: str | RDBStorage | JournalStorage, name: str) -> bool:
    try:
        trials = optuna.load_study(study_name=name, storage=storage).get_trials(states=TERMINAL)
    except (KeyError, IntegrityError, ProgrammingError, OperationalError):
        # Not created yet, or this poll raced the command creating the schema (SQLite: "table ... already exists").
        return False
    return len(trials) > 0


def assert_lost_storage_line(process: subprocess.Popen[str], message: str) -> None:
    """The command ended by itself with status 2 and one error line holding ``message``, without a traceback."""
    _out, err = process.communicate(timeout=600)
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("\r")]
    assert process.returncode == 2, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, err[-3000:]
    assert message in errors[0]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_database_that_goes_away_mid_study_is_one_line(jobs: int, tiny: list[str], tmp_path: Path) -> None:
    # Before: a traceback of SQLAlchemy's and Optuna's errors (Optuna's own UnboundLocalError among them).
    binaries = server_binaries()
    if binaries is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not found")
    with postgres_server(binaries) as url:
        options = [*tiny, "--storage", url, "--study", "gone", "--trials", "50", "--jobs", str(jobs)]
        process = tune_process(options, tmp_path)
        try:
            wait_for(lambda: a_trial_done(rdb_storage(url), "gone"), 600, "a finished trial", process)
            rdb_storage(url).engine.dispose()
            crash(url)
            assert_lost_storage_line(process, f"lost the storage {url} mid-study")
        finally:
            if process.poll() is None:
                process.kill()


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_a_storage_file_deleted_mid_study_is_one_line(kind: str, tiny: list[str], tmp_path: Path) -> None:
    # Before: the study went on writing into the deleted file, and every trial was lost without a word.
    database = tmp_path / ("study.db" if kind == "sqlite" else "study.journal")
    url = f"sqlite:///{database}" if kind == "sqlite" else str(database)
    reader: str | JournalStorage = url if kind == "sqlite" else JournalStorage(JournalFileBackend(url))
    process = tune_process([*tiny, "--storage", url, "--study", "gone", "--trials", "50"], tmp_path)
    try:
        # Generous: on a busy machine the worker's start (torch, SB3) and its first trial take minutes.
        wait_for(lambda: database.exists() and a_trial_done(reader, "gone"), 600, "a finished trial", process)
        database.unlink()
        assert_lost_storage_line(process, f"the storage {database} was deleted or replaced mid-study")
    finally:
        if process.poll() is None:
            process.kill()


def test_a_trial_asked_for_beyond_the_target_is_surplus() -> None:
    study = optuna.create_study(direction="maximize")
    study.tell(study.ask(), 1.0)  # trial 0 done
    running = study.ask()  # trial 1 under way
    check_not_surplus(running, target=2)
    late = study.ask()  # two workers asked at the same instant for the last trial: the later one stands down
    with pytest.raises(Surplus, match="the study had its 2 trials done or under way when trial 2 started"):
        check_not_surplus(late, target=2)


def test_a_journal_trial_whose_worker_died_is_failed_and_queued_again(tmp_path: Path) -> None:
    storage = JournalStorage(JournalFileBackend(str(tmp_path / JOURNAL_FILE)))
    study = optuna.create_study(storage=storage, study_name="orphans", direction="maximize")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        orphan, alive = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)}), study.ask()
        orphan.set_user_attr(WORKER_ATTR, f"{socket.gethostname()}:{dead.pid}")
        alive.set_user_attr(WORKER_ATTR, f"{socket.gethostname()}:{worker.pid}")
        alive.set_user_attr(WORKER_PROCESS_ATTR, process_identity(worker.pid))
        assert hand_on_orphans(study, storage) == [orphan.number]
        trials = study.get_trials()
        assert trials[orphan.number].state == TrialState.FAIL
        assert trials[orphan.number].user_attrs[FAIL_REASON_ATTR] == f"its worker (pid {dead.pid}) died"
        assert trials[alive.number].state == TrialState.RUNNING
        assert trials[-1].state == TrialState.WAITING
        assert trials[-1].system_attrs["failed_trial"] == orphan.number
        assert hand_on_orphans(study, storage) == []
    finally:
        worker.kill()
        worker.wait()


def test_a_journal_trial_is_handed_on_when_its_pid_is_another_process_now(tmp_path: Path) -> None:
    # The worker died and its PID went to a new process: the PID is alive, the process is not the worker.
    storage = JournalStorage(JournalFileBackend(str(tmp_path / JOURNAL_FILE)))
    study = optuna.create_study(storage=storage, study_name="reused", direction="maximize")
    newcomer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        reused = study.ask()
        reused.set_user_attr(WORKER_ATTR, f"{socket.gethostname()}:{newcomer.pid}")
        identity = process_identity(newcomer.pid)
        assert identity is not None
        boot, _, start = identity.rpartition(":")
        reused.set_user_attr(WORKER_PROCESS_ATTR, f"{boot}:{int(start) - 1}")  # started a tick before the newcomer
        # A trial this very process recorded: left behind by an earlier call, since trials are handed on between
        # this process's own trials.
        left = study.ask()
        left.set_user_attr(WORKER_ATTR, f"{socket.gethostname()}:{os.getpid()}")
        left.set_user_attr(WORKER_PROCESS_ATTR, process_identity(os.getpid()))
        assert hand_on_orphans(study, storage) == [reused.number, left.number]
    finally:
        newcomer.kill()
        newcomer.wait()


def test_report_of_a_study_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["tune", "report", "--env", "CartPole-v1", "--log-folder", str(tmp_path)]) == 2
    assert "no study 'reinforce-CartPole-v1'" in capsys.readouterr().err
    assert not (tmp_path / "tune").exists()


def test_sample_keeps_what_an_enqueued_trial_asked_for() -> None:
    base = get_config("reinforce", "CartPole-v1")
    sample = Sample({"baseline": "mean"}, unset=["gae_lambda"])
    asked = base.with_overrides({"baseline": "mean", "gae_lambda": 0.9})
    assert apply(asked, sample, keep={"gae_lambda"}).hyperparams["gae_lambda"] == 0.9
    assert "gae_lambda" not in apply(asked, sample).hyperparams


def test_a_trial_is_shown_with_its_enqueued_overrides_and_its_sampled_parameters() -> None:
    from optuna.distributions import FloatDistribution

    from zoo.tune.objective import OVERRIDES_ATTR
    from zoo.tune.workers import format_params

    trial = optuna.trial.create_trial(
        params={"learning_rate": 0.0033891},
        distributions={"learning_rate": FloatDistribution(1e-4, 1e-2, log=True)},
        value=-87.0,
        user_attrs={OVERRIDES_ATTR: {"ent_coef": "lin_0.05", "policy_kwargs": {"ortho_init": False}}},
    )
    assert format_params(trial) == "ent_coef=lin_0.05 policy_kwargs={ortho_init: false} learning_rate=0.00339"
