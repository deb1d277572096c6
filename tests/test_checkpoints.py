"""Checkpoints (zoo.checkpoints): a run cut off at a checkpoint goes on from it, to the same budget, in `zoo train` and
`zoo benchmark`; a checkpoint that is corrupt, of another configuration or in use is refused in one line.

A cut is simulated in-process: KeyboardInterrupt raised right after the first checkpoint is written (an event, not a
time). Runs are tiny: CartPole, 2,000 steps, four episodes per update on two envs, a 16-unit network, VecNormalize and
a critic fitted in minibatches (so the statistics, the critic's optimizer and the algorithm's generator all
matter), and the entry's linear learning-rate schedule.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch as th

import zoo.algos
import zoo.checkpoints
import zoo.train
from sb3_reinforce import Reinforce
from tests.helpers import one_error_line
from zoo.benchmark import plan
from zoo.checkpoints import CHECKPOINT_DIR, MANIFEST, exclusive, find_resumable, read_checkpoint, save_checkpoint
from zoo.checks import sha256_file
from zoo.cli import main as cli
from zoo.config import RunConfig, get_config
from zoo.errors import ZooError
from zoo.factories import make_model, training_envs
from zoo.measure import Task, hyperparams_flag, run_task, train_to_staging
from zoo.runs import RESULT_FILE
from zoo.train import TrainResult, train

OVERRIDES: dict[str, Any] = {
    "n_timesteps": 2000,
    "n_envs": 2,
    "n_episodes": 4,
    "policy_kwargs": {"net_arch": [16]},
    "normalize": True,
    "baseline": "value",
    "vf_n_epochs": 2,
    "vf_batch_size": 32,
}
CONFIG = get_config("reinforce", "CartPole-v1", OVERRIDES)
SEED = 3
ROOT = Path(__file__).resolve().parents[1]
EVERY = 600
RUN: dict[str, Any] = {
    "seed": SEED,
    "eval_freq": 500,
    "eval_episodes": 2,
    "final_eval_episodes": 2,
    "progress_bar": False,
    "verbose": 0,
}


@contextmanager
def cut_at_the_first_checkpoint() -> Iterator[list[int]]:
    """Within the block, a run stops (KeyboardInterrupt, as Ctrl-C or a kill would) right after it has written its
    first checkpoint; yields the steps that checkpoint was written at."""
    steps: list[int] = []

    def save_then_cut(run_dir: Path, model: Any, **kwargs: Any) -> Path:
        save_checkpoint(run_dir, model, **kwargs)
        steps.append(model.num_timesteps)
        raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(zoo.train, "save_checkpoint", save_then_cut)
        yield steps


def cut_run(log_folder: Path, config: RunConfig = CONFIG) -> tuple[Path, int]:
    """A run of ``config`` cut at its first checkpoint: its folder and the checkpoint's step."""
    with cut_at_the_first_checkpoint() as steps, pytest.raises(KeyboardInterrupt):
        train(config, log_folder=log_folder, checkpoint_freq=EVERY, **RUN)
    (run_dir,) = (log_folder / "reinforce").iterdir()
    return run_dir, steps[0]


def final_policy(result: TrainResult) -> dict[str, th.Tensor]:
    return Reinforce.load(result.model_path, device="cpu").policy.state_dict()


def same_policy(a: dict[str, th.Tensor], b: dict[str, th.Tensor]) -> bool:
    return a.keys() == b.keys() and all(th.equal(a[key], b[key]) for key in a)


def curve(run_dir: Path) -> dict[str, np.ndarray]:
    with np.load(run_dir / "evaluations.npz") as data:
        return {key: data[key] for key in data.files}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> TrainResult:
    return train(CONFIG, log_folder=tmp_path_factory.mktemp("uninterrupted"), checkpoint_freq=EVERY, **RUN)


@pytest.fixture(scope="module")
def cut(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A cut run, to be copied by each test that resumes or damages it."""
    return cut_run(tmp_path_factory.mktemp("cut"))


def copy_of(run: tuple[Path, int], tmp_path: Path) -> Path:
    return Path(shutil.copytree(run[0], tmp_path / run[0].name))


def test_checkpoints_leave_the_run_unchanged(uninterrupted: TrainResult, tmp_path: Path) -> None:
    written: list[int] = []

    def counted(run_dir: Path, model: Any, **kwargs: Any) -> Path:
        written.append(model.num_timesteps)
        return save_checkpoint(run_dir, model, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(zoo.train, "save_checkpoint", counted)
        checkpointed = train(CONFIG, log_folder=tmp_path, checkpoint_freq=EVERY, **RUN)
    plain = train(CONFIG, log_folder=tmp_path, checkpoint_freq=None, **RUN)
    # One at the first update boundary past each multiple of EVERY, and the finished run keeps none.
    assert len(written) >= 2
    assert all(b // EVERY > a // EVERY for a, b in itertools.pairwise(written))
    assert not (checkpointed.run_dir / CHECKPOINT_DIR).exists()
    assert same_policy(final_policy(checkpointed), final_policy(plain))
    assert same_policy(final_policy(checkpointed), final_policy(uninterrupted))
    for key, values in curve(plain.run_dir).items():
        np.testing.assert_array_equal(curve(checkpointed.run_dir)[key], values)


def test_a_cut_run_goes_on_from_its_checkpoint_to_the_same_budget(
    cut: tuple[Path, int], uninterrupted: TrainResult, tmp_path: Path
) -> None:
    run_dir, at = cut
    checkpoint = read_checkpoint(run_dir)
    assert checkpoint.num_timesteps == at >= EVERY
    assert checkpoint.evaluation.timesteps == [500]  # the curve so far

    first = copy_of(cut, tmp_path / "first")
    second = copy_of(cut, tmp_path / "second")
    resumed = train(CONFIG, resume=first, checkpoint_freq=EVERY, **RUN)
    again = train(CONFIG, resume=second, checkpoint_freq=EVERY, **RUN)

    assert resumed.run_dir == first
    assert resumed.n_timesteps >= CONFIG.n_timesteps
    assert resumed.resumed_at == [at]
    assert not (first / CHECKPOINT_DIR).exists()
    # The learning curve goes on: the evaluations before the checkpoint are the cut run's, which were the
    # uninterrupted run's, and the rest follow at the same steps.
    points = curve(first)
    expected = curve(uninterrupted.run_dir)
    np.testing.assert_array_equal(points["timesteps"], expected["timesteps"])
    np.testing.assert_array_equal(points["results"][:1], expected["results"][:1])
    # progress.csv keeps the rows logged up to the checkpoint, then the resumed run's.
    with (first / "progress.csv").open() as file:
        steps = [int(row["time/total_timesteps"]) for row in csv.DictReader(file)]
    assert steps == sorted(steps)
    assert at in steps
    assert steps[-1] == resumed.n_timesteps
    # Resuming one checkpoint twice gives one run, bit for bit.
    assert same_policy(final_policy(resumed), final_policy(again))
    for key, values in curve(second).items():
        np.testing.assert_array_equal(points[key], values)
    assert (first / "vec_normalize.json").read_text() == (second / "vec_normalize.json").read_text()
    assert resumed.mean_reward == again.mean_reward


def test_a_resumed_run_is_the_uninterrupted_run_bit_for_bit(uninterrupted: TrainResult, tmp_path: Path) -> None:
    """The checkpoint is taken at an update boundary, before the next collection draws anything: resumed from it,
    the run gives back the uninterrupted one, its parameters, learning curve, statistics and final score."""
    run_dir, at = cut_run(tmp_path)
    resumed = train(CONFIG, resume=run_dir, checkpoint_freq=EVERY, **RUN)
    assert resumed.resumed_at == [at]
    assert same_policy(final_policy(resumed), final_policy(uninterrupted))
    for key, values in curve(uninterrupted.run_dir).items():
        np.testing.assert_array_equal(curve(run_dir)[key], values)
    # The curve the result carries is the one written, the points before the checkpoint included.
    written = curve(run_dir)
    assert resumed.curve_timesteps == uninterrupted.curve_timesteps == written["timesteps"].tolist()
    assert resumed.curve_mean_reward == uninterrupted.curve_mean_reward == written["results"].mean(axis=1).tolist()
    assert (run_dir / "vec_normalize.json").read_text() == (uninterrupted.run_dir / "vec_normalize.json").read_text()
    assert resumed.mean_reward == uninterrupted.mean_reward


@pytest.mark.parametrize("normalize", [False, True], ids=["raw", "normalized"])
def test_a_resumed_run_of_same_start_groups_is_the_uninterrupted_run(normalize: bool, tmp_path: Path) -> None:
    """Before: resumed, a run with same-start groups drew one extra seed for SB3's reset of the env, which the
    grouped collection does not use (8,150 steps at 61.05 against 8,066 at 56.85 after a kill -9; here 2,022
    against 2,090); with a VecNormalize, that reset's observations also entered the statistics."""
    grouped = {key: value for key, value in OVERRIDES.items() if not key.startswith("vf_")}
    overrides = {**grouped, "baseline": "loo", "group_size": 2, "normalize": normalize}
    config = get_config("reinforce", "CartPole-v1", overrides)
    whole = train(config, log_folder=tmp_path / "whole", checkpoint_freq=EVERY, **RUN)
    run_dir, at = cut_run(tmp_path / "cut", config)
    resumed = train(config, resume=run_dir, checkpoint_freq=EVERY, **RUN)
    assert resumed.resumed_at == [at]
    assert resumed.n_timesteps == whole.n_timesteps
    assert same_policy(final_policy(resumed), final_policy(whole))
    assert resumed.curve_mean_reward == whole.curve_mean_reward
    assert resumed.mean_reward == whole.mean_reward


TRAIN = [
    "train",
    "--env",
    "CartPole-v1",
    "--seed",
    str(SEED),
    "--n-timesteps",
    "2000",
    "--checkpoint-freq",
    str(EVERY),
    "--no-progress-bar",
    "--verbose",
    "1",
    "--hyperparams",
    "n_envs=2",
    "n_episodes=4",
    "policy_kwargs={net_arch: [16]}",
]


def test_zoo_train_resume_finds_the_interrupted_run_of_the_same_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = [*TRAIN, "--log-folder", str(tmp_path)]
    with cut_at_the_first_checkpoint():
        assert cli(command) == 130
    hint = [line for line in capsys.readouterr().err.splitlines() if line.startswith("to go on from the last")]
    assert hint == [f"to go on from the last checkpoint: {shlex.join(['python', '-m', 'zoo', *command])} --resume"]
    run_dir = tmp_path / "reinforce" / "CartPole-v1_1"
    assert (run_dir / CHECKPOINT_DIR / MANIFEST).is_file()

    # Another seed is another run: it does not take this one's checkpoint.
    assert cli([*command, "--resume", "--seed", "4", "--n-timesteps", "300", "--checkpoint-freq", "0"]) == 0
    assert "no interrupted run of this configuration" in capsys.readouterr().out
    assert (tmp_path / "reinforce" / "CartPole-v1_2").is_dir()

    assert cli([*command, "--resume"]) == 0
    assert f"Resuming {run_dir} at step" in capsys.readouterr().out
    assert not (run_dir / CHECKPOINT_DIR).exists()
    assert sorted(path.name for path in (tmp_path / "reinforce").iterdir()) == ["CartPole-v1_1", "CartPole-v1_2"]


# A `zoo train` that blocks right after its first checkpoint, so that the test kills it there: an event, not a time.
BLOCK_AFTER_THE_FIRST_CHECKPOINT = """
import sys
import zoo.train
from zoo.checkpoints import save_checkpoint
from zoo.cli import main

def save_then_block(*args, **kwargs):
    path = save_checkpoint(*args, **kwargs)
    print("checkpointed", flush=True)
    sys.stdin.readline()
    return path

zoo.train.save_checkpoint = save_then_block
sys.exit(main(sys.argv[1:]))
"""


def test_a_killed_zoo_train_goes_on_with_the_same_command_and_resume(tmp_path: Path) -> None:
    """SIGKILL, as a reboot or a scheduler's last word: no handler runs, nothing is saved at the end, the kernel
    drops the folder's lock. The same command with --resume goes on from the checkpoint."""
    command = [*TRAIN, "--verbose", "0", "--log-folder", str(tmp_path)]
    child = subprocess.Popen(
        [sys.executable, "-c", BLOCK_AFTER_THE_FIRST_CHECKPOINT, *command],
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "checkpointed", child.communicate()[1][-2000:]
    finally:
        child.kill()
        child.communicate()
    run_dir = tmp_path / "reinforce" / "CartPole-v1_1"
    at = read_checkpoint(run_dir).num_timesteps
    assert not (run_dir / "CartPole-v1.zip").exists()  # killed: no final model

    assert cli([*command, "--resume"]) == 0
    assert [path.name for path in (tmp_path / "reinforce").iterdir()] == ["CartPole-v1_1"]
    assert not (run_dir / CHECKPOINT_DIR).exists()
    model = Reinforce.load(run_dir / "CartPole-v1.zip", device="cpu")
    assert model.num_timesteps >= 2000
    # The learning curve (an evaluation every 100 steps) runs on across the cut.
    points = curve(run_dir)["timesteps"].tolist()
    assert points == sorted(set(points))
    assert points[0] < at < points[-1]
    with (run_dir / "progress.csv").open() as file:
        steps = [int(row["time/total_timesteps"]) for row in csv.DictReader(file)]
    assert at in steps
    assert steps == sorted(steps)


def test_a_checkpoint_of_another_configuration_is_refused(
    cut: tuple[Path, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = copy_of(cut, tmp_path)
    overrides = [f"{key}={json.dumps(value)}" for key, value in OVERRIDES.items() if key != "n_timesteps"]
    longer = ["--n-timesteps", "4000", "--hyperparams", *overrides]
    assert cli(["train", "--env", "CartPole-v1", "--seed", str(SEED), *longer, "--resume", str(run_dir)]) == 2
    assert one_error_line(capsys) == (
        f"error: cannot resume {run_dir}: its checkpoint is of another configuration (n_timesteps 2000, now 4000)"
    )
    assert (run_dir / CHECKPOINT_DIR / MANIFEST).is_file()  # refused, not removed


def truncate_state(folder: Path) -> None:
    (state,) = folder.glob("state-*.pt")
    state.write_bytes(state.read_bytes()[:100])


def rewrite_manifest(change: Any) -> Any:
    def rewrite(folder: Path) -> None:
        manifest = folder / MANIFEST
        data = json.loads(manifest.read_text())
        change(data)
        manifest.write_text(json.dumps(data))

    return rewrite


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (truncate_state, r"state-\d+\.pt is corrupt or was modified: 100 bytes"),
        (lambda folder: (folder / MANIFEST).write_text('{"format": "sb3-reinforce-zoo/che'), "is not valid JSON"),
        (rewrite_manifest(lambda data: data.update(num_timesteps="many")), "num_timesteps must be an integer"),
        (
            rewrite_manifest(lambda data: data["generators"].update(algorithm={"bit_generator": "PCG64"})),
            "generators.algorithm is not a generator state",
        ),
        (
            rewrite_manifest(lambda data: data["evaluation"].update(results=[[float("nan")]])),
            "evaluation.results must hold 1 non-empty lists",
        ),
        (rewrite_manifest(lambda data: data["files"]["state"].update(name="../config.yml")), "must be a file name"),
        # Before: a checkpoint past the budget was "resumed", reported finished, and exited 0.
        (
            rewrite_manifest(lambda data: data.update(num_timesteps=10**9)),
            "its checkpoint is at step 1,000,000,000, at or past the run's budget of 2,000 steps",
        ),
        (
            rewrite_manifest(lambda data: data.update(num_timesteps=2000)),
            "its checkpoint is at step 2,000, at or past the run's budget of 2,000 steps",
        ),
    ],
)
def test_a_corrupt_checkpoint_is_refused_in_one_line(
    cut: tuple[Path, int], tmp_path: Path, damage: Any, message: str
) -> None:
    run_dir = copy_of(cut, tmp_path)
    damage(run_dir / CHECKPOINT_DIR)
    with pytest.raises(ZooError, match=message) as raised:
        train(CONFIG, resume=run_dir, **RUN)
    assert "\n" not in str(raised.value)


def test_resume_without_a_folder_passes_over_a_corrupt_checkpoint(
    cut: tuple[Path, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    older, newer = (Path(shutil.copytree(cut[0], tmp_path / "reinforce" / f"CartPole-v1_{k}")) for k in (1, 2))
    truncate_state(newer / CHECKPOINT_DIR)
    assert find_resumable(tmp_path, "reinforce", "CartPole-v1", CONFIG.with_seed(SEED).to_data()) == older
    (warning,) = capsys.readouterr().err.splitlines()
    assert warning.startswith("warning: state-")
    assert "is corrupt or was modified: 100 bytes" in warning
    assert warning.endswith(f"; {newer} cannot be resumed")
    another_seed = CONFIG.with_seed(SEED + 1).to_data()
    assert find_resumable(tmp_path, "reinforce", "CartPole-v1", another_seed) is None


def test_a_checkpointed_state_that_torch_would_have_to_unpickle_is_refused(
    cut: tuple[Path, int], tmp_path: Path
) -> None:
    run_dir = copy_of(cut, tmp_path)
    folder = run_dir / CHECKPOINT_DIR
    (state,) = folder.glob("state-*.pt")
    # A Path is an object that only pickle can rebuild: torch's restricted loader refuses it.
    th.save({"parameters": {}, "torch_rng": th.get_rng_state(), "code": Path("x")}, state)
    record = {"name": state.name, "size": state.stat().st_size, "sha256": sha256_file(state)}
    rewrite_manifest(lambda data: data["files"].update(state=record))(folder)
    with pytest.raises(ZooError, match="cannot be read as a checkpoint"):
        train(CONFIG, resume=run_dir, **RUN)


def test_a_cut_while_a_checkpoint_is_written_leaves_the_previous_one_whole(
    cut: tuple[Path, int], tmp_path: Path
) -> None:
    run_dir = copy_of(cut, tmp_path)
    folder = run_dir / CHECKPOINT_DIR
    write_atomically = zoo.checkpoints.write_atomically

    def cut_before_the_manifest(path: Path, write: Any, what: str = "file") -> Path:
        if path.name == MANIFEST:
            raise KeyboardInterrupt
        return write_atomically(path, write, what)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(zoo.checkpoints, "write_atomically", cut_before_the_manifest)
        with pytest.raises(KeyboardInterrupt):
            train(CONFIG, resume=run_dir, checkpoint_freq=EVERY, **RUN)
    assert len(list(folder.glob("state-*.pt"))) == 2  # the new checkpoint's state was written, never committed
    assert read_checkpoint(run_dir).num_timesteps == cut[1]
    assert train(CONFIG, resume=run_dir, checkpoint_freq=EVERY, **RUN).resumed_at == [cut[1]]


def test_parameters_that_do_not_fit_the_model_are_refused_and_change_no_file(
    cut: tuple[Path, int], tmp_path: Path
) -> None:
    run_dir = copy_of(cut, tmp_path)
    folder = run_dir / CHECKPOINT_DIR
    (state,) = folder.glob("state-*.pt")
    narrower = get_config("reinforce", "CartPole-v1", {**OVERRIDES, "policy_kwargs": {"net_arch": [8]}})
    other = make_model(narrower, training_envs(narrower, SEED)[0], SEED)
    th.save({"parameters": other.get_parameters(), "torch_rng": th.get_rng_state()}, state)
    record = {"name": state.name, "size": state.stat().st_size, "sha256": sha256_file(state)}
    rewrite_manifest(lambda data: data["files"].update(state=record))(folder)
    before = {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}
    with pytest.raises(ZooError, match=r"the saved parameters do not fit the model \(RuntimeError: Error"):
        train(CONFIG, resume=run_dir, **RUN)
    assert {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()} == before


def test_a_run_folder_in_use_is_neither_resumed_nor_found(cut: tuple[Path, int], tmp_path: Path) -> None:
    run_dir = copy_of(cut, tmp_path / "reinforce")
    with exclusive(run_dir):
        with pytest.raises(ZooError, match="in use by another process"):
            train(CONFIG, resume=run_dir, **RUN)
        assert find_resumable(tmp_path, "reinforce", "CartPole-v1", CONFIG.with_seed(SEED).to_data()) is None
    assert find_resumable(tmp_path, "reinforce", "CartPole-v1", CONFIG.with_seed(SEED).to_data()) == run_dir


def test_two_resumes_started_together_take_one_run_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: of two `zoo train --resume` started together, the second found the run the first had just taken and
    exited 2 ("in use"), instead of taking another interrupted run or starting a new one, as the docs promise."""
    command = [*TRAIN, "--log-folder", str(tmp_path)]
    with cut_at_the_first_checkpoint():
        assert cli(command) == 130
        assert cli(command) == 130
    older, newer = (tmp_path / "reinforce" / f"CartPole-v1_{k}" for k in (1, 2))
    real = zoo.train.find_resumable
    found: list[Path | None] = []

    def found_before_it_was_taken(*args: Any) -> Path | None:
        # The race, made certain: the first look finds the newest run free, just before the other process takes it.
        found.append(newer if not found else real(*args))
        return found[-1]

    monkeypatch.setattr(zoo.train, "find_resumable", found_before_it_was_taken)
    with exclusive(newer):  # the other `--resume`, training there
        assert cli([*command, "--resume"]) == 0
    assert found == [newer, older]
    assert not (older / CHECKPOINT_DIR).exists()  # this one finished the free run
    assert (newer / CHECKPOINT_DIR / MANIFEST).is_file()  # and left the taken one to its owner
    capsys.readouterr()


BENCHMARK_HYPERPARAMS = tuple((key, value) for key, value in OVERRIDES.items() if key != "n_timesteps")


def test_the_benchmark_resumes_a_cut_run_and_refuses_one_of_another_configuration(tmp_path: Path) -> None:
    task = Task("reinforce", "CartPole-v1", SEED, 2000, str(tmp_path), BENCHMARK_HYPERPARAMS)
    with cut_at_the_first_checkpoint() as steps, pytest.raises(KeyboardInterrupt):
        run_task(task)
    assert not task.folder.exists()
    assert task.partial.is_dir()
    other = Task("reinforce", "CartPole-v1", SEED, 3000, str(tmp_path), BENCHMARK_HYPERPARAMS)
    with pytest.raises(ZooError, match=r"1 interrupted runs were checkpointed with another configuration, e\.g\. "):
        plan([other])
    assert plan([task]) == ([task], [])

    record = run_task(task)
    assert record["resumed_at"] == steps
    assert record["n_timesteps"] >= 2000
    assert json.loads((task.folder / RESULT_FILE).read_text()) == record
    assert not task.partial.exists()
    assert plan([task]) == ([], [record])


def test_the_benchmark_starts_a_run_with_a_corrupt_checkpoint_over(
    cut: tuple[Path, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = Task("reinforce", "CartPole-v1", SEED, 2000, str(tmp_path), BENCHMARK_HYPERPARAMS)
    run_dir = Path(shutil.copytree(cut[0], task.partial / "reinforce" / cut[0].name))
    truncate_state(run_dir / CHECKPOINT_DIR)
    record, staging = train_to_staging(task, task.partial)
    assert record["resumed_at"] == []
    assert "is corrupt or was modified" in capsys.readouterr().err
    assert RESULT_FILE in {path.name for path in staging.iterdir()}


# Imported by every process of a `zoo benchmark` started with its folder on PYTHONPATH, the spawned workers included:
# each run blocks right after its first checkpoint (an event, not a time), and its Ctrl-C save takes a second, long
# enough for a worker killed as it saves to be seen. Ctrl-C is made to interrupt, as in a terminal: a suite started
# in the background (`&`, a CI runner's job) ignores SIGINT, and the processes it starts would inherit that.
BLOCKING_WORKERS = """
import signal
import time
import zoo.train

signal.signal(signal.SIGINT, signal.default_int_handler)

save_checkpoint, save_final = zoo.train.save_checkpoint, zoo.train.save_final

def save_then_block(*args, **kwargs):
    save_checkpoint(*args, **kwargs)
    while True:
        time.sleep(0.05)

def slow_save_final(*args, **kwargs):
    time.sleep(1.0)
    return save_final(*args, **kwargs)

zoo.train.save_checkpoint, zoo.train.save_final = save_then_block, slow_save_final
"""


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"], ids=["ctrl-c", "kill"])
def test_an_interrupted_benchmark_saves_each_run_whole_and_resumes(signal_name: str, tmp_path: Path) -> None:
    """Ctrl-C in a terminal reaches the driver and its workers; a scheduler's SIGTERM the driver alone. Either way
    each worker saves its run as it is, completely (no temporary file left), the driver waits for that, and the same
    command then resumes every run from its checkpoint."""
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "sitecustomize.py").write_text(BLOCKING_WORKERS)
    out = tmp_path / "out"
    command = [
        *("-m", "zoo", "benchmark", "--envs", "CartPole-v1", "--seeds", "2", "--jobs", "2", "--n-timesteps", "2000"),
        *shlex.split(hyperparams_flag(BENCHMARK_HYPERPARAMS)),
        *("--out", str(out)),
    ]
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    driver = subprocess.Popen(
        [sys.executable, *command],
        env={**environment, "PYTHONPATH": os.pathsep.join([str(patches), str(ROOT)])},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    partials = [out / "runs" / "reinforce" / "CartPole-v1" / f"seed{seed}.partial" for seed in (0, 1)]
    try:
        for partial in partials:
            manifest = partial / "reinforce" / "CartPole-v1_1" / CHECKPOINT_DIR / MANIFEST
            while not manifest.is_file():  # each worker blocks once it is there
                assert driver.poll() is None, driver.communicate()[1][-3000:]
                time.sleep(0.2)
        if signal_name == "SIGINT":
            os.killpg(driver.pid, signal.SIGINT)
        else:
            driver.send_signal(signal.SIGTERM)
        _, err = driver.communicate(timeout=300)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.communicate()
    assert driver.returncode == 130, err[-3000:]
    assert "interrupted: the finished runs are kept" in err, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert err.count("interrupted after") == 2, err[-3000:]
    for partial in partials:
        run_dir = partial / "reinforce" / "CartPole-v1_1"
        assert Reinforce.load(run_dir / "CartPole-v1.zip", device="cpu").num_timesteps < 2000
        assert (run_dir / "vec_normalize.json").is_file()
    assert [path for path in out.rglob("*") if ".tmp-" in path.name] == []
    if signal_name == "SIGTERM":  # what it left is what Ctrl-C left: resuming it once is enough
        return

    resumed = subprocess.run(
        [sys.executable, *command], env={**environment, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    for seed in (0, 1):
        record = json.loads((out / "runs" / "reinforce" / "CartPole-v1" / f"seed{seed}" / RESULT_FILE).read_text())
        assert record["resumed_at"] != [], record
    assert not any(partial.exists() for partial in partials)
