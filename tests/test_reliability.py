"""Reliability, done for real: broken inputs, corrupted files, killed and racing processes, a full disk.

Each test is a case a hostile or unlucky user meets, and what holds: every user error is one line (exit 2) and leaves no
stub run folder; a save that fails midway never leaves a truncated model; Ctrl-C keeps the final model; two
trains never race on the run index; a corrupt benchmark record is redone and a run of another budget is refused;
the library raises its documented errors (nan learning rates and observations, the hang guard).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_reinforce import Reinforce
from tests.envs import NeverEndingEnv, ScriptedEnv
from tests.helpers import assert_unchanged, one_error_line, policy_state
from zoo.cli import main as cli
from zoo.measure import Task
from zoo.normalization import VecNormalizeStats

ROOT = Path(__file__).resolve().parents[1]
TINY = {"net_arch": [4]}
# A run that takes a second or two: CartPole, 2 envs, 2 episodes per update, a small net, rare evaluations.
QUICK = ["--env", "CartPole-v1", "--no-progress-bar", "--verbose", "0", "--eval-episodes", "1"]
QUICK_HYPERPARAMS = ["n_envs=2", "n_episodes=2", "policy_kwargs={net_arch: [8]}"]


def run_python(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -c script args...`` in a child process with the test's environment; its output captured."""
    return subprocess.run(
        [sys.executable, "-c", script, *args], env=child_env(), capture_output=True, text=True, timeout=300, check=False
    )


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def zoo_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "zoo", *args]


def run_folders(log_folder: Path) -> list[Path]:
    return sorted(p for p in log_folder.glob("*/*") if p.is_dir())


# ------------------------------------------------------------------------------------- every error is one line


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--seed", "-1"], "--seed must be an integer in [0, 4,294,967,295], got -1"),
        (["--hyperparams", "gamma=!!python/name:os.system"], "--hyperparams gamma is not valid YAML data"),
        (["--hyperparams", "policy_kwargs={net_arch: [8"], "--hyperparams policy_kwargs is not valid YAML data"),
        (["--hyperparams", "n_timesteps=.nan"], "n_timesteps must be a finite number, got nan"),
        (["--hyperparams", "normalize={foo: 1}"], "normalize: unknown key 'foo'; allowed: norm_obs"),
        (["--hyperparams", "normalize={clip_obs: -1}"], "normalize: clip_obs must be a finite number > 0"),
        (["--hyperparams", "env_kwargs={foo: 1}"], "cannot make env 'CartPole-v1' with env_kwargs {'foo': 1}"),
        (["--hyperparams", "env_kwargs={render_mode: human}"], "env_kwargs may not set render_mode"),
        (["--hyperparams", "learning_rate=inf"], "learning_rate must be finite, got inf"),
        (["--hyperparams", "learning_rate=lin_nan"], "learning_rate must start at a finite number > 0"),
        (["--env", "gymnasium.envs.classic_control:CartPoleEnv"], "invalid env id"),
    ],
    ids=lambda value: value if isinstance(value, str) else " ".join(value),
)
def test_user_errors_are_one_line_and_leave_no_run_folder(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["train", *QUICK, "--log-folder", str(tmp_path / "logs"), *extra]  # each fails before any training
    assert cli(argv) == 2
    assert message in one_error_line(capsys)
    assert run_folders(tmp_path / "logs") == []


def test_an_unusable_log_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    argv = ["train", *QUICK, "--n-timesteps", "100", "--log-folder", str(blocker / "logs")]
    assert cli(argv) == 2
    assert f"cannot create a run folder under {blocker / 'logs'}" in one_error_line(capsys)
    assert blocker.read_text() == "not a folder"


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model zip as `zoo train` leaves it (its config.yml is written by each test)."""
    folder = tmp_path_factory.mktemp("run")
    model = Reinforce("MlpPolicy", "CartPole-v1", n_episodes=2, policy_kwargs=TINY, device="cpu", seed=0)
    model.save(folder / "CartPole-v1.zip")
    return folder / "CartPole-v1.zip"


@pytest.mark.parametrize(
    ("config_yml", "message"),
    [
        ("algo: reinforce\nenv_id: CartPole-v1\nhyperparams: !!python/object/apply:os.system [ls]\n", "not valid YAML"),
        ("algo: reinforce\nenv_id: [CartPole-v1\n", "not valid YAML"),
        ("algo: reinforce\nenv_id: CartPole-v1\nhyperparams: abc\n", "hyperparams must be a mapping"),
        ("algo: reinforce\nenv_id: CartPole-v1\nn_timesteps: .nan\nhyperparams: {}\n", "n_timesteps must be a finite"),
        ("algo: [reinforce]\nenv_id: CartPole-v1\nhyperparams: {}\n", "algo and env_id must be names"),
        ("algo: reinforce\nenv_id: CartPole-v1\nn_timesteps: 10\nseed: -3\nhyperparams: {}\n", "seed must be"),
        ("- a list\n", "must be a mapping"),
        ("[" * 5000, "cannot be read"),
        (b"\xff\xfe\x00binary", "cannot read"),
    ],
    ids=["yaml-tag", "broken", "hyperparams", "nan", "algo", "seed", "list", "deep", "binary"],
)
def test_a_bad_config_yml_beside_a_model_is_one_line(
    config_yml: str | bytes, message: str, saved_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = saved_model.parent / "config.yml"
    if isinstance(config_yml, bytes):
        path.write_bytes(config_yml)
    else:
        path.write_text(config_yml)
    assert cli(["evaluate", "--env", "CartPole-v1", "--model", str(saved_model), "--episodes", "1"]) == 2
    line = one_error_line(capsys)
    assert message in line
    assert "config.yml" in line


# --------------------------------------------------------------------------------------------------- library


def test_an_infinite_learning_rate_is_refused() -> None:
    with pytest.raises(ValueError, match=r"learning_rate must be > 0 and finite, or a schedule, got inf"):
        Reinforce("MlpPolicy", "CartPole-v1", learning_rate=float("inf"))


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        (float("nan"), FloatingPointError, r"non-finite (critic )?learning rate \(nan\) at update 1"),
        (float("inf"), FloatingPointError, r"non-finite (critic )?learning rate \(inf\) at update 1"),
        (-1e-3, ValueError, r"schedule gave -0\.001 at update 1 .* must stay >= 0"),  # gradient ascent
    ],
    ids=["nan", "inf", "negative"],
)
@pytest.mark.parametrize("which", ["learning_rate", "vf_learning_rate"])
def test_a_schedule_that_turns_bad_raises_before_the_parameters_change(
    which: str, bad: float, error: type[Exception], message: str
) -> None:
    def schedule(progress: float) -> float:
        return 1e-3 if progress >= 1.0 else bad  # fine for building the optimizers, bad at the first update

    # With the critic, whose fit reads vf_learning_rate: both rates are in use, and neither optimizer may step.
    model = Reinforce(
        "MlpPolicy", DummyVecEnv([lambda: ScriptedEnv([3])]), baseline="value", n_episodes=2, device="cpu",
        policy_kwargs=TINY, **{which: schedule},
    )  # fmt: skip
    before = policy_state(model)
    with pytest.raises(error, match=message):
        model.learn(60)
    assert_unchanged(model, before)


@pytest.mark.parametrize("fast", [True, False], ids=["numpy-actor", "torch-policy"])
def test_a_nan_observation_raises_the_documented_floating_point_error(fast: bool) -> None:
    class NanObservation(ScriptedEnv):
        def step(self, action: int) -> Any:
            obs, reward, terminated, truncated, info = super().step(action)
            obs[0] = np.nan
            return obs, reward, terminated, truncated, info

    model = Reinforce(
        "MlpPolicy", DummyVecEnv([lambda: NanObservation([3])]), n_episodes=2, device="cpu", policy_kwargs=TINY,
        use_fast_actor=fast,
    )  # fmt: skip
    before = policy_state(model)
    with pytest.raises(FloatingPointError, match=r"non-finite observation \(nan\)"):
        model.learn(100)
    assert_unchanged(model, before)


@pytest.mark.parametrize("bound", [1, 10, 37])
def test_the_hang_guard_is_enforced_exactly(bound: int) -> None:
    model = Reinforce(
        "MlpPolicy", DummyVecEnv([NeverEndingEnv] * 2), n_episodes=2, hang_guard_steps=bound, device="cpu",
        policy_kwargs=TINY,
    )  # fmt: skip
    with pytest.raises(RuntimeError, match=rf"has run {bound + 1} steps without ending an episode"):
        model.learn(10_000)
    assert model.num_timesteps == 2 * (bound + 1)


def test_an_episode_of_exactly_hang_guard_steps_is_allowed() -> None:
    model = Reinforce(
        "MlpPolicy", DummyVecEnv([lambda: ScriptedEnv([5])] * 2), n_episodes=2, hang_guard_steps=5, device="cpu",
        policy_kwargs=TINY,
    )  # fmt: skip
    model.learn(40)
    assert model._n_updates >= 1


# ------------------------------------------------------------------------------------ saves that fail midway

FILE_SIZE_LIMIT = textwrap.dedent(
    """
    import resource, signal, sys
    limit = int(sys.argv[1])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    """
)


def test_a_save_that_hits_a_file_size_limit_keeps_the_previous_model(tmp_path: Path) -> None:
    path = tmp_path / "CartPole-v1.zip"
    Reinforce("MlpPolicy", "CartPole-v1", policy_kwargs=TINY, n_episodes=2).save(path)
    good = path.read_bytes()
    script = FILE_SIZE_LIMIT + textwrap.dedent(
        """
        from sb3_reinforce import Reinforce
        from zoo.errors import ZooError
        from zoo.folders import write_atomically
        big = Reinforce("MlpPolicy", "CartPole-v1", policy_kwargs={"net_arch": [256, 256]}, n_episodes=2)
        try:
            write_atomically(sys.argv[2], big.save, "final model")
        except ZooError as error:
            print(error)
            sys.exit(2)
        """
    )
    limit = len(good) + 4096
    done = run_python(script, str(limit), str(path))
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"could not write the final model {path}" in done.stdout
    assert "File too large; it keeps its previous content" in done.stdout
    assert path.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left either
    Reinforce.load(path)


@pytest.mark.parametrize(("checkpoints", "first_write"), [("0", "best model"), ("100", "checkpoint")])
def test_train_under_a_file_size_limit_leaves_no_truncated_model(
    tmp_path: Path, checkpoints: str, first_write: str
) -> None:
    """A real `zoo train` whose model does not fit the size limit (disk full, quota): before, SB3's save left a
    truncated best_model.zip that no longer loaded, a traceback, and the stub run folder. With checkpoints, the
    first write is a checkpoint's: torch's zip writer reported the limit as a RuntimeError."""
    logs = tmp_path / "logs"
    script = FILE_SIZE_LIMIT + "from zoo.cli import main\nsys.exit(main(sys.argv[2:]))\n"
    argv = ["train", *QUICK, "--n-timesteps", "400", "--eval-freq", "200", "--log-folder", str(logs)]
    argv += ["--checkpoint-freq", checkpoints]
    # The default (64, 64) networks and their optimizers make a zip of about 100 kB; the logs stay far below.
    done = run_python(script, str(32 * 1024), *argv, "--hyperparams", "n_envs=2", "n_episodes=2")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert f"could not write the {first_write}" in done.stderr
    assert "File too large; nothing was written there" in done.stderr
    assert not list(logs.rglob("*.zip"))
    assert run_folders(logs) == []  # no model was saved: the run folder goes too


# ----------------------------------------------------------------------------------------- killed, racing

# Children import everything, say "ready", then wait for the start time on stdin and spin until it: started at the
# same instant within microseconds, as two commands launched together are at their critical moment.
BARRIER = textwrap.dedent(
    """
    import sys, time
    print("ready", flush=True)
    start = float(sys.stdin.readline())
    time.sleep(max(start - time.time() - 0.05, 0))
    while time.time() < start:
        pass
    """
)


def start_together(script: str, *argvs: list[str]) -> list[subprocess.Popen[str]]:
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script, *argv],
            env=child_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    for child in children:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready", child.communicate()[1][-2000:]
    start = time.time() + 0.3
    for child in children:
        assert child.stdin is not None
        child.stdin.write(f"{start}\n")
        child.stdin.flush()
    return children


def test_runs_claimed_at_the_same_instant_never_share_a_folder(tmp_path: Path) -> None:
    """Two processes claim run folders in one log folder at the same instant, many times over, as two trains started
    together do: each gets folders of its own, and none fails on one the other took."""
    script = (
        "from pathlib import Path\nfrom zoo.runs import claim_run_dir\n"
        + BARRIER
        + "for _ in range(150):\n    print(claim_run_dir(Path(sys.argv[1]), 'reinforce', 'CartPole-v1').name)\n"
    )
    children = start_together(script, [str(tmp_path)], [str(tmp_path)])
    outputs = [child.communicate(timeout=120) for child in children]
    for child, (_, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err[-2000:]
    names = [line for out, _ in outputs for line in out.split()]
    assert len(names) == len(set(names)) == 300
    assert len(run_folders(tmp_path)) == 300


def test_two_trains_started_at_once_into_one_log_folder(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    script = "import zoo.train\nfrom zoo.cli import main\n" + BARRIER + "sys.exit(main(sys.argv[1:]))\n"
    argv = ["train", *QUICK, "--n-timesteps", "200", "--eval-freq", "200", "--log-folder", str(logs)]
    children = start_together(script, *[[*argv, "--hyperparams", *QUICK_HYPERPARAMS]] * 2)
    for child in children:
        _, err = child.communicate(timeout=300)
        assert child.returncode == 0, err[-2000:]
    assert [p.name for p in run_folders(logs)] == ["CartPole-v1_1", "CartPole-v1_2"]
    for folder in run_folders(logs):
        Reinforce.load(folder / "CartPole-v1.zip")


def test_ctrl_c_during_train_saves_the_final_model_and_statistics(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    argv = [
        "train", "--env", "Pendulum-v1", "--n-timesteps", "100000000", "--log-folder", str(logs),
        "--eval-freq", "400", "--eval-episodes", "1", "--no-progress-bar", "--verbose", "0",
        "--hyperparams", "n_envs=2", "n_episodes=2", "policy_kwargs={net_arch: [8]}",
    ]  # fmt: skip
    # A terminal's Ctrl-C reaches a process whose SIGINT has its default action. A non-interactive shell starts a
    # background job (`pytest &` in a script) with SIGINT ignored, the child would inherit that and Python then
    # installs no KeyboardInterrupt handler: so give the child the default action explicitly.
    child = subprocess.Popen(
        zoo_command(*argv), env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    run = logs / "reinforce" / "Pendulum-v1_1"
    deadline = time.monotonic() + 240
    while not (run / "evaluations.npz").exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert child.poll() is None, child.communicate()[1][-2000:]
    time.sleep(0.5)  # well inside training
    child.send_signal(signal.SIGINT)
    try:
        _, err = child.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        child.kill()
        raise AssertionError(
            f"train did not stop within 300 s of Ctrl-C (this process's SIGINT handler: "
            f"{signal.getsignal(signal.SIGINT)!r}): {child.communicate()[1][-2000:]}"
        ) from None
    assert child.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    model_path, stats_path = run / "Pendulum-v1.zip", run / "vec_normalize.json"
    assert f"saved {model_path}, {stats_path}" in err
    model = Reinforce.load(model_path)
    assert model.num_timesteps > 0
    stats = VecNormalizeStats.from_json(json.loads(stats_path.read_text()))
    assert isinstance(stats.obs_rms, RunningMeanStd)
    assert stats.obs_rms.count > 1
    assert not [p.name for p in run.iterdir() if ".tmp-" in p.name]


# ------------------------------------------------------------------------------------------- benchmark records


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux's /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while we looked
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs: a zombie, ended but not yet reaped by its new parent, does not."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from Linux's /proc")
def test_a_terminated_benchmark_takes_its_workers_with_it(tmp_path: Path) -> None:
    """`kill` (SIGTERM) of the driver, as a scheduler preempts a job: before, its worker trained on, orphaned."""
    argv = ["benchmark", "--envs", "CartPole-v1", "--seeds", "2", "--jobs", "2", "--n-timesteps", "100000000"]
    child = subprocess.Popen(
        zoo_command(*argv, "--out", str(tmp_path)), env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    workers: list[int] = []
    try:
        # The event: both runs have started training (each has made its folder of partial work).
        runs = tmp_path / "runs" / "reinforce" / "CartPole-v1"
        deadline = time.monotonic() + 240
        while len(list(runs.glob("seed*.partial"))) < 2 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert child.poll() is None, child.communicate()[1][-2000:]
        workers = [pid for pid in children_of(child.pid) if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()]
        assert len(workers) == 2
        child.terminate()
        _, err = child.communicate(timeout=120)
        assert child.returncode == 130, err[-2000:]
        assert "Traceback" not in err
        deadline = time.monotonic() + 60
        while any(map(alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in workers if alive(pid)], "a worker outlived its driver"
    finally:
        for pid in [child.pid, *workers]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    ("field", "value"), [("n_timesteps", 10**400), ("mean_reward", -(10**400)), ("curve_timesteps", [10**400])]
)
def test_a_record_with_a_number_past_a_floats_range_is_measured_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: Any
) -> None:
    """A valid JSON integer of 400 digits: before, an OverflowError traceback while tabulating."""
    argv = ["benchmark", "--quick", "--seeds", "1", "--jobs", "1", "--out", str(tmp_path), "--n-timesteps", "600"]
    assert cli(argv) == 0
    record = tmp_path / "runs" / "reinforce" / "CartPole-v1" / "seed0" / "result.json"
    data = json.loads(record.read_text())
    record.write_text(json.dumps({**data, field: value}))
    capsys.readouterr()
    assert cli(argv) == 0
    captured = capsys.readouterr()
    assert f"warning: {record} is corrupt (" in captured.err
    assert "Traceback" not in captured.err
    assert "1 runs, 0 already done, 1 to do" in captured.out
    assert json.loads(record.read_text())[field] == data[field]


def test_benchmark_redoes_a_corrupt_record_and_refuses_runs_of_another_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A finished run as `zoo benchmark --n-timesteps 600` leaves it, whose result.json was then half-written (a
    crash or a full disk): before, the table crashed with a JSONDecodeError and the seed was never redone; and a
    resumed benchmark with another --n-timesteps silently reused it."""
    folder = tmp_path / "runs" / "reinforce" / "CartPole-v1" / "seed0"
    folder.mkdir(parents=True)
    (folder / "config.yml").write_text(
        yaml.safe_dump(Task("reinforce", "CartPole-v1", 0, 600, str(tmp_path)).config_data(), sort_keys=False)
    )
    record = folder / "result.json"
    record.write_text('{"algo": "reinforce", "env_id": "CartPole-v1", "seed": 0, "n_timesteps": 6')

    argv = ["benchmark", "--quick", "--seeds", "1", "--jobs", "1", "--out", str(tmp_path), "--n-timesteps", "600"]
    assert cli(argv) == 0
    captured = capsys.readouterr()
    assert f"warning: {record} is corrupt (JSONDecodeError" in captured.err
    assert "1 runs, 0 already done, 1 to do" in captured.out
    assert json.loads(record.read_text())["n_timesteps"] >= 600
    assert "| CartPole-v1 | reinforce |" in (tmp_path / "benchmark.md").read_text()

    assert cli([*argv[:-1], "800"]) == 2
    line = one_error_line(capsys)
    assert "1 finished runs were measured with another configuration" in line
    assert "n_timesteps 600, now 800" in line
    assert yaml.safe_load((folder / "config.yml").read_text())["n_timesteps"] == 600
