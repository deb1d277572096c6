"""``python -m zoo.rl_zoo3``: rl_zoo3's own train, enjoy and -optimize with ``--algo reinforce`` (the rl-zoo3 extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("rl_zoo3", reason="the rl-zoo3 extra is not installed")

import optuna
import torch as th
from stable_baselines3.common.utils import LinearSchedule

from sb3_reinforce import Reinforce
from zoo.config import get_config
from zoo.rl_zoo3 import main, make_sampler, prune_non_finite, rl_zoo3_entry

TINY = "policy_kwargs:dict(net_arch=[16])"


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
    assert "usage: python -m zoo.rl_zoo3 {train,enjoy,record_video}" in capsys.readouterr().err


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
