"""A packaged agent loaded the Stable-Baselines3 way: ``huggingface_sb3.load_from_hub`` (the
``sb3-team-hf-integration`` package that rl_zoo3 installs), ``Reinforce.load``, ``VecNormalize.load`` and
``evaluate_policy``, against the local test Hub, as the card's usage section tells an SB3 user to."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from sb3_reinforce import Reinforce
from tests.hub.support import ROOT, repo, within_card
from tests.hub_server import HubServer
from zoo.episodes import play
from zoo.hub import push_folder
from zoo.hub.pull import load_from_hub as zoo_load_from_hub
from zoo.normalization import PICKLE_FILE, VecNormalizeStats
from zoo.runs import load_run

huggingface_sb3 = pytest.importorskip("huggingface_sb3", reason="sb3-team-hf-integration (the rl-zoo3 extra)")

# A normalized agent: without its statistics it scores about -1,100, near random play.
ENV_ID = "Pendulum-v1"
FOLDER = ROOT / "hub_cards" / ENV_ID


def sb3_episodes(model: Reinforce, env: VecEnv, n_episodes: int) -> list[float]:
    rewards, _ = evaluate_policy(model, env, n_eval_episodes=n_episodes, return_episode_rewards=True)
    return [float(r) for r in rewards]  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def card() -> dict:
    return json.loads((FOLDER / "results.json").read_text())


def test_sb3s_own_tools_load_a_normalized_agent_and_score_its_card(
    hub: HubServer, card: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo_id = repo("reinforce-Pendulum-v1")
    push_folder(FOLDER, repo_id)
    zip_name = json.loads((FOLDER / "config.json").read_text())["sb3_zip"]["file"]

    with pytest.raises(ValueError, match="TRUST_REMOTE_CODE"):  # huggingface_sb3's own guard on pickles
        huggingface_sb3.load_from_hub(repo_id, zip_name)
    monkeypatch.setenv("TRUST_REMOTE_CODE", "True")
    model = Reinforce.load(huggingface_sb3.load_from_hub(repo_id, zip_name), device="cpu")
    first = card["eval_seeds"][0]
    env = make_vec_env(ENV_ID, n_envs=1, seed=first["seed"])
    env = VecNormalize.load(huggingface_sb3.load_from_hub(repo_id, PICKLE_FILE), env)
    env.training = False
    env.norm_reward = False
    sb3 = sb3_episodes(model, env, first["episodes"])
    within_card(sb3, card)

    # The zoo's own route to the same agent, on the same CPU in the same process: the same episodes, to the digit.
    run = load_run(FOLDER, ENV_ID)
    zoo = play(run.model, ENV_ID, {}, run.stats, first["episodes"], seed=first["seed"])
    assert zoo.rewards == pytest.approx(sb3, rel=1e-9)

    # Without the statistics, the same zip scores far below its card: the pickle is what SB3 needs.
    raw = sb3_episodes(model, make_vec_env(ENV_ID, n_envs=1, seed=first["seed"]), first["episodes"])
    assert np.median(raw) < np.quantile(card["episode_rewards"], 0.05) - 200


def test_the_pickled_statistics_are_the_json_ones(tmp_path: Path) -> None:
    """vec_normalize.pkl is what SB3's VecNormalize.save writes: frozen, and holding vec_normalize.json's numbers."""
    with (FOLDER / PICKLE_FILE).open("rb") as file:
        pickled = pickle.load(file)  # our own file, in our checkout: trusted
    assert isinstance(pickled, VecNormalize)
    assert pickled.training is False
    stats = VecNormalizeStats.from_json(FOLDER / "vec_normalize.json")
    assert isinstance(stats.obs_rms, RunningMeanStd)
    np.testing.assert_array_equal(pickled.obs_rms.mean, stats.obs_rms.mean)
    np.testing.assert_array_equal(pickled.obs_rms.var, stats.obs_rms.var)
    assert pickled.obs_rms.count == stats.obs_rms.count
    np.testing.assert_array_equal(pickled.ret_rms.var, stats.ret_rms.var)
    assert (pickled.clip_obs, pickled.norm_reward, pickled.gamma) == (stats.clip_obs, stats.norm_reward, stats.gamma)


def test_the_zoos_pull_never_downloads_the_pickle(hub: HubServer) -> None:
    repo_id = repo("reinforce-Pendulum-v1")
    push_folder(FOLDER, repo_id)
    hub.requests.clear()
    agent = zoo_load_from_hub(repo_id)
    assert agent.vec_normalize_stats is not None
    paths = [path for _, path in hub.requests]
    assert any(path.endswith("/vec_normalize.json") for path in paths)
    assert not any(path.endswith((f"/{PICKLE_FILE}", ".zip")) for path in paths)


def test_statistics_come_from_a_path_text_or_mapping(tmp_path: Path) -> None:
    path = FOLDER / "vec_normalize.json"
    text = path.read_text()
    from_mapping = VecNormalizeStats.from_json(json.loads(text))
    for source in (path, str(path), text):
        assert VecNormalizeStats.from_json(source).to_json() == from_mapping.to_json()
    with pytest.raises(Exception, match=r"is not valid JSON"):
        VecNormalizeStats.from_json("{not json")
    with pytest.raises(Exception, match=r"not found"):
        VecNormalizeStats.from_json(tmp_path / "missing.json")
