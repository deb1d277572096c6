"""zoo.hub.package, card and video: the folder a push uploads, as a dry run writes it; the packaged zoo agents."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import tomllib
import yaml
from huggingface_hub import ModelCard

from sb3_reinforce import Reinforce
from tests.hub.support import PUSHED, ROOT, check_card, is_mp4, push, repo, run_config
from tests.hub_server import HubServer
from zoo.agent_format import load_agent
from zoo.config import RunConfig, known_env_ids
from zoo.errors import ZooError
from zoo.hub import TEMPLATE_PATH, push_to_hub
from zoo.hub import video as zoo_video
from zoo.hub.cli import enjoy_main


def test_card_template_is_reached_through_the_package() -> None:
    # Installed from a wheel, the zoo has no hub_cards/ beside it: the template must come with the package.
    assert TEMPLATE_PATH.parent == ROOT / "zoo"
    assert TEMPLATE_PATH.read_bytes() == (ROOT / "hub_cards" / "template.md").read_bytes()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert TEMPLATE_PATH.name in package_data["zoo"]


def test_dry_run_writes_the_folder_and_makes_no_request(
    model: Reinforce, hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_TOKEN")  # a dry run needs no token either
    hub.requests.clear()
    target = tmp_path / "out" / "dry"
    result = push(model, "tester/dry-run", dry_run_dir=target)
    assert hub.requests == []
    assert result.folder == target
    assert result.commit is None
    assert {p.name for p in target.iterdir()} == PUSHED | {"replay.mp4"}
    assert [p.name for p in target.parent.iterdir()] == ["dry"]  # no temporary folder left beside it
    assert result.files == {p.name: p.stat().st_size for p in target.iterdir()}
    results = json.loads((target / "results.json").read_text())
    assert results["n_eval_episodes"] == 10
    assert results["deterministic"] is True
    assert len(results["episode_rewards"]) == 10
    assert results["mean_reward"] == pytest.approx(np.mean(results["episode_rewards"]))
    check_card((target / "README.md").read_text(), results, "tester/dry-run")
    assert 1 <= is_mp4(target / "replay.mp4") <= 40
    assert yaml.safe_load((target / "config.yml").read_text()) == run_config().to_data(0)
    assert RunConfig.from_data(yaml.safe_load((target / "config.yml").read_text())) == run_config()


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
        push_to_hub(model, "Acrobot-v1", "tester/wrong-env", dry_run_dir=target)
    assert not (tmp_path / "out").exists()  # nothing half-written, not even the parent folder
    with pytest.raises(ZooError, match=r"n_eval_episodes must be >= 10"):
        push(model, "tester/few", dry_run_dir=target, n_eval_episodes=3)
    with pytest.raises(ZooError, match=r"config is for 'CartPole-v1', not 'Acrobot-v1'"):
        push_to_hub(model, "Acrobot-v1", "tester/wrong-env", config=run_config(), dry_run_dir=target)


def test_every_zoo_env_has_a_packaged_agent() -> None:
    packaged = {p.name for p in (ROOT / "hub_cards").iterdir() if p.is_dir()}
    assert packaged == set(known_env_ids("reinforce"))


@pytest.mark.parametrize(
    "folder", sorted(p for p in (ROOT / "hub_cards").iterdir() if p.is_dir()), ids=lambda p: p.name
)
def test_packaged_zoo_agents_match_the_zoo_and_their_cards(folder: Path) -> None:
    env_id = folder.name
    run = yaml.safe_load((folder / "config.yml").read_text())
    # The card is a record of the run it packages: its config builds, for this env. It need not be today's entry
    # (benchmarks/release_check.py compares them before a release).
    assert RunConfig.from_data(run).env_id == env_id
    results = json.loads((folder / "results.json").read_text())
    assert results["env_id"] == env_id
    assert results["n_eval_episodes"] >= 10
    assert results["mean_reward"] == pytest.approx(np.mean(results["episode_rewards"]))
    card = ModelCard((folder / "README.md").read_text())
    metric = card.data.to_dict()["model-index"][0]["results"][0]["metrics"][0]["value"]
    assert metric == f"{results['mean_reward']:.2f} +/- {results['std_reward']:.2f}"
    assert (folder / f"reinforce-{env_id}.zip").is_file()
    assert (folder / "replay.mp4").stat().st_size > 1000
    model, _, stats = load_agent(folder, device="cpu")
    env = gym.make(env_id)
    assert model.observation_space == env.observation_space
    assert model.action_space == env.action_space
    assert (stats is not None) == bool(run["normalize"])
