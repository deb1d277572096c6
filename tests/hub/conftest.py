"""Fixtures of the Hub tests: a local Hub-compatible server (tests/hub_server.py), never the internet.

The zoo uses huggingface_hub's endpoint and cache (``constants``), which huggingface_hub reads from HF_ENDPOINT,
HF_HUB_CACHE, HF_HUB_OFFLINE... when it is first imported, possibly by another test module. So the environment
is set here before any import of it (for a run of these tests alone) AND every test points the constants and the
environment at the server again through the autouse ``hub_env`` fixture.
"""

from __future__ import annotations

import os
import tempfile

_HOME = tempfile.mkdtemp(prefix="zoo-hub-tests-")
for _key, _value in {
    "HF_HOME": _HOME,
    "HF_HUB_CACHE": os.path.join(_HOME, "hub"),
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "HF_HUB_DISABLE_UPDATE_CHECK": "1",
    "HF_HUB_DISABLE_XET": "1",
}.items():
    os.environ.setdefault(_key, _value)

from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import yaml  # noqa: E402
from huggingface_hub import constants  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402
from stable_baselines3.common.vec_env import VecNormalize  # noqa: E402

from sb3_reinforce import Reinforce  # noqa: E402
from tests.hub.support import ENV_ID, TOKEN, push, repo, run_config, use_endpoint  # noqa: E402
from tests.hub_server import HubServer  # noqa: E402
from zoo.hub import client  # noqa: E402


@pytest.fixture(scope="session")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    with HubServer(tmp_path_factory.mktemp("hub-server"), tokens={TOKEN: "tester"}) as server:
        yield server


@pytest.fixture(autouse=True)
def hub_env(hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point huggingface_hub and zoo.hub at the local server and a per-test cache, whatever was imported first."""
    cache = tmp_path / "hf-cache"
    use_endpoint(monkeypatch, hub.url)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)  # no agent-registry request to the server
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token-file"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-stored-tokens"))
    monkeypatch.setattr(client, "RETRY_BACKOFF_S", 0.01)
    return cache


@pytest.fixture(scope="session")
def model() -> Reinforce:
    config = run_config()
    agent = Reinforce("MlpPolicy", make_vec_env(ENV_ID, n_envs=4, seed=0), seed=0, **config.algorithm_kwargs())
    return agent.learn(2000)


@pytest.fixture(scope="session")
def normalized() -> tuple[Reinforce, VecNormalize]:
    config = run_config({"norm_obs": True, "norm_reward": True})
    env = VecNormalize(make_vec_env(ENV_ID, n_envs=4, seed=1), gamma=0.99)
    agent = Reinforce("MlpPolicy", env, seed=1, **config.algorithm_kwargs()).learn(500)
    return agent, env


@pytest.fixture(scope="session")
def published(model: Reinforce, hub: HubServer) -> str:
    """An agent pushed once, for the tests that only read it."""
    repo_id = repo("published")
    with pytest.MonkeyPatch.context() as patch:
        use_endpoint(patch, hub.url)
        patch.setenv("HF_TOKEN", TOKEN)
        patch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
        push(model, repo_id, record_video=False)
    return repo_id


@pytest.fixture(scope="session")
def run_dir(model: Reinforce, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder as `zoo train` writes it."""
    folder = tmp_path_factory.mktemp("logs") / "reinforce" / f"{ENV_ID}_1"
    folder.mkdir(parents=True)
    model.save(folder / f"{ENV_ID}.zip")
    (folder / "config.yml").write_text(yaml.safe_dump(run_config().with_seed(0).to_data(), sort_keys=False))
    (folder / "command.txt").write_text("python -m zoo train --env CartPole-v1 --seed 0 --n-timesteps 2000\n")
    return folder
