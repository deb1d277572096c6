"""The zoo's hyperparameter files and commands, run in-process with tiny budgets."""

from __future__ import annotations

import csv
import dataclasses
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecNormalize

from sb3_reinforce import Reinforce
from sb3_reinforce.variants import VARIANTS
from tests.helpers import one_error_line
from zoo import config as zoo_config
from zoo import factories
from zoo.algos import resolve, unresolve
from zoo.cli import COMMANDS
from zoo.cli import main as cli
from zoo.config import ZOO_KEYS, RunConfig, get_config, known_env_ids, load_file
from zoo.errors import ZooError
from zoo.machine import cpu_model
from zoo.normalization import VecNormalizeStats
from zoo.parsers import parse_overrides
from zoo.runs import VEC_NORMALIZE_JSON
from zoo.train import train

ZOO_ENVS = ["CartPole-v1", "Acrobot-v1", "LunarLander-v3", "Pendulum-v1", "MountainCarContinuous-v0"]
PENDULUM_CARD = Path(__file__).resolve().parents[1] / "hub_cards" / "Pendulum-v1"


def test_every_zoo_env_has_a_valid_entry_for_every_algorithm() -> None:
    for algo in ("reinforce", "a2c", "ppo"):
        for env_id in load_file(algo):
            if env_id == "default":
                continue
            name, _, variant = env_id.partition("/")
            config = get_config(algo, name, variant=variant or None)
            assert config.n_timesteps > 0
            assert isinstance(config.algorithm_kwargs(), dict)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_variant_entries_equal_the_library_variants(variant: str) -> None:
    config = get_config("reinforce", "CartPole-v1", variant=variant)
    assert config.algorithm_kwargs() == VARIANTS[variant]
    # The entry refers to VARIANTS (one source of truth) rather than copying its hyperparameters.
    entry = load_file("reinforce")[f"CartPole-v1/{variant}"]
    assert entry["variant"] == variant
    assert set(entry) <= set(ZOO_KEYS)


def test_config_round_trips_through_data() -> None:
    config = get_config("reinforce", "CartPole-v1", variant="reference")
    data = yaml.safe_load(yaml.safe_dump(config.with_seed(3).to_data()))
    assert data["seed"] == 3
    assert RunConfig.from_data(data) == config.with_seed(3)
    assert RunConfig.from_data(config.to_data()) == config
    assert "seed" not in config.to_data()
    assert unresolve(resolve(config.hyperparams)) == config.hyperparams


def test_a_config_is_frozen_and_its_data_is_a_copy() -> None:
    config = get_config("reinforce", "CartPole-v1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.n_envs = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.seed = 1  # type: ignore[misc]
    config.to_data()["hyperparams"]["gamma"] = 0.5
    config.entry()["gamma"] = 0.5
    assert config == get_config("reinforce", "CartPole-v1")


def test_a_seed_is_checked_and_written_after_the_env_id_as_config_yml_orders_it() -> None:
    config = get_config("reinforce", "CartPole-v1")
    seeded = config.with_seed(7)
    assert (seeded.seed, config.seed) == (7, None)
    order = "algo env_id seed n_timesteps n_envs policy normalize env_kwargs hyperparams"
    assert list(seeded.to_data()) == order.split()
    assert seeded.to_data() == {**config.to_data(), "seed": 7}
    for seed in (-1, 2**32, 1.5, True):
        with pytest.raises(ZooError, match=r"seed must be an integer in \[0, 4,294,967,295\]"):
            config.with_seed(seed)  # type: ignore[arg-type]
    data = seeded.to_data()
    with pytest.raises(ZooError, match=r"^run/config.yml: seed must be an integer in \[0, 4,294,967,295\], got -1$"):
        RunConfig.from_data({**data, "seed": -1}, source="run/config.yml")
    assert RunConfig.from_data({**data, "seed": None}) == config  # written null: no seed


def test_overrides_go_where_the_entry_keeps_them_and_keep_the_seed() -> None:
    config = get_config("reinforce", "CartPole-v1").with_seed(5)
    overrides = {"n_envs": 4, "gamma": 0.9, "policy_kwargs": {"net_arch": [8]}}
    changed = config.with_overrides(overrides)
    assert (changed.n_envs, changed.seed) == (4, 5)
    assert changed.hyperparams == {**config.hyperparams, "gamma": 0.9, "policy_kwargs": {"net_arch": [8]}}
    assert "n_envs" not in changed.hyperparams
    assert (config.n_envs, config.hyperparams["gamma"], "policy_kwargs" in config.hyperparams) == (8, 0.995, False)
    assert config.with_overrides({}) is config
    assert changed == get_config("reinforce", "CartPole-v1", overrides).with_seed(5)  # as --hyperparams routes them
    with pytest.raises(ZooError, match=r"^--enqueue 'x': unknown key 'bogus' for reinforce"):
        config.with_overrides({"bogus": 1}, source="--enqueue 'x'")
    with pytest.raises(ZooError, match=r"^overrides: n_envs must be int, got 'four'$"):
        config.with_overrides({"n_envs": "four"})


def test_without_takes_hyperparameters_out_and_leaves_the_zoo_keys() -> None:
    config = get_config("reinforce", "CartPole-v1", {"gamma": 0.9, "n_envs": 4}).with_seed(2)
    taken = config.without(["gamma", "n_envs", "not_set"])
    assert taken.hyperparams == {key: value for key, value in config.hyperparams.items() if key != "gamma"}
    assert (taken.n_envs, taken.seed, config.hyperparams["gamma"]) == (4, 2, 0.9)


def test_a_variant_among_the_overrides_is_expanded_under_the_configs_own_keys() -> None:
    # As `--hyperparams variant=reference` does through get_config: the entry's own values win over the variant's.
    config = get_config("reinforce", "CartPole-v1")
    changed = config.with_overrides({"variant": "reference"})
    assert changed == get_config("reinforce", "CartPole-v1", {"variant": "reference"})
    assert changed.hyperparams["n_episodes"] == config.hyperparams["n_episodes"]
    assert changed.hyperparams["normalize_advantage"] is False  # set by the variant alone
    with pytest.raises(ZooError, match="unknown variant 'bogus'"):
        config.with_overrides({"variant": "bogus"})


def test_default_entry_serves_unknown_envs() -> None:
    assert get_config("reinforce", "MountainCar-v0").n_timesteps == load_file("reinforce")["default"]["n_timesteps"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"bogus": 1}, "unknown key 'bogus' for reinforce"),
        ({"n_envs": "eight"}, "n_envs must be int"),
        ({"normalize": "yes"}, "normalize must be bool or dict"),
        ({"learning_rate": "fast"}, "learning_rate must be a number or 'lin_<initial value>'"),
        ({"policy_kwargs": {"activation_fn": "swish"}}, "policy_kwargs.activation_fn must be one of tanh"),
        ({"gamma": [0.9]}, "gamma must be a scalar"),
        ({"n_timesteps": 0}, "n_timesteps must be >= 1"),
        ({"n_envs": 0}, r"n_envs must be an integer in \[1, 1,024\], got 0"),
        ({"n_envs": 10**6}, r"n_envs must be an integer in \[1, 1,024\]"),
        ({"n_episodes": 2**63 - 1}, r"n_episodes must be an integer in \[2, 100,000\]"),
        ({"vf_n_epochs": 10**9}, r"vf_n_epochs must be an integer in \[0, 10,000\]"),
        ({"vf_batch_size": 1.5}, r"vf_batch_size must be an integer"),
        ({"variant": "nope"}, "unknown variant 'nope' for reinforce; known: reference, entropy, vectorized"),
    ],
)
def test_bad_entries_name_the_key(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ZooError, match=message):
        get_config("reinforce", "CartPole-v1", overrides)


def test_no_entry_and_no_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zoo_config, "load_file", lambda algo: {"CartPole-v1": {"n_timesteps": 10}})
    with pytest.raises(ZooError, match=r"Acrobot-v1 has no entry in reinforce\.yml and there is no default"):
        get_config("reinforce", "Acrobot-v1")


def test_schedules_are_linear() -> None:
    kwargs = resolve({"learning_rate": "lin_1e-3"})
    assert kwargs["learning_rate"](1.0) == pytest.approx(1e-3)
    assert kwargs["learning_rate"](0.5) == pytest.approx(5e-4)


def test_overrides_are_yaml_values() -> None:
    assert parse_overrides(
        ["learning_rate=1e-3", "n_envs=4", "baseline=mean", "max_grad_norm=null", "policy_kwargs={net_arch: [8]}"]
    ) == {
        "learning_rate": 1e-3,
        "n_envs": 4,
        "baseline": "mean",
        "max_grad_norm": None,
        "policy_kwargs": {"net_arch": [8]},
    }
    # YAML 1.1 reads 1e-3 as text, also inside a mapping; the user means a number there too.
    assert parse_overrides(["policy_kwargs={log_std_init: -5e-1}"]) == {"policy_kwargs": {"log_std_init": -0.5}}
    with pytest.raises(ZooError, match="key=value"):
        parse_overrides(["oops"])


def test_training_envs_are_not_rendered_so_lunar_lander_keeps_no_particles() -> None:
    # SB3's make_vec_env defaults to render_mode="rgb_array", in which LunarLander keeps a body per engine firing
    # until the episode ends: its physics slows down step by step. The zoo's envs are made unrendered.
    def particles_after_firing(env: Any) -> int:
        env.reset()
        for _ in range(20):
            env.step(np.array([2]))  # the main engine
        return len(env.envs[0].unwrapped.particles)

    assert particles_after_firing(factories.vec_env("LunarLander-v3", seed=0)) == 0
    assert particles_after_firing(factories.vec_env("LunarLander-v3", seed=0, render_mode="rgb_array")) > 0
    training = factories.run_vec_env(get_config("reinforce", "LunarLander-v3"), seed=0)
    assert all(env.unwrapped.render_mode is None for env in training.envs)


def test_training_envs_normalize_as_the_entry_says() -> None:
    env, eval_env = factories.training_envs(get_config("reinforce", "Pendulum-v1"), seed=0, eval_n_envs=3)
    assert isinstance(env, VecNormalize)
    assert env.training
    assert env.norm_reward
    assert isinstance(eval_env, VecNormalize)  # reads the training statistics, reports raw rewards
    assert not eval_env.training
    assert not eval_env.norm_reward
    assert eval_env.num_envs == 3
    plain, plain_eval = factories.training_envs(get_config("reinforce", "CartPole-v1"), seed=0)
    assert not isinstance(plain, VecNormalize)
    assert not isinstance(plain_eval, VecNormalize)


def test_train_then_evaluate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli(
        [
            "train",
            "--env",
            "CartPole-v1",
            "--n-timesteps",
            "3000",
            "--log-folder",
            str(tmp_path),
            "--no-progress-bar",
            "--verbose",
            "0",
            "--hyperparams",
            "policy_kwargs={net_arch: [16]}",
        ]
    )
    assert code == 0
    run = tmp_path / "reinforce" / "CartPole-v1_1"
    for name in ("CartPole-v1.zip", "best_model.zip", "config.yml", "command.txt", "evaluations.npz", "progress.csv"):
        assert (run / name).is_file(), name
    assert list(run.glob("events.out.tfevents.*"))
    assert "python -m zoo train --env CartPole-v1 --n-timesteps 3000" in (run / "command.txt").read_text()
    saved = yaml.safe_load((run / "config.yml").read_text())
    assert saved["hyperparams"]["policy_kwargs"] == {"net_arch": [16]}
    assert saved["n_timesteps"] == 3000
    capsys.readouterr()

    assert cli(["evaluate", "--env", "CartPole-v1", "--model", str(run / "CartPole-v1.zip"), "--episodes", "3"]) == 0
    out = capsys.readouterr().out
    assert "CartPole-v1: mean_reward = " in out
    assert "over 3 episodes (deterministic, eval seed 12345)" in out
    assert "episode lengths: [" in out


def test_normalized_continuous_run_saves_statistics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        cli(
            [
                "train",
                "--env",
                "Pendulum-v1",
                "--n-timesteps",
                "1600",
                "--log-folder",
                str(tmp_path),
                "--no-progress-bar",
                "--verbose",
                "0",
                "--eval-freq",
                "800",
                "--hyperparams",
                "n_envs=2",
                "n_episodes=2",
                "policy_kwargs={net_arch: [8], log_std_init: -1.0}",
            ]
        )
        == 0
    )
    run = tmp_path / "reinforce" / "Pendulum-v1_1"
    # The pickle-free file a packaged agent keeps too, and no pickle.
    stats = VecNormalizeStats.from_json(json.loads((run / VEC_NORMALIZE_JSON).read_text()))
    assert isinstance(stats.obs_rms, RunningMeanStd)
    assert stats.obs_rms.count > 1
    assert not list(run.glob("*.pkl"))
    assert (
        cli(
            [
                "evaluate",
                "--env",
                "Pendulum-v1",
                "--model",
                str(run / "Pendulum-v1.zip"),
                "--episodes",
                "1",
                "--stochastic",
            ]
        )
        == 0
    )
    assert "over 1 episode (stochastic, eval seed 12345)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fly"], "error: unknown command 'fly'"),
        (["train", "--env", "NoSuchEnv-v0"], "error: unknown env id 'NoSuchEnv-v0'"),
        (
            ["train", "--env", "CartPole-v1", "--hyperparams", "gamma=2", "--n-timesteps", "10", "--verbose", "0"],
            "error: bad hyperparameters for reinforce on CartPole-v1: gamma must be a number in [0, 1], got 2",
        ),
        (["train", "--env", "CartPole-v1", "--variant", "nope"], "error: no variant 'nope' for CartPole-v1"),
        (["evaluate", "--env", "CartPole-v1", "--model", "missing.zip"], "error: model file not found: missing.zip"),
        (["benchmark", "--baselines", "dqn"], "error: unknown baseline 'dqn'"),
        (["train", "--bogus"], "error: the following arguments are required: --env"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli([*argv, *(["--log-folder", str(tmp_path)] if argv[0] == "train" and len(argv) > 4 else [])]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_evaluate_rejects_a_file_that_is_not_a_model_and_a_model_of_another_env(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junk = tmp_path / "junk.zip"
    junk.write_text("not a zip")
    assert cli(["evaluate", "--env", "CartPole-v1", "--model", str(junk)]) == 2
    assert "has no config.yml beside it to rebuild it from" in capsys.readouterr().err
    assert cli(["evaluate", "--env", "CartPole-v1", "--model", str(junk), "--allow-pickle"]) == 2
    assert "is not a model this zoo can load" in capsys.readouterr().err
    assert (
        cli(
            [
                "train",
                "--env",
                "CartPole-v1",
                "--n-timesteps",
                "500",
                "--log-folder",
                str(tmp_path),
                "--no-progress-bar",
                "--verbose",
                "0",
                "--eval-freq",
                "500",
                "--eval-episodes",
                "2",
            ]
        )
        == 0
    )
    model = tmp_path / "reinforce" / "CartPole-v1_1" / "CartPole-v1.zip"
    assert cli(["evaluate", "--env", "Acrobot-v1", "--model", str(model)]) == 2
    assert "the model does not fit Acrobot-v1" in capsys.readouterr().err


def evaluated_mean(capsys: pytest.CaptureFixture[str]) -> float:
    """The mean reward `zoo evaluate` printed."""
    found = re.search(r"mean_reward = (\S+) \+/-", capsys.readouterr().out)
    assert found is not None
    return float(found.group(1))


def test_evaluate_scores_the_packaged_pendulum_agent_as_its_card_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The packaged Pendulum-v1 agent normalizes its observations: evaluated on raw ones, as `zoo evaluate` did when
    it read only a pickle that packaged folders do not have, it scored about -1,100 against its card's -118."""
    results = json.loads((PENDULUM_CARD / "results.json").read_text())
    card, spread = results["mean_reward"], 2 * results["std_reward"]
    # The folder without the zip: what it scores comes from config.json, model.safetensors and vec_normalize.json.
    folder = tmp_path / "Pendulum-v1"
    shutil.copytree(PENDULUM_CARD, folder, ignore=shutil.ignore_patterns("*.zip"))
    episodes = ["--episodes", str(results["n_eval_episodes"]), "--seed", str(results["eval_seed"])]
    for model in (folder, PENDULUM_CARD / "reinforce-Pendulum-v1.zip"):
        assert cli(["evaluate", "--env", "Pendulum-v1", "--model", str(model), *episodes]) == 0
        assert abs(evaluated_mean(capsys) - card) <= spread, model


def test_evaluate_refuses_an_agent_whose_statistics_are_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An agent that normalizes is never evaluated on raw observations: no statistics, one error line."""
    run = tmp_path / "run"
    run.mkdir()
    for name in ("reinforce-Pendulum-v1.zip", "config.yml"):  # config.yml says normalize: true
        shutil.copy(PENDULUM_CARD / name, run / name)
    argv = ["evaluate", "--env", "Pendulum-v1", "--episodes", "1", "--model"]
    assert cli([*argv, str(run / "reinforce-Pendulum-v1.zip")]) == 2
    assert f"{run / 'config.yml'} says the run normalizes (normalize: True), but vec_normalize.json is missing" in (
        one_error_line(capsys)
    )
    # SB3's pickle, which older run folders keep, is not read: the message names the conversion.
    VecNormalize(make_vec_env("Pendulum-v1")).save(str(run / "vecnormalize.pkl"))
    assert cli([*argv, str(run / "reinforce-Pendulum-v1.zip")]) == 2
    assert f"convert it to vec_normalize.json once with `python benchmarks/convert_vecnormalize.py {run}`" in (
        one_error_line(capsys)
    )
    package = tmp_path / "package"
    shutil.copytree(PENDULUM_CARD, package, ignore=shutil.ignore_patterns("vec_normalize.json"))
    assert cli([*argv, str(package)]) == 2
    # A packaged folder is checked against its manifest, as `zoo enjoy --folder` checks it.
    assert one_error_line(capsys).endswith(f"{package}: vec_normalize.json is missing, though manifest.json lists it")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_states_defaults(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: python -m zoo " + command in out
    assert "default" in out
    assert "``" not in out  # no reST markup from the docstrings
    assert re.search(r":[a-z]+:`", out) is None, out  # nor Sphinx roles (benchmark's :mod:`zoo.checkpoints`)
    options = re.split(r"\n  (?=-)", out.split("options:", 1)[1])
    for option in options:
        assert option.count("default") <= 1, option  # each default once
    if command == "evaluate":
        flags = {option.split()[0]: " ".join(option.split()) for option in options if option.strip()}
        assert "default" not in flags["--stochastic"]  # one of a pair of flags is the default, not both


def test_tune_usage_names_its_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["tune", "--help"]) == 0
    assert "usage: python -m zoo tune [run|report|export] --env ENV" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["run", "report", "export"])
def test_each_tune_subcommand_lists_its_own_options(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["tune", command, "--help"]) == 0
    out = capsys.readouterr().out
    assert f"usage: python -m zoo tune {command} [-h] --env ENV" in out
    assert ("--trials" in out, "--force" in out) == (command == "run", command == "export")


def test_tune_without_a_subcommand_is_run_and_takes_no_report_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["tune", "--env", "CartPole-v1", "--help"]) == 0
    assert "usage: python -m zoo tune run [-h] --env ENV" in capsys.readouterr().out
    # `tune report` and `tune export` read a study: the flags that did it before the subcommands are gone.
    for flag in ("--report", "--export"):
        assert cli(["tune", "--env", "CartPole-v1", flag]) == 2
        assert f"unrecognized arguments: {flag}" in capsys.readouterr().err


def test_help_does_not_load_torch() -> None:
    for command in [*COMMANDS, "tune export"]:
        script = (
            "import sys\nfrom zoo.cli import main\ntry:\n"
            f"    main({[*command.split(), '--help']!r})\nexcept SystemExit:\n    pass\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n"
        )
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, (command, result.stderr[-2000:])
        assert "usage: python -m zoo " + command.split()[0] in result.stdout


def test_the_parsers_know_every_algorithm() -> None:
    from zoo.algos import ALGOS
    from zoo.parsers import ALGO_NAMES

    assert list(ALGOS) == ALGO_NAMES


def test_benchmark_quick_writes_the_table_and_resumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["benchmark", "--quick", "--seeds", "2", "--jobs", "2", "--out", str(tmp_path), "--n-timesteps", "4000"]
    assert cli(argv) == 0
    assert "2 runs, 0 already done, 2 to do" in capsys.readouterr().out
    rows = list(csv.DictReader((tmp_path / "benchmark.csv").open()))
    assert [(row["env"], row["algorithm"], row["seeds"]) for row in rows] == [("CartPole-v1", "reinforce", "2")]
    assert float(rows[0]["mean"]) > 9  # an episode of CartPole lasts at least ~9 steps
    # One process, one torch thread: its CPU time is positive and cannot exceed its wall-clock by much.
    assert 0 < float(rows[0]["train_cpu_seconds"]) <= float(rows[0]["train_seconds"]) * 1.1 + 0.5
    table = (tmp_path / "benchmark.md").read_text()
    assert "| CartPole-v1 | reinforce |" in table
    assert "python -m zoo benchmark --quick" in table
    assert f"Machines: {cpu_model()}: 2 runs." in table  # what the wall-clock (and the floats) depend on
    assert (tmp_path / "plots" / "CartPole-v1.png").stat().st_size > 1000
    assert len(list((tmp_path / "runs" / "reinforce" / "CartPole-v1").glob("seed*/CartPole-v1.zip"))) == 2
    assert cli(argv) == 0
    assert "2 runs, 2 already done, 0 to do" in capsys.readouterr().out


def test_benchmark_baselines_take_their_own_number_of_seeds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["benchmark", "--quick", "--seeds", "2", "--baselines", "a2c", "--baseline-seeds", "1", "--jobs", "1"]
    assert cli([*argv, "--out", str(tmp_path), "--n-timesteps", "600"]) == 0
    assert "3 runs, 0 already done, 3 to do" in capsys.readouterr().out
    rows = list(csv.DictReader((tmp_path / "benchmark.csv").open()))
    assert {row["algorithm"]: row["seeds"] for row in rows} == {"reinforce": "2", "a2c": "1"}
    assert (
        "python -m zoo benchmark --quick --seeds 2 --baselines a2c --baseline-seeds 1 --n-timesteps 600"
        in (tmp_path / "benchmark.md").read_text()
    )
    # --table-only trains nothing: a third seed is listed as not yet measured, the table keeps the two.
    table_only = ["benchmark", "--quick", "--seeds", "3", "--table-only", "--n-timesteps", "600"]
    assert cli([*table_only, "--out", str(tmp_path)]) == 0
    assert "1 to do" in capsys.readouterr().out
    table = (tmp_path / "benchmark.md").read_text()
    assert "Not yet measured (1 runs): reinforce CartPole-v1 seed 2." in table
    assert "| CartPole-v1 | reinforce | " in table
    assert not (tmp_path / "runs" / "reinforce" / "CartPole-v1" / "seed2").exists()
    assert cli([*argv[:6], "--baseline-seeds", "0", "--out", str(tmp_path)]) == 2
    assert "--baseline-seeds" in capsys.readouterr().err


def test_benchmark_seeds_can_differ_per_env(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # As the results have it: 10 seeds on the core MuJoCo tasks, 5 elsewhere, in one table.
    argv = ["benchmark", "--envs", "CartPole-v1", "Acrobot-v1", "--seeds", "1", "Acrobot-v1=2", "--table-only"]
    assert cli([*argv, "--n-timesteps", "600", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "3 runs, 0 already done, 3 to do" in out
    assert "reinforce CartPole-v1 seed 0, reinforce Acrobot-v1 seed 0, reinforce Acrobot-v1 seed 1" in out
    assert "--seeds 1 Acrobot-v1=2 --n-timesteps 600" in (tmp_path / "benchmark.md").read_text()
    for seeds, message in [
        (["1", "Pendulum-v1=2"], "--seeds names Pendulum-v1, which is not among the envs benchmarked"),
        (["1", "2"], "--seeds takes one number for every env and ENV=N for others, got 1 and 2"),
        (["Acrobot-v1=0"], "--seeds, --baseline-seeds and --jobs must be >= 1"),
        (["Acrobot-v1=x"], "argument --seeds: expected N or ENV=N with N a whole number, got 'Acrobot-v1=x'"),
    ]:
        assert cli([*argv[:5], *seeds, "--table-only", "--out", str(tmp_path)]) == 2
        assert message in capsys.readouterr().err
    # The baselines' seeds take the same form; by default each env's are Reinforce's.
    baselines = [*argv, "--baselines", "a2c", "--baseline-seeds", "CartPole-v1=3", "--out", str(tmp_path)]
    assert cli(baselines) == 0
    out = capsys.readouterr().out
    assert "8 runs, 0 already done, 8 to do" in out  # reinforce 1 + 2, a2c 3 on CartPole + 2 on Acrobot
    assert "a2c CartPole-v1 seed 2, " in out
    assert "a2c Acrobot-v1 seed 1" in out
    assert cli([*argv, "--baseline-seeds", "Pendulum-v1=1", "--out", str(tmp_path)]) == 2
    assert "--baseline-seeds names Pendulum-v1" in capsys.readouterr().err


def test_benchmark_hyperparams_are_an_ablation_of_reinforce_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["benchmark", "--quick", "--seeds", "1", "--baselines", "a2c", "--baseline-seeds", "1", "--jobs", "1"]
    base += ["--n-timesteps", "600", "--out", str(tmp_path)]
    assert cli([*base, "--hyperparams", "learning_rate=lin_3e-3", "gamma=0.98"]) == 0
    runs = tmp_path / "runs"
    reinforce = yaml.safe_load((runs / "reinforce" / "CartPole-v1" / "seed0" / "config.yml").read_text())
    assert reinforce["hyperparams"]["learning_rate"] == "lin_3e-3"
    assert reinforce["hyperparams"]["gamma"] == 0.98
    a2c = yaml.safe_load((runs / "a2c" / "CartPole-v1" / "seed0" / "config.yml").read_text())
    assert a2c["hyperparams"].get("gamma") != 0.98  # the baselines keep rl-baselines3-zoo's values
    command = "--n-timesteps 600 --hyperparams learning_rate=lin_3e-3 gamma=0.98 --out " + str(tmp_path)
    assert command in (tmp_path / "benchmark.md").read_text()  # the table says how to reproduce the ablation
    # The same folder without the ablation (or with another) is refused, not mixed into one row.
    capsys.readouterr()
    assert cli(base) == 2
    assert "measured with another configuration" in capsys.readouterr().err
    assert cli([*base, "--hyperparams", "gamma=0.97", "learning_rate=lin_3e-3"]) == 2
    assert cli([*base, "--hyperparams", "gamma"]) == 2
    assert "key=value" in capsys.readouterr().err
    assert cli([*base, "--hyperparams", "gamma=0.98", "learning_rate=lin_3e-3"]) == 0  # order does not matter
    assert "2 runs, 2 already done, 0 to do" in capsys.readouterr().out
    # The same schedule spelled another way is the same configuration.
    assert cli([*base, "--hyperparams", "gamma=0.98", "learning_rate=lin_0.003"]) == 0
    assert "2 runs, 2 already done, 0 to do" in capsys.readouterr().out
    assert cli([*base, "--hyperparams", "gamma=0.98", "learning_rate=lin_0.004"]) == 2


def test_benchmark_refuses_a_file_where_a_folder_of_runs_goes_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["benchmark", "--envs", "CartPole-v1", "--seeds", "1", "--jobs", "1", "--n-timesteps", "200"]
    for blocked in ("runs", "runs/reinforce", "runs/reinforce/CartPole-v1", "runs/reinforce/CartPole-v1/seed0"):
        out = tmp_path / blocked.replace("/", "_")
        (out / blocked).parent.mkdir(parents=True)
        (out / blocked).write_text("keep")
        assert cli([*argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"error: {out / blocked} is a file, where the benchmark keeps a folder of runs: move it away"
        assert (out / blocked).read_text() == "keep"
        assert not (out / "benchmark.md").exists()


def test_benchmark_outside_a_checkout_needs_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli(["benchmark", "--envs", "CartPole-v1", "--seeds", "1", "--table-only"]) == 2
    assert "--out is needed here" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no results tree made where the command ran


def test_plot_range_leaves_out_the_untrained_outlier() -> None:
    from zoo.benchmark_table import curve_range

    curve = np.array([-4000.0, -300.0, -100.0, 0.0, 100.0, 150.0, 200.0, 230.0, 250.0, 260.0, 265.0, 270.0])
    low, high = curve_range(curve)
    assert -4000.0 < low < -100.0
    assert high > 270.0


MUJOCO_ENVS = [
    "HalfCheetah-v5",
    "Hopper-v5",
    "Walker2d-v5",
    "Swimmer-v5",
    "InvertedPendulum-v5",
    "InvertedDoublePendulum-v5",
    "Reacher-v5",
    "Ant-v5",
    "Humanoid-v5",
    "HumanoidStandup-v5",
    "Pusher-v5",
]


def test_the_mujoco_entries_are_the_v5_tasks() -> None:
    assert known_env_ids() == ZOO_ENVS + MUJOCO_ENVS


@pytest.mark.parametrize("env_id", MUJOCO_ENVS)
def test_each_mujoco_entry_trains_one_update_and_saves_its_statistics(env_id: str, tmp_path: Path) -> None:
    pytest.importorskip("mujoco", reason="the mujoco extra is not installed")
    entry = get_config("reinforce", env_id)
    tiny = {**entry.hyperparams.get("policy_kwargs", {}), "net_arch": [16]}
    # A budget of 1 step: exactly one collection of the entry's n_episodes episodes, then one update.
    config = get_config("reinforce", env_id, {"n_timesteps": 1, "policy_kwargs": tiny})
    result = train(
        config,
        log_folder=tmp_path,
        eval_freq=10**6,
        eval_episodes=1,
        final_eval_episodes=1,
        progress_bar=False,
        verbose=0,
    )
    assert np.isfinite(result.mean_reward)
    model = Reinforce.load(result.model_path, device="cpu")
    assert model._n_updates == 1
    assert model.num_timesteps >= entry.hyperparams["n_episodes"]
    assert (result.run_dir / VEC_NORMALIZE_JSON).is_file()


def test_train_runs_the_seed_its_config_carries_unless_given_one(tmp_path: Path) -> None:
    config = get_config("reinforce", "CartPole-v1", {"n_timesteps": 1, "n_envs": 2, "n_episodes": 2})
    quick: dict[str, Any] = {"eval_freq": 10**6, "final_eval_episodes": 1, "progress_bar": False, "verbose": 0}
    seeds = []
    for seeded, seed in [(config, None), (config.with_seed(4), None), (config.with_seed(4), 2)]:
        result = train(seeded, seed, log_folder=tmp_path, **quick)
        seeds.append(yaml.safe_load((result.run_dir / "config.yml").read_text())["seed"])
    assert seeds == [0, 4, 2]
