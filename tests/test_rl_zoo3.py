"""``python -m zoo.rl_zoo3``: rl_zoo3's own train, enjoy and -optimize with ``--algo reinforce`` (the rl-zoo3 extra)."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("rl_zoo3", reason="the rl-zoo3 extra is not installed")

import optuna
import torch as th
from stable_baselines3.common.utils import LinearSchedule

from sb3_reinforce import Reinforce
from tests.helpers import one_error_line
from zoo.cli import main as cli
from zoo.config import get_config
from zoo.episodes import evaluate_episodes
from zoo.factories import make_eval_env
from zoo.rl_zoo3 import main, make_sampler, prune_non_finite, rl_zoo3_entry
from zoo.runs import load_run
from zoo.train import train

TINY = "policy_kwargs:dict(net_arch=[16])"
# Normalization across the two tools: Pendulum with normalize: true, a few updates, played on one seed.
PENDULUM = "Pendulum-v1"
SMALL = {"n_timesteps": 2000, "vf_n_epochs": 1, "policy_kwargs": {"net_arch": [16]}}
PLAY_SEED = 3
EPISODES = 5  # Pendulum's episodes are 200 steps: rl_zoo3's enjoy -n 1000 plays five


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_train_then_load_then_enjoy(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "--algo", "reinforce", "--env", "CartPole-v1", "-n", "3000", "-f", "logs", "--seed", "0"]
    assert main([*argv, "--eval-freq", "-1", "-params", TINY]) == 0
    run = in_tmp / "logs" / "reinforce" / "CartPole-v1_1"
    model = Reinforce.load(run / "CartPole-v1.zip", device="cpu")
    entry = get_config("reinforce", "CartPole-v1")
    assert model.n_episodes == entry.hyperparams["n_episodes"]
    assert model.baseline == entry.hyperparams["baseline"]
    assert model.num_timesteps >= 3000
    saved = dict(yaml.load((run / "CartPole-v1" / "config.yml").read_text(), Loader=yaml.UnsafeLoader))
    assert saved["learning_rate"] == entry.hyperparams["learning_rate"]
    capsys.readouterr()

    assert main(["enjoy", "--algo", "reinforce", "--env", "CartPole-v1", "-f", "logs", "--no-render", "-n", "200"]) == 0
    assert "Mean reward" in capsys.readouterr().out


def test_optimize_samples_the_zoo_space(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "--algo", "reinforce", "--env", "CartPole-v1", "-n", "2000", "-optimize", "--n-trials", "2"]
    argv += ["--n-startup-trials", "2", "--n-evaluations", "1", "--eval-episodes", "2", "-f", "logs", "--seed", "0"]
    assert main([*argv, "--no-optim-plots", "-params", TINY]) == 0
    out = capsys.readouterr().out
    assert "Number of finished trials:  2" in out
    assert "n_episodes" in out  # a parameter of the zoo's search space


def test_the_entry_converts_what_rl_zoo3_does_not() -> None:
    entry = rl_zoo3_entry("Acrobot-v1")
    assert isinstance(entry["learning_rate"], str)  # rl_zoo3 turns lin_<x> into its own schedule
    assert entry["learning_rate"].startswith("lin_")
    assert isinstance(entry["ent_coef"], LinearSchedule)  # rl_zoo3 would pass the string to the constructor
    assert entry["n_timesteps"] == get_config("reinforce", "Acrobot-v1").n_timesteps


def test_the_sampler_resets_what_its_conditions_leave_out() -> None:
    sample = make_sampler("CartPole-v1")
    fixed = {"baseline": "mean", "learning_rate": 1e-3, "n_episodes": 16, "gamma": 0.99, "ent_coef": 0.0}
    fixed |= {"max_grad_norm": 0.5, "normalize_advantage": True}
    fixed |= {
        "policy_kwargs.ortho_init": True,
        "policy_kwargs.activation_fn": "tanh",
        "learning_rate_schedule": "constant",
    }
    kwargs = sample(optuna.trial.FixedTrial(fixed), 2, 8, {})
    assert kwargs["baseline"] == "mean"
    assert kwargs["gae_lambda"] == 1.0  # Reinforce's default: the entry's value would not fit baseline=mean
    Reinforce("MlpPolicy", "CartPole-v1", **{**kwargs, "policy_kwargs": {"net_arch": [8]}})


def test_a_non_finite_trial_is_pruned_not_fatal() -> None:
    def objective(self: Any, trial: Any) -> float:
        raise FloatingPointError("non-finite loss (nan) at update 3")

    trial = optuna.create_study().ask()
    with pytest.raises(optuna.exceptions.TrialPruned, match="non-finite loss"):
        prune_non_finite(objective)(None, trial)


def test_an_unknown_command_is_one_line_and_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["push_to_hub"]) == 2
    assert "usage: python -m zoo.rl_zoo3 {train,enjoy,record_video,convert-stats}" in capsys.readouterr().err


def test_another_algorithm_keeps_rl_zoo3s_own_hyperparameters(in_tmp: Path) -> None:
    argv = ["train", "--algo", "a2c", "--env", "CartPole-v1", "-n", "200", "-f", "logs", "--eval-freq", "-1"]
    assert main(argv) == 0
    saved = yaml.load(
        (in_tmp / "logs" / "a2c" / "CartPole-v1_1" / "CartPole-v1" / "config.yml").read_text(), Loader=yaml.UnsafeLoader
    )
    assert "n_episodes" not in dict(saved)  # Reinforce's entry was not handed to A2C
    assert dict(saved)["ent_coef"] == 0.0  # rl-baselines3-zoo's A2C entry for CartPole-v1


def test_zoo_schedules_and_class_names_are_converted_from_a_conf_file_and_the_command_line(in_tmp: Path) -> None:
    conf = in_tmp / "mine.yml"
    conf.write_text(
        "CartPole-v1:\n  n_envs: 2\n  n_timesteps: 200\n  policy: MlpPolicy\n  n_episodes: 2\n"
        "  vf_learning_rate: lin_1e-3\n  policy_kwargs: {activation_fn: relu, net_arch: [16]}\n"
    )
    argv = ["train", "--algo", "reinforce", "--env", "CartPole-v1", "-f", "logs", "--eval-freq", "-1"]
    assert main([*argv, "--conf-file", str(conf), "--hyperparams", "ent_coef:'lin_0.01'"]) == 0
    model = Reinforce.load(in_tmp / "logs" / "reinforce" / "CartPole-v1_1" / "CartPole-v1.zip", device="cpu")
    assert isinstance(model.ent_coef, LinearSchedule)
    assert model.ent_coef(1.0) == pytest.approx(0.01)
    assert model.policy_kwargs["activation_fn"] is th.nn.ReLU


def test_a_bad_class_name_in_a_conf_file_is_one_line(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = in_tmp / "mine.yml"
    conf.write_text("CartPole-v1:\n  n_timesteps: 200\n  policy: MlpPolicy\n  policy_kwargs: {activation_fn: swish}\n")
    argv = ["train", "--algo", "reinforce", "--env", "CartPole-v1", "-f", "logs", "--conf-file", str(conf)]
    assert main(argv) == 2
    assert "error: policy_kwargs: activation_fn must be one of tanh, relu" in capsys.readouterr().err


@pytest.mark.parametrize("env_flag", [["--env", "MountainCar-v0"], ["--env=Taxi-v3"]])
def test_optimize_outside_the_zoo_is_one_line(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], env_flag: list[str]
) -> None:
    assert main(["train", "--algo", "reinforce", *env_flag, "-optimize", "--n-trials", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "has no entry for" in err
    assert "CartPole-v1" in err


# ------------------------------------------------------------------ VecNormalize statistics across the two tools


@pytest.fixture(scope="module")
def rl_zoo3_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A normalized Pendulum run trained by rl_zoo3's train through the shim."""
    logs = tmp_path_factory.mktemp("rl_zoo3_logs")
    argv = ["train", "--algo", "reinforce", "--env", PENDULUM, "-n", str(SMALL["n_timesteps"]), "-f", str(logs)]
    argv += ["--seed", "0", "--eval-freq", "-1", "-params", "vf_n_epochs:1", TINY]
    assert main(argv) == 0
    return logs / "reinforce" / f"{PENDULUM}_1"


@pytest.fixture(scope="module")
def zoo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A normalized Pendulum run trained by ``zoo train``."""
    logs = tmp_path_factory.mktemp("zoo_logs")
    config = get_config("reinforce", PENDULUM, SMALL)
    result = train(config, seed=1, log_folder=logs, eval_freq=10**6, final_eval_episodes=1, progress_bar=False)
    return result.run_dir


def rl_zoo3_score(logs: Path, capsys: pytest.CaptureFixture[str]) -> float:
    """The mean return rl_zoo3's enjoy (through the shim) prints for the newest Pendulum run under ``logs``."""
    capsys.readouterr()
    argv = ["enjoy", "--algo", "reinforce", "--env", PENDULUM, "-f", str(logs), "--no-render"]
    assert main([*argv, "-n", str(200 * EPISODES), "--seed", str(PLAY_SEED)]) == 0
    out = capsys.readouterr().out
    assert f"{EPISODES} Episodes" in out
    found = re.search(r"Mean reward: (\S+) \+/- ", out)
    assert found is not None, out
    return float(found.group(1))


def zoo_score(model: Path, capsys: pytest.CaptureFixture[str], command: str = "evaluate") -> float:
    """The mean return ``python -m zoo evaluate`` (or ``enjoy`` of a packaged folder) prints."""
    capsys.readouterr()
    flag = "--model" if command == "evaluate" else "--folder"
    argv = [command, "--env", PENDULUM, "--episodes", str(EPISODES), "--seed", str(PLAY_SEED), flag, str(model)]
    # An rl_zoo3 run has no zoo config.yml to rebuild its zip from: loading it unpickles, the user's own run.
    assert cli([*argv, *(["--allow-pickle"] if command == "evaluate" else [])]) == 0
    found = re.search(r"mean_reward =? ?(-?[0-9.]+) \+/- ", capsys.readouterr().out)
    assert found is not None
    return float(found.group(1))


def raw_score(run: Path) -> float:
    """The mean return of the same episodes on raw observations: what the agent scored without its statistics."""
    model = load_run(run, PENDULUM, allow_pickle=True).model
    env = make_eval_env(model, PENDULUM, seed=PLAY_SEED)
    try:
        rewards, _ = evaluate_episodes(model, env, EPISODES)
    finally:
        env.close()
    return sum(rewards) / len(rewards)


def test_zoo_evaluate_enjoy_and_push_of_an_rl_zoo3_run_use_its_statistics(
    rl_zoo3_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    params = rl_zoo3_run / PENDULUM
    assert (params / "vecnormalize.pkl").is_file()  # rl_zoo3's own, which its enjoy reads
    assert (params / "vec_normalize.json").is_file()  # the zoo's, written by the shim's train from memory
    own = rl_zoo3_score(rl_zoo3_run.parent.parent, capsys)
    assert zoo_score(rl_zoo3_run, capsys) == pytest.approx(own, abs=0.011)  # printed to 2 decimals by both
    assert abs(raw_score(rl_zoo3_run) - own) > 5  # not the score of raw observations

    package = tmp_path / "package"
    argv = ["push", "--model", str(rl_zoo3_run), "--env", PENDULUM, "--repo-id", "someone/pendulum", "--no-video"]
    assert cli([*argv, "--dry-run", str(package)]) == 2  # an rl_zoo3 zip is only loaded by unpickling it
    assert "pass --allow-pickle" in capsys.readouterr().err
    assert cli([*argv, "--dry-run", str(package), "--eval-seed", str(PLAY_SEED), "--allow-pickle"]) == 0
    packaged = json.loads((package / "config.json").read_text())
    assert packaged["normalize"]
    assert packaged["train_command"] == (params / "command.txt").read_text().strip()  # rl_zoo3's, not zoo train's
    assert (package / "vec_normalize.json").is_file()
    assert zoo_score(package, capsys, command="enjoy") == pytest.approx(own, abs=0.011)


def test_an_rl_zoo3_run_with_only_its_pickle_is_refused_until_converted(
    rl_zoo3_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run whose statistics are only in SB3's pickle (trained before the shim wrote vec_normalize.json) is not
    unpickled by zoo evaluate: one line names the command that converts it, which the user runs once."""
    run = tmp_path / "reinforce" / f"{PENDULUM}_1"
    shutil.copytree(rl_zoo3_run, run)
    (run / PENDULUM / "vec_normalize.json").unlink()
    pickled = run / PENDULUM / "vecnormalize.pkl"
    real = pickled.read_bytes()
    marker = tmp_path / "ran"

    class Hostile:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.mkdir, (str(marker),))

    pickled.write_bytes(pickle.dumps(Hostile()))
    argv = ["evaluate", "--env", PENDULUM, "--episodes", "1", "--model", str(run), "--allow-pickle"]
    assert cli(argv) == 2
    line = one_error_line(capsys)
    assert "whose VecNormalize statistics are only in SB3's pickle Pendulum-v1/vecnormalize.pkl" in line
    command = re.search(r"`python -m zoo\.rl_zoo3 (convert-stats .*)`$", line)
    assert command is not None
    assert command.group(1) == f"convert-stats {run}"
    assert not marker.exists()  # the pickle was not read

    pickled.write_bytes(real)
    assert main(command.group(1).split(" ", 1)) == 0
    assert pickled.read_bytes() == real  # kept: rl_zoo3's enjoy reads it
    assert zoo_score(run, capsys) == pytest.approx(zoo_score(rl_zoo3_run, capsys), abs=1e-9)


@pytest.mark.parametrize("case", ["not a run", "not a pickle", "another object"])
def test_convert_stats_of_what_it_cannot_convert_is_one_line(
    rl_zoo3_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    run = tmp_path / "run"
    shutil.copytree(rl_zoo3_run, run)
    pickled = run / PENDULUM / "vecnormalize.pkl"
    expected = {
        "not a run": "is not an rl_zoo3 run folder that normalizes: expected <env>/args.yml and <env>/vecnormalize.pkl",
        "not a pickle": "as SB3's VecNormalize pickle",
        "another object": "holds a dict, not a VecNormalize",
    }[case]
    if case == "not a run":
        pickled.unlink()
    elif case == "not a pickle":
        pickled.write_bytes(b"\x80\x04 torn")
    else:
        pickled.write_bytes(pickle.dumps({"obs_rms": None}))
    capsys.readouterr()
    assert main(["convert-stats", str(run)]) == 2
    assert expected in one_error_line(capsys)


def test_rl_zoo3_enjoy_of_a_zoo_run_uses_its_statistics(
    zoo_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (zoo_run / "vec_normalize.json").is_file()
    assert not (zoo_run / PENDULUM).exists()  # no rl_zoo3 parameter folder
    own = zoo_score(zoo_run, capsys)
    assert rl_zoo3_score(zoo_run.parent.parent, capsys) == pytest.approx(own, abs=0.011)
    assert abs(raw_score(zoo_run) - own) > 5

    # A zoo run that normalizes but lost its statistics is refused, as zoo evaluate refuses it.
    run = tmp_path / "reinforce" / f"{PENDULUM}_1"
    shutil.copytree(zoo_run, run)
    (run / "vec_normalize.json").unlink()
    argv = ["enjoy", "--algo", "reinforce", "--env", PENDULUM, "-f", str(tmp_path), "--no-render", "-n", "10"]
    capsys.readouterr()
    assert main(argv) == 2
    assert "says the run normalizes (normalize: True), but vec_normalize.json is missing" in one_error_line(capsys)
