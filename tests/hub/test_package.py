"""zoo.hub.package, card and video: the folder a push uploads, as a dry run writes it; the packaged zoo agents."""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import tomllib
import yaml
from huggingface_hub import ModelCard

from sb3_reinforce import Reinforce
from tests.helpers import run_record
from tests.hub.support import (
    ENV_ID,
    PUSHED,
    ROOT,
    check_card,
    is_mp4,
    push,
    repo,
    run_config,
    skip_without_mujoco,
    within_card,
)
from tests.hub_server import HubServer
from zoo.agent_format import load_agent
from zoo.config import RunConfig
from zoo.episodes import play
from zoo.errors import ZooError
from zoo.hub import TEMPLATE_PATH, PushOptions, push_run, push_to_hub
from zoo.hub import video as zoo_video
from zoo.hub.card import CPU_TORCH, LICENSE, REPOSITORY_URL, install_command
from zoo.hub.cli import enjoy_main
from zoo.parsers import CARD_EVAL_EPISODES, CARD_EVAL_SEEDS
from zoo.runs import load_run

PACKAGED = sorted(p for p in (ROOT / "hub_cards").iterdir() if p.is_dir())


def test_card_template_is_reached_through_the_package() -> None:
    # Installed from a wheel, the zoo has no hub_cards/ beside it: the template must come with the package.
    assert TEMPLATE_PATH.parent == ROOT / "zoo"
    assert not TEMPLATE_PATH.is_symlink()  # a checkout without symlinks would hold a one-line text file
    assert TEMPLATE_PATH.read_text().startswith("---\n{{ card_data }}\n---\n")  # the template itself, whole
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert TEMPLATE_PATH.name in package_data["zoo"]


def test_dry_run_writes_the_folder_and_makes_no_request(
    model: Reinforce, hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_TOKEN")  # a dry run needs no token either
    hub.requests.clear()
    target = tmp_path / "out" / "dry"
    defaults = PushOptions()
    assert (defaults.n_eval_episodes, defaults.n_eval_seeds) == (CARD_EVAL_EPISODES, CARD_EVAL_SEEDS) == (50, 5)
    evaluation = {"n_eval_episodes": defaults.n_eval_episodes, "n_eval_seeds": defaults.n_eval_seeds}
    result = push(model, "tester/dry-run", dry_run_dir=target, **evaluation)
    assert hub.requests == []
    assert result.folder == target
    assert result.commit is None
    assert {p.name for p in target.iterdir()} == PUSHED | {"replay.mp4"}
    assert [p.name for p in target.parent.iterdir()] == ["dry"]  # no temporary folder left beside it
    assert result.files == {p.name: p.stat().st_size for p in target.iterdir()}
    results = json.loads((target / "results.json").read_text())
    # A push's defaults: 50 episodes, 10 from each of 5 eval seeds, with how each ended and the machine.
    assert results["n_eval_episodes"] == 50
    assert results["deterministic"] is True
    assert len(results["episode_rewards"]) == len(results["episode_truncated"]) == 50
    assert results["eval_seeds"] == [{"seed": 12345 + k, "episodes": 10} for k in range(5)]
    assert set(results["machine"]) >= {"cpu", "torch", "numpy", "gymnasium"}
    assert results["mean_reward"] == pytest.approx(np.mean(results["episode_rewards"]))
    card = (target / "README.md").read_text()
    check_card(card, results, "tester/dry-run")
    # The card says which part of which episode the replay shows, from what was recorded: the first evaluation
    # episode (same eval seed, same greedy policy), cut at video_length=40 frames, one a step.
    replay = results["replay"]
    assert replay == {"frames": is_mp4(target / "replay.mp4"), "episode_length": results["episode_lengths"][0]}
    assert replay["frames"] == min(40, replay["episode_length"])
    if replay["frames"] < replay["episode_length"]:
        assert f"shows the first 40 of the {replay['episode_length']:,} steps of one deterministic episode" in card
    else:
        assert f"shows one whole deterministic episode ({replay['episode_length']:,} steps" in card
    assert yaml.safe_load((target / "config.yml").read_text()) == run_config().with_seed(0).to_data()
    assert RunConfig.from_data(yaml.safe_load((target / "config.yml").read_text())) == run_config().with_seed(0)


def test_the_card_tells_a_whole_replay_from_a_cut_one(model: Reinforce, tmp_path: Path) -> None:
    results = {}
    for name, video_length in (("cut", 3), ("whole", 100_000)):
        push(model, "tester/replay", dry_run_dir=tmp_path / name, video_length=video_length)
        results[name] = json.loads((tmp_path / name / "results.json").read_text())
    length = results["whole"]["episode_lengths"][0]
    assert length > 3
    assert results["cut"]["replay"] == {"frames": 3, "episode_length": length}
    assert results["whole"]["replay"] == {"frames": length, "episode_length": length}
    assert is_mp4(tmp_path / "whole" / "replay.mp4") == length
    cut, whole = ((tmp_path / name / "README.md").read_text() for name in ("cut", "whole"))
    assert f"[`replay.mp4`](replay.mp4) shows the first 3 of the {length:,} steps of one deterministic episode" in cut
    assert f"[`replay.mp4`](replay.mp4) shows one whole deterministic episode ({length:,} steps, eval seed" in whole


def benchmark_runs(model: Reinforce, root: Path, scores: dict[int, float], seed: int) -> Path:
    """``root/runs/reinforce/CartPole-v1/seed<k>/`` as ``zoo benchmark`` leaves them: a result.json for each seed
    of ``scores``, ``model`` with its config.yml in ``seed``'s folder, and a run still training beside them."""
    runs = root / "runs" / "reinforce" / ENV_ID
    for k, score in scores.items():
        (runs / f"seed{k}").mkdir(parents=True)
        record = {**run_record(seed=k), "mean_reward": score}
        if k == seed:
            record["n_timesteps"] = model.num_timesteps
        (runs / f"seed{k}" / "result.json").write_text(json.dumps(record))
    (runs / f"seed{max(scores) + 1}.partial").mkdir()
    model.save(runs / f"seed{seed}" / f"{ENV_ID}.zip")
    config = run_config().with_seed(seed).to_data()
    (runs / f"seed{seed}" / "config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    return runs / f"seed{seed}"


@pytest.mark.parametrize(
    ("scores", "seed", "says"),
    [
        (
            {0: 100.0, 1: 150.0, 2: 120.0},
            1,
            "The agent is seed 1 of `python -m zoo benchmark`, where it scored 150.00 at the end of training: the "
            "best of its 3 seeds. The benchmark's mean over the 3 seeds is 123.33 +/- 20.55",
        ),
        (
            {0: 150.0, 1: 100.0, 2: 150.0},
            1,
            "The agent is seed 1 of `python -m zoo benchmark`, where it scored 100.00 at the end of training, one of "
            "3 seeds, the best of which (seed 0) scored 150.00. The benchmark's mean over the 3 seeds is "
            "133.33 +/- 23.57",
        ),
        (
            {0: 42.0},
            0,
            "The agent is seed 0 of `python -m zoo benchmark`, where it scored 42.00 at the end of training: the "
            "only seed the benchmark has finished.",
        ),
    ],
    ids=["best", "not-best", "one-seed"],
)
def test_a_benchmark_run_gets_its_seeds_on_the_card(
    model: Reinforce, tmp_path: Path, scores: dict[int, float], seed: int, says: str
) -> None:
    run = benchmark_runs(model, tmp_path, scores, seed)
    result = push_run(run, ENV_ID, "tester/bench", PushOptions(dry_run_dir=tmp_path / "out", record_video=False))
    assert result.warnings == []
    benchmark = result.results["benchmark"]
    assert benchmark == {"seed": seed, "scores": [{"seed": k, "mean_reward": v} for k, v in sorted(scores.items())]}
    card = " ".join((tmp_path / "out" / "README.md").read_text().split())
    assert says in card


def test_a_card_leaves_out_a_benchmark_that_is_not_its_models(model: Reinforce, tmp_path: Path) -> None:
    run = benchmark_runs(model, tmp_path, {0: 100.0, 1: 150.0}, 1)
    record = json.loads((run / "result.json").read_text())
    (run / "result.json").write_text(json.dumps({**record, "n_timesteps": model.num_timesteps + 1}))
    result = push_run(run, ENV_ID, "tester/bench", PushOptions(dry_run_dir=tmp_path / "out", record_video=False))
    assert result.warnings == [
        f"{run / 'result.json'} records a run of {model.num_timesteps + 1:,} steps, the model took "
        f"{model.num_timesteps:,}: the card leaves the benchmark out"
    ]
    assert "benchmark" not in result.results
    assert "zoo benchmark" not in (tmp_path / "out" / "README.md").read_text()


def test_the_cards_install_lines_are_the_readmes(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    assert CPU_TORCH in readme.splitlines()
    assert f"git clone {REPOSITORY_URL} " in readme
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"].lower() == LICENSE
    assert install_command("CartPole-v1") == f'pip install "sb3-reinforce[zoo] @ git+{REPOSITORY_URL}"'
    assert install_command("Hopper-v5") == f'pip install "sb3-reinforce[zoo,mujoco] @ git+{REPOSITORY_URL}"'


@pytest.mark.parametrize("failure", ["no ffmpeg", "encoder error"])
def test_failing_recorder_does_not_stop_the_push(
    failure: str,
    model: Reinforce,
    hub: HubServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    if failure == "no ffmpeg":
        monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", str(tmp_path / "missing-ffmpeg"))
        expected = "missing-ffmpeg"
    else:

        def broken(*args: Any, **kwargs: Any) -> int:
            raise RuntimeError("no encoder here")

        monkeypatch.setattr(zoo_video, "write_video", broken)
        expected = "no encoder here"
    repo_id = repo("no-video")
    with caplog.at_level(logging.WARNING, logger="zoo.hub"):
        result = push(model, repo_id)
    assert result.commit is not None
    assert any("replay.mp4" in w and expected in w for w in result.warnings), result.warnings
    assert any(expected in record.getMessage() for record in caplog.records)
    assert set(hub.files(repo_id)) == PUSHED | {".gitattributes"}
    assert "replay.mp4" not in hub.read(repo_id, "README.md").decode()
    assert not list(tmp_path.rglob("*.mp4"))


def test_env_that_does_not_fit_the_agent(model: Reinforce, published: str, tmp_path: Path) -> None:
    with pytest.raises(ZooError, match=r"does not fit MountainCar-v0"):
        enjoy_main(["--repo-id", published, "--env", "MountainCar-v0", "--episodes", "1"])
    target = tmp_path / "out" / "never"
    with pytest.raises(ZooError, match=r"does not fit Acrobot-v1"):
        push_to_hub(model, "Acrobot-v1", "tester/wrong-env", options=PushOptions(dry_run_dir=target))
    assert not (tmp_path / "out").exists()  # nothing half-written, not even the parent folder
    with pytest.raises(ZooError, match=r"n_eval_episodes must be >= 10"):
        push(model, "tester/few", dry_run_dir=target, n_eval_episodes=3)
    with pytest.raises(ZooError, match=r"config is for 'CartPole-v1', not 'Acrobot-v1'"):
        push_to_hub(
            model, "Acrobot-v1", "tester/wrong-env", config=run_config(), options=PushOptions(dry_run_dir=target)
        )


@pytest.mark.parametrize("folder", PACKAGED, ids=lambda p: p.name)
def test_packaged_zoo_agents_match_the_zoo_and_their_cards(folder: Path) -> None:
    env_id = folder.name
    skip_without_mujoco(env_id)
    run = yaml.safe_load((folder / "config.yml").read_text())
    # The card is a record of the run it packages: its config builds, for this env. It need not be today's entry
    # (benchmarks/release_check.py compares them before a release).
    assert RunConfig.from_data(run).env_id == env_id
    results = json.loads((folder / "results.json").read_text())
    assert results["env_id"] == env_id
    assert results["n_eval_episodes"] >= 10
    # That the card repeats results.json, and that every entry has an agent, are release checks
    # (benchmarks/release_check.py): a changed entry or card format needs no retrained agent in the same change.
    card = ModelCard((folder / "README.md").read_text())
    assert (folder / f"reinforce-{env_id}.zip").is_file()
    assert (folder / "replay.mp4").stat().st_size > 1000
    model, _, stats = load_agent(folder, device="cpu")
    env = gym.make(env_id)
    assert model.observation_space == env.observation_space
    assert model.action_space == env.action_space
    assert (stats is not None) == bool(run["normalize"])
    assert card.data.license == "mit"
    assert install_command(env_id) in card.text
    assert results["replay"]["frames"] == is_mp4(folder / "replay.mp4")
    assert "[`replay.mp4`](replay.mp4) shows " in card.text


@pytest.mark.parametrize("folder", PACKAGED, ids=lambda p: p.name)
def test_packaged_zips_load_without_a_warning(folder: Path) -> None:
    # Before, the CartPole-v1 zip, saved by a Reinforce that had one optimizer for the policy and the critic, made
    # SB3 warn of "a DQN model saved with SB3 < 2.4.0" and drop its optimizer state.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Reinforce.load(folder / f"reinforce-{folder.name}.zip", device="cpu")
    assert [str(warning.message) for warning in caught] == []


@pytest.mark.parametrize("folder", PACKAGED, ids=lambda p: p.name)
def test_packaged_zoo_agents_score_what_their_cards_say(folder: Path) -> None:
    """A downloaded agent must score what its card says, on any CPU: `zoo evaluate`'s path (the folder rebuilt
    without pickle, seen through its VecNormalize statistics) replays the card's first eval seed, and the median of
    its episodes lies within the central 90% of the card's own episodes.

    Bit-identical episodes are not promised across CPUs: another CPU rounds differently (AVX-512 on an Intel Xeon
    against an AMD EPYC's), MuJoCo amplifies it, and the same seed plays other episodes of the same agent (the
    Walker2d-v5 agent fell at step 254 of its first eval seed on an Intel host, and not on the card's). What holds
    on every host is the agent's distribution of episodes, which the card samples with 50 episodes from 5 eval
    seeds. A median, because one fall in ten moves a mean by hundreds: if the replayed episodes are new draws of the
    card's distribution, their median misses its 5-95% range only when 5 of 10 land on one side: about 1e-4 (more,
    with the range estimated from 50 episodes, yet rare). An agent seen without its statistics lands far outside
    (tests/hub/test_sb3_route.py)."""
    env_id = folder.name
    skip_without_mujoco(env_id)
    results = json.loads((folder / "results.json").read_text())
    assert results["n_eval_episodes"] >= 50
    assert len(results["eval_seeds"]) >= 5
    first = results["eval_seeds"][0]
    run = load_run(folder, env_id)
    env_kwargs = run.config.env_kwargs if run.config is not None else {}
    replayed = play(run.model, env_id, env_kwargs, run.stats, first["episodes"], seed=first["seed"]).rewards
    within_card(replayed, results)
