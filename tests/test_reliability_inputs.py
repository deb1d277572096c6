"""Round 4's edges (issue 48): pickles read only as far as SB3's statistics go, files read only when regular and
bounded, counts bounded before anything is built, duplicates refused, scores finite, records sane, one-line errors."""

from __future__ import annotations

import base64
import json
import os
import pickle
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from tests.envs import SpaceEnv
from tests.helpers import one_error_line, run_record
from zoo.benchmark_table import plot_curves
from zoo.checks import read_json
from zoo.cli import main as cli
from zoo.config import config_difference, get_config
from zoo.errors import ZooError
from zoo.measure import check_record, read_record
from zoo.normalization import JSON_FILE, VecNormalizeStats
from zoo.runs import PICKLED_VEC_NORMALIZE, convert_pickled_stats
from zoo.statistics import improvement_interval, probability_of_improvement

ROOT = Path(__file__).resolve().parents[1]

OBSERVATION_SPACES = {
    "box32": spaces.Box(-1, 1, (3,), np.float32),
    "box64": spaces.Box(-1, 1, (2,), np.float64),
    "dict": spaces.Dict({"a": spaces.Box(-1, 1, (2,), np.float32), "b": spaces.Box(0, 1, (1,), np.float32)}),
}
ACTION_SPACES = {
    "discrete": spaces.Discrete(3),
    "box": spaces.Box(-1, 1, (2,), np.float32),
    "multidiscrete": spaces.MultiDiscrete([2, 3]),
    "multibinary": spaces.MultiBinary(4),
}


def sb3_pickle(folder: Path, observation: spaces.Space, action: spaces.Space) -> VecNormalize:
    """``folder/vecnormalize.pkl`` as SB3's own ``VecNormalize.save`` writes it, after one step of statistics."""
    env = VecNormalize(DummyVecEnv([lambda: SpaceEnv(observation, action)]))
    env.reset()
    env.step(np.array([action.sample()]))
    env.save(str(folder / PICKLED_VEC_NORMALIZE))
    return env


@pytest.mark.parametrize("action", ACTION_SPACES, ids=str)
@pytest.mark.parametrize("observation", OBSERVATION_SPACES, ids=str)
def test_sb3s_own_pickles_of_every_space_convert(observation: str, action: str, tmp_path: Path) -> None:
    env = sb3_pickle(tmp_path, OBSERVATION_SPACES[observation], ACTION_SPACES[action])
    written = convert_pickled_stats(tmp_path / PICKLED_VEC_NORMALIZE)
    assert written == tmp_path / JSON_FILE
    assert VecNormalizeStats.from_json(written).to_json() == VecNormalizeStats.from_vec_normalize(env).to_json()


class Payload:
    """A pickle that creates a marker file when it is read: what a hostile vecnormalize.pkl would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, ...]]:
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("command", ["library", "script", "rl_zoo3"])
def test_a_hostile_pickle_runs_nothing(command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: both converters called a bare pickle.load, and the payload ran before its type was checked."""
    marker = tmp_path / "marker"
    run = tmp_path / "run"
    pickled = run / "CartPole-v1" / PICKLED_VEC_NORMALIZE if command == "rl_zoo3" else run / PICKLED_VEC_NORMALIZE
    pickled.parent.mkdir(parents=True)
    pickled.write_bytes(pickle.dumps({"obs_rms": Payload(marker)}))
    if command == "library":
        with pytest.raises(ZooError, match=r"names 'posix\.system', which is not part of SB3's VecNormalize"):
            convert_pickled_stats(pickled)
    elif command == "script":
        script = ROOT / "benchmarks" / "convert_vecnormalize.py"
        done = subprocess.run([sys.executable, str(script), str(run)], capture_output=True, text=True, check=False)
        assert done.returncode == 2
        assert done.stderr.count("\n") == 1, done.stderr  # one line, no ZooError traceback
        assert "refused, and nothing of the file was run" in done.stderr
    else:
        (pickled.parent / "args.yml").write_text("- - env\n  - CartPole-v1\n")
        from zoo.rl_zoo3 import main as rl_zoo3_main

        assert rl_zoo3_main(["convert-stats", str(run)]) == 2
        assert "refused, and nothing of the file was run" in one_error_line(capsys)
    assert not marker.exists()
    assert not (pickled.parent / JSON_FILE).exists()


@pytest.mark.parametrize("special", ["fifo", "device", "folder"])
def test_json_is_read_only_from_a_regular_file(special: str, tmp_path: Path) -> None:
    """Before: read_json checked the size from stat, which is 0 for a FIFO (the read then blocked) and a device
    (/dev/zero: several GB read, then a MemoryError)."""
    path = tmp_path / "vec_normalize.json"
    if special == "fifo":
        os.mkfifo(path)
    elif special == "device":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    with pytest.raises(ZooError, match=r"is not a regular file \((a folder|a device, a FIFO or a socket)\)"):
        read_json(path)


def test_a_huge_result_json_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """Before: read_record read result.json whole, with no size check (a 3 GB file was a MemoryError)."""
    folder = tmp_path / "reinforce" / "CartPole-v1" / "seed0"
    folder.mkdir(parents=True)
    record = run_record()
    (folder / "result.json").write_text(json.dumps({**record, "padding": "x" * (2 << 20)}))
    with pytest.raises(ZooError, match=r"result\.json is corrupt \(.* is larger than 1 MB"):
        read_record(folder)
    (folder / "result.json").unlink()
    (folder / "result.json").symlink_to("/dev/zero")
    with pytest.raises(ZooError, match=r"is not a regular file"):
        read_record(folder)


def test_a_negative_duration_is_not_a_record() -> None:
    for key in ("train_seconds", "train_cpu_seconds"):
        with pytest.raises(ZooError, match=rf"{key} is -5: a duration is not negative"):
            check_record({**run_record(), key: -5})


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_probability_of_improvement_refuses_a_score_that_is_not_finite(bad: float) -> None:
    """Before: with a NaN, P(X > Y) + P(Y > X) fell below 1."""
    x, y = [[1.0, bad, 3.0]], [[2.0, 2.5]]
    with pytest.raises(ValueError, match="every score must be finite"):
        probability_of_improvement(x, y)
    with pytest.raises(ValueError, match="every score must be finite"):
        improvement_interval(y, x, reps=10)
    finite = [[1.0, 3.0]]
    assert probability_of_improvement(finite, y) + probability_of_improvement(y, finite) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--envs", "CartPole-v1", "CartPole-v1"], "--envs names CartPole-v1 more than once"),
        (["--envs", "CartPole-v1", "--seeds", "CartPole-v1=1", "CartPole-v1=2"], "--seeds names CartPole-v1 twice"),
        (["--envs", "CartPole-v1", "--seeds", "1000000000"], "--seeds takes at most 1,024 seeds an env"),
        (["--envs", "CartPole-v1", "--baseline-seeds", "5000"], "--baseline-seeds takes at most 1,024 seeds an env"),
    ],
)
def test_benchmark_counts_each_env_and_seed_once_and_bounds_them(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: duplicated envs counted every seed twice (and collided on one folder with --jobs 2), the last of
    duplicated --seeds was taken silently, and --seeds 1000000000 built a billion tasks first."""
    assert cli(["benchmark", *argv, "--table-only", "--out", str(tmp_path)]) == 2
    assert message in one_error_line(capsys)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["evaluate", "enjoy"])
def test_evaluation_episodes_are_bounded(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: --episodes 10**9 was accepted, and the command ran until killed."""
    source = ["--model", "nowhere"] if command == "evaluate" else ["--folder", "nowhere"]
    assert cli([command, *source, "--episodes", str(10**9)]) == 2
    assert one_error_line(capsys) == "error: --episodes must be between 1 and 100,000, got 1,000,000,000"


def test_a_configuration_difference_is_shown_bounded() -> None:
    """Before: a checkpoint whose value was 100,000 characters gave a 100,160-character error line."""
    config = get_config("reinforce", "CartPole-v1").to_data()
    stored = {**config, "env_kwargs": {"note": "x" * 100_000}}
    assert len(config_difference(stored, config) or "") < 400


def test_an_unknown_flag_is_one_line_with_the_way_to_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: argparse printed the whole usage (5 to 12 lines) before the error."""
    assert cli(["train", "--env", "CartPole-v1", "--bogus"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "python -m zoo train: error: unrecognized arguments: --bogus (`python -m zoo train --help` lists the options)\n"
    )


def hostile_zip(source: Path, target: Path, marker: Path) -> None:
    """``source`` (an SB3 zip) written to ``target`` with its observation space replaced by a pickled payload that
    creates ``marker``: what SB3's load would unpickle, and run."""
    payload = base64.b64encode(pickle.dumps(Payload(marker))).decode()
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as copy:
        for item in original.infolist():
            content = original.read(item.filename)
            if item.filename == "data":
                data = json.loads(content)
                data["observation_space"] = {":type:": "<class 'gymnasium.spaces.box.Box'>", ":serialized:": payload}
                content = json.dumps(data).encode()
            copy.writestr(item, content)


def test_a_run_zip_is_rebuilt_without_unpickling_and_a_bare_one_needs_allow_pickle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `zoo evaluate --model agent.zip` (and `zoo push` of its folder) ran the code pickled into the zip's
    data, silently, while `zoo enjoy` asked for --allow-pickle for the same file."""
    argv = ["train", "--env", "CartPole-v1", "--n-timesteps", "1000", "--log-folder", str(tmp_path / "logs")]
    assert cli([*argv, "--no-progress-bar", "--verbose", "0", "--hyperparams", "policy_kwargs={net_arch: [8]}"]) == 0
    run = tmp_path / "logs" / "reinforce" / "CartPole-v1_1"
    assert cli(["evaluate", "--model", str(run), "--episodes", "3"]) == 0
    honest = capsys.readouterr().out
    marker = tmp_path / "marker"
    hostile_zip(run / "CartPole-v1.zip", run / "CartPole-v1.zip.new", marker)
    (run / "CartPole-v1.zip.new").replace(run / "CartPole-v1.zip")
    # With its config.yml, the zip is rebuilt: the same greedy agent, and the payload never runs.
    assert cli(["evaluate", "--model", str(run), "--episodes", "3"]) == 0
    assert capsys.readouterr().out == honest
    assert not marker.exists()
    # Without it, refused in one line; only --allow-pickle loads it as SB3 does (and so runs the payload).
    bare = tmp_path / "bare.zip"
    shutil.copy(run / "CartPole-v1.zip", bare)
    assert cli(["evaluate", "--model", str(bare), "--env", "CartPole-v1"]) == 2
    assert one_error_line(capsys).startswith(f"error: {bare} has no config.yml beside it to rebuild it from")
    assert not marker.exists()
    cli(["evaluate", "--model", str(bare), "--env", "CartPole-v1", "--allow-pickle", "--episodes", "1"])
    capsys.readouterr()
    assert marker.exists()


def test_curves_that_cannot_be_drawn_cost_their_plot_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: learning curves of +/-1e308 passed the record check, then crashed the plot ("Axis limits cannot be
    NaN or Inf") before any table was written. Now the benchmark writes the table first, and the plot is skipped."""
    records = [{**run_record(seed=k), "curve_mean_reward": [-1e308, 1e308]} for k in range(2)]
    for record in records:
        record["curve_timesteps"] = [1000, 2000]
        check_record(record)
    assert plot_curves(records, tmp_path) == []
    assert "warning: no learning-curve plot for CartPole-v1: " in capsys.readouterr().err
    source = (ROOT / "zoo" / "benchmark.py").read_text()
    assert source.index("write_table(rows, out") < source.index("plot_curves(records, out)")


def test_evaluate_checks_a_packaged_folder_against_its_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `zoo evaluate --model PACKAGE` ignored manifest.json and scored a modified vec_normalize.json, where
    `zoo enjoy --folder` refused the same folder."""
    package = tmp_path / "Pendulum-v1"
    shutil.copytree(ROOT / "hub_cards" / "Pendulum-v1", package)
    stats = json.loads((package / JSON_FILE).read_text())
    (package / JSON_FILE).write_text(json.dumps({**stats, "clip_obs": 5.0}))
    for command in (["evaluate", "--model"], ["enjoy", "--folder"]):
        assert cli([*command, str(package), "--episodes", "1"]) == 2
        assert f"{JSON_FILE} is corrupt or was modified" in one_error_line(capsys)


def test_the_parameters_of_a_critic_into_a_critic_free_model_are_one_clear_error(tmp_path: Path) -> None:
    """Before: SB3's set_parameters called load_state_dict on the missing critic optimizer (a NoneType
    AttributeError)."""
    from stable_baselines3.common.env_util import make_vec_env

    from sb3_reinforce import Reinforce

    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    Reinforce("MlpPolicy", env, baseline="value", n_episodes=2, seed=0).save(tmp_path / "critic")
    free = Reinforce("MlpPolicy", env, baseline="loo", n_episodes=2, seed=0)
    with pytest.raises(ValueError, match=r"fits a critic \(their vf_optimizer\), and this one does not"):
        free.set_parameters(str(tmp_path / "critic.zip"))
    same = Reinforce("MlpPolicy", env, baseline="value", n_episodes=2, seed=1)
    same.set_parameters(str(tmp_path / "critic.zip"))  # a model of the same kind still takes them


class NanStartEnv(SpaceEnv):
    """SpaceEnv whose first observation is NaN."""

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        observation, info = super().reset(seed=seed, options=options)
        return np.full_like(observation, np.nan), info


def test_a_nan_start_with_same_start_groups_is_named_as_such() -> None:
    """Before: a NaN first observation with group_size=2 was blamed on the seed ("envs 0 and 0 ... start from
    different observations")."""
    from stable_baselines3.common.env_util import make_vec_env

    from sb3_reinforce import Reinforce

    space = spaces.Box(-1, 1, (3,), np.float32)
    env = make_vec_env(lambda: NanStartEnv(space, spaces.Discrete(2)), n_envs=2, seed=0)
    model = Reinforce("MlpPolicy", env, baseline="loo", group_size=2, n_episodes=2, seed=0)
    with pytest.raises(FloatingPointError, match=r"non-finite observation \(nan\)"):
        model.learn(20)
