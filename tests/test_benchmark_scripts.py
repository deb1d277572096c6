"""The benchmark scripts run end to end in-process on tiny settings (their timings themselves are not tested)."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecNormalize

from sb3_reinforce import Reinforce
from tests.helpers import run_record
from zoo.normalization import VecNormalizeStats

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_script(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the scripts import their shared `_common` from there
    spec = importlib.util.spec_from_file_location(f"{name}_script", BENCHMARKS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_time_to_solve_records_wall_clock_and_cpu_time_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_script("time_to_solve", monkeypatch)
    # A threshold any policy reaches (a CartPole episode lasts >= 8 steps) at the first evaluation.
    monkeypatch.setattr(module, "TARGETS", {"CartPole-v1": (5.0, 512)})
    monkeypatch.setattr(module, "EVAL_EPISODES", 3)
    argv = ["--env", "CartPole-v1", "--seeds", "1", "--algos", "reinforce", "ppo", "--out", str(tmp_path)]

    assert module.main(argv) == 0

    folder = tmp_path / "time_to_solve"
    for name in ("reinforce", "ppo"):
        record = json.loads((folder / f"{name}_seed0.json").read_text())
        assert record["solved"] is True
        assert 0 < record["steps"] <= 2048 + 512  # the first evaluation, up to one PPO rollout late
        # One process, one torch thread: the CPU time is positive and at most about the wall-clock.
        assert 0 < record["train_cpu_seconds"] <= record["train_seconds"] * 1.1 + 0.5
    table = (tmp_path / "time_to_solve.md").read_text()
    assert "the ratio is of CPU times" in table
    assert "| ppo | 1/1 |" in table
    assert table.count("| 1.00 |") >= 1  # PPO against itself
    capsys.readouterr()

    assert module.main(argv) == 0  # resumed: nothing is trained again
    assert "solved=" not in capsys.readouterr().out


def test_time_to_solve_trains_a_normalizing_entry_through_its_statistics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_script("time_to_solve", monkeypatch)
    monkeypatch.setattr(module, "TARGETS", {"Pendulum-v1": (-4000.0, 512)})  # below any Pendulum return
    monkeypatch.setattr(module, "EVAL_EPISODES", 2)
    trained_on = []

    def make_model(config: Any, env: Any, seed: int) -> Any:
        trained_on.append(env)
        return build(config, env, seed)

    build = module.make_model
    monkeypatch.setattr(module, "make_model", make_model)
    assert module.main(["--env", "Pendulum-v1", "--seeds", "1", "--algos", "reinforce", "--out", str(tmp_path)]) == 0
    assert [type(env).__name__ for env in trained_on] == ["VecNormalize"]  # the entry says normalize: true
    assert json.loads((tmp_path / "time_to_solve" / "Pendulum-v1" / "reinforce_seed0.json").read_text())["solved"]
    capsys.readouterr()


def test_render_mode_plays_the_same_lunar_lander_trajectories_rendered_or_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_script("render_mode", monkeypatch)
    result = module.measure(steps=300, seed=1)
    assert result["identical"] is True
    assert result["us_per_step_unrendered"] > 0
    assert result["us_per_step_rgb_array"] > 0

    assert module.main(["--steps", "50", "--out", str(tmp_path)]) == 0
    assert "| None |" in (tmp_path / "render_mode.md").read_text()
    capsys.readouterr()


def test_quota_rows_is_the_longest_envs_total(monkeypatch: pytest.MonkeyPatch) -> None:
    module = load_script("cost_breakdown", monkeypatch)
    # 5 episodes over 2 envs: quotas 3 and 2, so env 0 steps 1 + 9 + 9 and env 1 steps 1 + 5.
    assert module.quota_rows([1, 9, 9, 1, 5], 2) == 19
    assert module.quota_rows([4, 4], 4) == 4


def test_cost_breakdown_accounts_for_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_script("cost_breakdown", monkeypatch)
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    assert module.main(["--env", "Pendulum-v1", "--steps", "1600"]) == 0
    table = (tmp_path / "cost_breakdown_Pendulum-v1.md").read_text()
    assert table in capsys.readouterr().out
    shares = {line.split("|")[1].strip(): line.split("|")[2] for line in table.splitlines() if line.count("|") == 4}
    assert {"collection", "policy step", "critic fit", "total"} <= shares.keys()
    parts = sum(float(shares[phase]) for phase in shares if phase not in ("phase", "total") and "---" not in phase)
    assert parts == pytest.approx(float(shares["total"]), abs=0.2)
    assert float(shares["critic fit"]) > 0  # Pendulum's entry fits its critic 80 passes per update


def test_critic_fit_measures_the_constructors_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_script("critic_fit", monkeypatch)
    argv = ["--env", "CartPole-v1", "--defaults", "--steps", "300", "--fits", "1x64", "--seeds", "0"]
    assert module.main([*argv, "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "CartPole-v1_defaults" / "epochs1_batch64_seed0.json").read_text())
    assert (record["vf_n_epochs"], record["vf_batch_size"], record["defaults"]) == (1, 64, True)
    assert record["baseline"] == "value"  # the critic it measures: the default baseline, "loo", has none
    assert record["n_timesteps"] >= 300
    assert record["train_cpu_seconds"] > 0
    assert "| 1 | 64 | 0 |" in capsys.readouterr().out


def test_default_baseline_compares_baselines_of_the_defaults_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_script("default_baseline", monkeypatch)
    argv = ["--envs", "CartPole-v1", "--steps", "800", "--baselines", "value", "loo", "--seeds", "2"]
    assert module.main([*argv, "--out", str(tmp_path / "runs")]) == 0
    records = {
        (baseline, seed): json.loads((tmp_path / "runs" / "CartPole-v1" / f"{baseline}_seed{seed}.json").read_text())
        for baseline in ("value", "loo")
        for seed in (0, 1)
    }
    assert {(r["baseline"], r["seed"]) for r in records.values()} == set(records)
    assert all(r["n_timesteps"] >= 800 and r["train_cpu_seconds"] > 0 for r in records.values())
    assert all(len(r["curve"]) >= 2 for r in records.values()), "evaluated along training"
    table = (tmp_path / "runs.md").read_text()
    assert "| CartPole-v1 (800 steps) | value | 2 |" in table
    # value against itself: the probability of improvement is exactly 1/2.
    assert "| 0.50 [" in table.splitlines()[-4]
    assert "| CartPole-v1 | loo | 2 |" in table
    capsys.readouterr()
    # A second invocation trains nothing: every record is read back.
    monkeypatch.setattr(module, "run", lambda *args: pytest.fail(f"trained again: {args}"))
    assert module.main([*argv, "--out", str(tmp_path / "runs")]) == 0
    with pytest.raises(SystemExit):
        module.main([*argv, "--reference", "mean", "--out", str(tmp_path / "runs")])
    assert "--reference 'mean' must be one of --baselines" in capsys.readouterr().err


def test_cost_breakdown_of_the_defaults_names_the_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_script("cost_breakdown", monkeypatch)
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    argv = ["--env", "CartPole-v1", "--steps", "300", "--defaults", "--hyperparams", "vf_n_epochs=2"]
    assert module.main(argv) == 0
    table = (tmp_path / "cost_breakdown_CartPole-v1_defaults_vf_n_epochs2.md").read_text()
    assert "Reinforce's defaults on CartPole-v1 (8 envs) with vf_n_epochs=2" in table
    assert "--defaults --hyperparams vf_n_epochs=2`" in table
    capsys.readouterr()


def test_release_check_reports_an_entry_that_no_longer_runs_tuning_md_s_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = load_script("release_check", monkeypatch)
    commands = release.tuning_md_commands()
    assert commands, "TUNING.md has no `python -m zoo tune` command"
    before = release.tuning_problems()
    real_get_config = release.get_config

    def changed_entry(algo: str, env_id: str, overrides: dict[str, Any]) -> Any:
        # A changed number in the entry that no TUNING.md candidate sets itself.
        return real_get_config(algo, env_id, overrides).with_overrides({"max_grad_norm": 0.123})

    monkeypatch.setattr(release, "get_config", changed_entry)
    after = release.tuning_problems()
    assert len(after) == len(commands) > len(before)
    assert all("no longer runs its recorded configuration" in problem for problem in set(after) - set(before))


def packaged_cards(root: Path, env_ids: list[str]) -> Path:
    """``root/hub_cards`` with the text files (no weights, zip or replay) of these packaged agents."""
    cards = root / "hub_cards"
    for env_id in env_ids:
        (cards / env_id).mkdir(parents=True)
        for name in ("config.yml", "config.json", "results.json", "README.md"):
            (cards / env_id / name).write_bytes((BENCHMARKS.parent / "hub_cards" / env_id / name).read_bytes())
    return cards


def test_release_check_reports_an_entry_without_a_packaged_agent_and_an_agent_without_an_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = load_script("release_check", monkeypatch)
    cards = packaged_cards(tmp_path, ["CartPole-v1", "Pendulum-v1"])
    assert release.packaging_problems(cards, ["CartPole-v1", "Pendulum-v1"]) == []
    assert release.packaging_problems(cards, ["CartPole-v1", "Pendulum-v1", "Acrobot-v1"]) == [
        "hub_cards has no packaged agent for the entry Acrobot-v1"
    ]
    assert release.packaging_problems(cards, ["CartPole-v1"]) == [
        "hub_cards/Pendulum-v1 packages an agent for an env that reinforce.yml has no entry for"
    ]


def test_release_check_reports_a_card_that_does_not_repeat_its_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = load_script("release_check", monkeypatch)
    cards = packaged_cards(tmp_path, ["CartPole-v1", "Pendulum-v1"])
    assert release.card_record_problems(cards) == []
    results_file = cards / "Pendulum-v1" / "results.json"
    results = json.loads(results_file.read_text())
    results_file.write_text(json.dumps({**results, "mean_reward": results["mean_reward"] + 1.0}))
    problems = release.card_record_problems(cards)
    assert problems[0] == "hub_cards/Pendulum-v1/results.json: mean_reward is not its episodes' mean"
    assert problems[1].startswith("hub_cards/Pendulum-v1/README.md does not repeat its results.json: ")
    assert len(problems) == 2


def test_release_check_reports_a_card_without_its_evaluation_over_seeds_or_its_benchmark_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every card carries 50 episodes over 5 eval seeds with how each ended and the machine it ran on, and is the
    benchmark's run that it names, scoring what the benchmark's records say."""
    release = load_script("release_check", monkeypatch)
    cards = packaged_cards(tmp_path, ["CartPole-v1", "Pendulum-v1"])
    results_file = cards / "Pendulum-v1" / "results.json"
    results = json.loads(results_file.read_text())
    first = results["eval_seeds"][0]["episodes"]
    one_seed = {
        **results,
        "n_eval_episodes": first,
        "eval_seeds": results["eval_seeds"][:1],
        "episode_rewards": results["episode_rewards"][:first],
        "episode_lengths": results["episode_lengths"][:first],
        "machine": {},
    }
    del one_seed["episode_truncated"]
    one_seed["mean_reward"] = float(np.mean(one_seed["episode_rewards"]))
    one_seed["std_reward"] = float(np.std(one_seed["episode_rewards"]))
    scores = [{**entry, "mean_reward": entry["mean_reward"] + 1} for entry in results["benchmark"]["scores"]]
    one_seed["benchmark"] = {**results["benchmark"], "scores": scores}
    results_file.write_text(json.dumps(one_seed))
    problems = [p for p in release.card_record_problems(cards) if "README.md does not repeat" not in p]
    seed = results["benchmark"]["seed"]
    assert problems[:3] == [
        "hub_cards/Pendulum-v1: its evaluation is not 50 episodes over 5 eval seeds",
        "hub_cards/Pendulum-v1: its results.json does not say how each episode ended",
        "hub_cards/Pendulum-v1: its results.json does not name the cpu, torch it was evaluated with",
    ]
    assert f"hub_cards/Pendulum-v1: its benchmark seed {seed} scores otherwise in " in "\n".join(problems[3:])
    assert len(problems) == 3 + len(scores)


def test_release_check_compares_a_packaged_agent_with_the_entry_under_todays_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = load_script("release_check", monkeypatch)
    cards = packaged_cards(tmp_path, ["CartPole-v1", "Pendulum-v1"])
    assert release.card_problems(cards) == []
    real_get_config = release.get_config

    def entry_without_its_critic_passes(algo: str, env_id: str) -> Any:
        # The packaged Pendulum-v1 agent fit its critic in 80 passes, as its entry writes; without the key, the
        # entry runs today's default instead. CartPole-v1's (baseline: mean) has no critic to change.
        return real_get_config(algo, env_id).without(["vf_n_epochs"])

    monkeypatch.setattr(release, "get_config", entry_without_its_critic_passes)
    assert release.card_problems(cards) == [
        "hub_cards/Pendulum-v1 was packaged from another configuration than today's entry: vf_n_epochs 80, now 2"
    ]


def test_convert_vecnormalize_keeps_the_statistics_without_the_pickle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    convert = load_script("convert_vecnormalize", monkeypatch)
    env = VecNormalize(make_vec_env("Pendulum-v1", n_envs=2, seed=0), gamma=0.9, clip_obs=5.0)
    env.reset()
    for _ in range(20):
        env.step(np.ones((2, 1), dtype=np.float32))
    run = tmp_path / "runs" / "reinforce" / "Pendulum-v1" / "seed0"
    run.mkdir(parents=True)
    env.save(str(run / "vecnormalize.pkl"))

    assert convert.main([str(tmp_path / "runs")]) == 0
    assert [p.name for p in run.iterdir()] == ["vec_normalize.json"]
    stats = VecNormalizeStats.from_json(json.loads((run / "vec_normalize.json").read_text()))
    assert stats.settings() == {**VecNormalizeStats.from_vec_normalize(env).settings(), "gamma": 0.9, "clip_obs": 5.0}
    assert isinstance(stats.obs_rms, RunningMeanStd)
    for mine, theirs in ((stats.obs_rms, env.obs_rms), (stats.ret_rms, env.ret_rms)):
        np.testing.assert_array_equal(mine.mean, theirs.mean)
        np.testing.assert_array_equal(mine.var, theirs.var)
        assert mine.count == theirs.count > 20
    assert "converted 1 vecnormalize.pkl to vec_normalize.json" in capsys.readouterr().out
    assert convert.main([str(tmp_path / "runs")]) == 0  # nothing left to convert
    assert "converted 0 " in capsys.readouterr().out


def test_gradient_variance_measures_every_baseline_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_script("gradient_variance", monkeypatch)
    argv = ["--envs", "CartPole-v1", "--policies", "initial", "trained", "--batches", "3", "--warmup", "1"]
    argv += ["--directions", "2", "--out", str(tmp_path)]

    assert module.main(argv) == 0
    assert capsys.readouterr().out.count("measured in") == 2
    table = (tmp_path / "gradient_variance.md").read_text()
    assert "Reproduce: `python benchmarks/gradient_variance.py --envs CartPole-v1 --policies initial trained " in table
    with open(tmp_path / "gradient_variance.csv", newline="") as handle:
        rows = {(row["policy"], row["regime"], row["variant"]): row for row in csv.DictReader(handle)}
    names = ["none", "mean", "value", "value lambda=1", "loo", "loo G2", "loo G4", "loo G8", "grpo G4", "grpo G8"]
    policies, regimes = ("initial", "trained"), ("raw", "normalized")
    assert set(rows) == {(policy, regime, name) for policy in policies for regime in regimes for name in names}
    for policy in ("initial", "trained"):
        assert float(rows[policy, "raw", "mean"]["ratio_to_mean"]) == 1.0
        # Standardizing removes the batch mean, so none and mean take one gradient on the same batches.
        none, mean = rows[policy, "normalized", "none"], rows[policy, "normalized", "mean"]
        assert float(none["variance"]) == pytest.approx(float(mean["variance"]), rel=1e-6)
    # The initial policy's episodes differ in length: loo has returns to compare, so its gradient is not 0.
    assert rows["initial", "raw", "loo"]["all_zero"] == "False"
    assert float(rows["initial", "raw", "loo"]["variance"]) > 0

    assert module.main(argv) == 0  # resumed: nothing measured again
    assert "measured in" not in capsys.readouterr().out

    # A record of another packaged agent (the card was repackaged since) is measured again, alone.
    trained = next((tmp_path / "gradient_variance").glob("CartPole-v1_trained_*.json"))
    record = json.loads(trained.read_text())
    assert record["agent_sha256"] == rows["trained", "raw", "mean"]["agent_sha256"] != ""
    trained.write_text(json.dumps({**record, "agent_sha256": "0" * 64}))
    assert module.main(argv) == 0
    assert capsys.readouterr().out.count("measured in") == 1


@pytest.mark.parametrize(("baseline", "normalize"), [("mean", True), ("loo", False), ("value", False)])
def test_gradient_variance_takes_the_gradient_that_training_steps_along(
    baseline: str, normalize: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = load_script("gradient_variance", monkeypatch)
    model = Reinforce(
        "MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_episodes=4, baseline=baseline,
        normalize_advantage=normalize, max_grad_norm=None, seed=0, device="cpu", policy_kwargs={"net_arch": [8]},
    )  # fmt: skip
    module.collect(model)
    batch = module.read_batch(model)
    if baseline == "value":
        advantages = module.value_advantages(model, batch)[0]
    else:
        advantages = module.critic_free_advantages(model, baseline, batch.mask)
    actor = module.actor_parameters(model)
    expected = module.gradient(batch, advantages, normalize, actor)

    model.train()  # the policy step leaves the gradient of its loss, -(A * log pi).mean(), on the actor
    trained = th.cat([-parameter.grad.reshape(-1) for parameter in actor]).double().numpy()
    np.testing.assert_allclose(expected, trained, rtol=1e-5, atol=1e-8)
    assert np.abs(expected).max() > 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--n-episodes", "6"], "--n-episodes must be >= 2 and a multiple of every group size"),
        (["--batches", "1"], "--batches must be >= 2"),
        (["--envs", "NoSuchEnv-v0"], "unknown env id"),
        (["--early-fraction", "1.5"], "--early-fraction must be in"),
    ],
)
def test_gradient_variance_refuses_bad_settings_before_any_work(
    flags: list[str], message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_script("gradient_variance", monkeypatch)
    monkeypatch.setattr(module, "measure", None)  # never reached
    with pytest.raises(SystemExit) as raised:
        module.main(flags)
    assert raised.value.code == 2
    assert message in capsys.readouterr().err


def fake_run(
    folder: Path, env_id: str, seed: int, score: float, baseline: str, budget: int = 1000, **hyperparams: Any
) -> None:
    run = folder / "runs" / "reinforce" / env_id / f"seed{seed}"
    run.mkdir(parents=True)
    hyperparams = {"baseline": baseline, **hyperparams}
    config = {"algo": "reinforce", "env_id": env_id, "n_timesteps": budget, "hyperparams": hyperparams}
    (run / "config.yml").write_text(json.dumps(config))  # JSON is YAML
    record = {
        "mean_reward": score,
        "train_cpu_seconds": 2.0,
        "curve_timesteps": [500, 1000],
        "curve_mean_reward": [score / 2, score],
    }
    (run / "result.json").write_text(json.dumps(record))


def test_baseline_learning_compares_the_seeds_both_sides_finished_at_one_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_script("baseline_learning", monkeypatch)
    entries, loo = tmp_path / "zoo", tmp_path / "loo"
    for seed, score in enumerate([10.0, 20.0, 30.0]):
        fake_run(entries, "CartPole-v1", seed, score, "mean")
    for seed, score in enumerate([40.0, 50.0]):  # seed 2 unfinished: compared on seeds 0 and 1
        fake_run(loo, "CartPole-v1", seed, score, "loo")
    fake_run(entries, "Pendulum-v1", 0, -200.0, "value", budget=1000)
    fake_run(loo, "Pendulum-v1", 0, -150.0, "loo", budget=2000)  # another budget: not compared
    # The entry changed since the variant ran (its initial noise): not a comparison of baselines either.
    fake_run(entries, "Hopper-v5", 0, 2000.0, "value", gae_lambda=0.95, policy_kwargs={"log_std_init": 0.0})
    fake_run(loo, "Hopper-v5", 0, 1000.0, "loo", gae_lambda=1.0, policy_kwargs={"log_std_init": -0.5})
    argv = ["--variant", f"loo={loo}", "--entries", str(entries), "--out", str(tmp_path / "out")]
    assert module.main(argv) == 0
    table = (tmp_path / "out.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| CartPole-v1"))
    # Every loo run beats every entry run: P = 1; the entry side is seeds 0 and 1 only (IQM 15).
    assert row.startswith("| CartPole-v1 | 2 | mean | 15.0 [")
    assert row.endswith("| 1.00 [1.00, 1.00] |")
    assert "Pendulum-v1" not in table
    assert "Hopper-v5" not in table
    err = capsys.readouterr().err
    assert "Pendulum-v1: loo was trained on 2000 steps, the entry on 1000; left out" in err
    assert "Hopper-v5: loo differs from the entry in policy_kwargs too; left out" in err
    assert (tmp_path / "out" / "plots" / "CartPole-v1.png").stat().st_size > 0
    with pytest.raises(SystemExit):
        module.main(["--variant", "loo", "--out", str(tmp_path / "out")])


def test_equal_compute_compares_reinforce_at_ppos_compute_with_ppo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_script("equal_compute", monkeypatch)
    equal, zoo_runs = tmp_path / "equal_compute", tmp_path / "runs"

    def write(folder: Path, algo: str, scores: list[float], steps: int) -> None:
        for seed, score in enumerate(scores):
            (folder / f"seed{seed}").mkdir(parents=True)
            record = {**run_record(algo, "Hopper-v5", seed), "mean_reward": score, "n_timesteps": steps}
            (folder / f"seed{seed}" / "result.json").write_text(json.dumps(record))

    write(equal / "Hopper-v5" / "runs" / "reinforce" / "Hopper-v5", "reinforce", [3000.0, 3600.0], 2_968_597)
    write(zoo_runs / "ppo" / "Hopper-v5", "ppo", [3400.0, 3500.0, 3300.0], 1_000_000)
    write(zoo_runs / "reinforce" / "Hopper-v5", "reinforce", [2400.0, 2500.0], 1_000_000)
    monkeypatch.setattr(module, "EQUAL", equal)
    monkeypatch.setattr(module, "ZOO_RUNS", zoo_runs)
    assert module.main([]) == 0
    summary = (equal / "summary.md").read_text()
    # One of two Reinforce runs beats every PPO run, the other none: P = 0.5.
    assert "| Hopper-v5 | 2,968,597 | 2, 3300.0 [3000.0, 3600.0] | 3000.0, 3600.0 |" in summary
    assert "Across the 1 tasks: P(Reinforce > PPO) = 0.50" in summary
    capsys.readouterr()


def test_cost_ratio_measures_each_algorithm_on_its_own_core(tmp_path: Path) -> None:
    pytest.importorskip("mujoco", reason="the mujoco extra is not installed")
    # A process of its own, as it is run: its workers import the script's functions by the module's name.
    argv = ["--envs", "InvertedPendulum-v5", "--steps", "256", "--name", "smoke", "--out", str(tmp_path)]
    script = str(BENCHMARKS / "cost_ratio.py")
    subprocess.run([sys.executable, script, *argv], check=True, capture_output=True, timeout=600)
    table = (tmp_path / "smoke.md").read_text()
    assert "`python benchmarks/cost_ratio.py --steps 256 --name smoke --envs InvertedPendulum-v5`" in table
    (row,) = [line for line in table.splitlines() if line.startswith("| InvertedPendulum-v5 |")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    reinforce, ppo, ratio = float(cells[1].split()[0]), float(cells[2]), float(cells[3])
    assert reinforce > 0
    assert ratio == pytest.approx(ppo / reinforce, rel=0.01)
