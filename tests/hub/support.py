"""Constants and helpers of the Hub tests (the fixtures are in conftest.py)."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from huggingface_hub import CommitOperationAdd, HfApi, ModelCard, constants
from stable_baselines3.common.vec_env import VecNormalize

from sb3_reinforce import Reinforce
from zoo.config import RunConfig
from zoo.hub import PushOptions, PushResult, push_to_hub
from zoo.hub.video import is_mujoco
from zoo.normalization import VecNormalizeStats

TOKEN = "hf_test_write_token"
ENV_ID = "CartPole-v1"
ROOT = Path(__file__).resolve().parents[2]
PUSHED = {
    "README.md",
    "config.json",
    "config.yml",
    "manifest.json",
    "model.safetensors",
    "reinforce-CartPole-v1.zip",
    "results.json",
}
HYPERPARAMS = {"learning_rate": 0.01, "n_episodes": 4, "policy_kwargs": {"net_arch": [16], "activation_fn": "tanh"}}


def use_endpoint(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """Point huggingface_hub, and so the zoo, at ``url``.

    huggingface_hub reads HF_ENDPOINT into ``constants.ENDPOINT`` and its URL template once, when first imported
    (possibly by another test module): the test re-reads it here. Both must change together: ``hf_hub_url`` swaps
    the ``ENDPOINT`` prefix of the template, so patching one alone would send downloads to the real Hub.
    """
    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setattr(constants, "ENDPOINT", url)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", url + "/{repo_id}/resolve/{revision}/{filename}")


def skip_without_mujoco(env_id: str) -> None:
    """Skip the calling test, saying why, when ``env_id`` is a MuJoCo task and the mujoco extra is not installed:
    gymnasium registers those envs anyway, and fails with DependencyNotInstalled only when one is made."""
    if is_mujoco(env_id):
        pytest.importorskip("mujoco", reason="the mujoco extra is not installed")


def repo(name: str) -> str:
    """A fresh repository id, so that tests do not depend on one another's pushes."""
    return f"tester/{name}-{uuid.uuid4().hex[:8]}"


def run_config(normalize: bool | dict[str, Any] = False) -> RunConfig:
    return RunConfig.from_data(
        {
            "algo": "reinforce",
            "env_id": ENV_ID,
            "n_timesteps": 2000,
            "n_envs": 4,
            "normalize": normalize,
            "hyperparams": HYPERPARAMS,
        }
    )


def with_manifest(files: dict[str, bytes]) -> dict[str, bytes]:
    """``files`` and a manifest.json that vouches for each of them."""
    entries = {name: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()} for name, data in files.items()}
    document = {"format": "sb3-reinforce-agent/manifest", "format_version": 1, "files": entries}
    return {**files, "manifest.json": json.dumps(document).encode()}


def upload_agent(hub_url: str, repo_id: str, files: dict[str, bytes], *, manifest: bool = True) -> None:
    """A repository holding ``files`` in one commit, with a manifest.json that vouches for them unless told not to:
    what someone publishing a malicious or broken agent can do."""
    if manifest:
        files = with_manifest(files)
    api = HfApi(endpoint=hub_url, token=TOKEN)
    api.create_repo(repo_id, exist_ok=True)
    operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=data) for name, data in files.items()]
    api.create_commit(repo_id, operations, commit_message="upload")


def observations(n: int = 64) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(n, 4)).astype(np.float32) * np.array([1, 2, 0.2, 2], np.float32)


def greedy(agent: Any, obs: np.ndarray) -> np.ndarray:
    return np.asarray(agent.predict(obs, deterministic=True)[0])


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def push(
    model: Reinforce,
    repo_id: str,
    *,
    config: RunConfig | None = None,
    vec_normalize: VecNormalize | None = None,
    **options: Any,
) -> PushResult:
    """``push_to_hub`` of ``model`` with the test run's config, 40-frame replays, 10 evaluation episodes over 2 eval
    seeds (a card's 50 over 5 are a push's defaults, tested once) and ``options`` (PushOptions')."""
    stats = None if vec_normalize is None else VecNormalizeStats.from_vec_normalize(vec_normalize)
    return push_to_hub(
        model,
        ENV_ID,
        repo_id,
        options=PushOptions(**{"video_length": 40, "n_eval_episodes": 10, "n_eval_seeds": 2, **options}),
        config=config or run_config(),
        vec_normalize=stats,
    )


def check_card(text: str, results: dict[str, Any], repo_id: str) -> None:
    card = ModelCard(text)
    data = card.data.to_dict()
    assert data["library_name"] == "stable-baselines3"
    assert data["license"] == "mit"
    assert "https://github.com/sb3-reinforce/sb3-reinforce" in card.text
    assert "https://github.com/sb3-reinforce/sb3-reinforce/tree/main/docs" in card.text
    assert 'pip install "sb3-reinforce[zoo] @ git+https://github.com/sb3-reinforce/sb3-reinforce"' in card.text
    assert {
        "reinforcement-learning",
        "stable-baselines3",
        "deep-reinforcement-learning",
        "sb3-reinforce",
        ENV_ID,
    } <= set(data["tags"])
    result = data["model-index"][0]["results"][0]
    assert result["dataset"]["type"] == result["dataset"]["name"] == ENV_ID
    metric = result["metrics"][0]
    assert metric["type"] == "mean_reward"
    assert metric["value"] == f"{results['mean_reward']:.2f} +/- {results['std_reward']:.2f}"
    assert f"| mean reward | {metric['value']} |" in card.text
    assert f"python -m zoo enjoy --repo-id {repo_id}" in card.text
    assert f'load_from_hub("{repo_id}")' in card.text
    assert "python -m zoo train" in card.text
    assert "| `learning_rate` | `0.01` |" in card.text


def is_mp4(path: Path) -> int:
    """The number of frames imageio reads back from a real MP4 (its 'ftyp' box checked first)."""
    import imageio.v2 as imageio

    assert path.read_bytes()[4:8] == b"ftyp"
    reader: Any = imageio.get_reader(str(path), format="FFMPEG")
    try:
        return sum(1 for _ in reader)
    finally:
        reader.close()


def within_card(replayed: list[float], results: dict[str, Any]) -> None:
    """The median of ``replayed`` episodes lies within the central 90% of the card's own episodes (results.json),
    with 1% of slack for a card whose episodes all scored the same: what a packaged agent promises on any CPU
    (tests/hub/test_package.py's card test says why a median, and why not the digits)."""
    card = np.asarray(results["episode_rewards"])
    low, high = np.quantile(card, 0.05), np.quantile(card, 0.95)
    slack = 0.01 * abs(float(np.median(card)))
    median = float(np.median(replayed))
    assert low - slack <= median <= high + slack, f"median {median:.2f}, the card's 5-95%: {low:.2f} to {high:.2f}"
