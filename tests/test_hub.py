"""zoo.hub and zoo.serialization against a local Hub-compatible server (tests/hub_server.py); no internet.

huggingface_hub reads HF_ENDPOINT, HF_HUB_CACHE, HF_HUB_OFFLINE... into ``huggingface_hub.constants`` when it is
first imported, which another test module may already have done. So the environment is set here before any import
of it (for a run of this file alone) AND every test patches the constants and the environment again through the
``hub_env`` fixture; zoo.hub itself reads HF_ENDPOINT and HF_HUB_CACHE when called, and passes ``endpoint=``.
``constants.ENDPOINT`` is deliberately left alone: ``hf_hub_url`` swaps that prefix of its import-time URL template
for the ``endpoint`` argument, so patching it alone would send downloads to the real Hub.
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

import hashlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import pickle  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import uuid  # noqa: E402
from collections import OrderedDict  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import cloudpickle  # noqa: E402
import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tomllib  # noqa: E402
import torch as th  # noqa: E402
import yaml  # noqa: E402
from gymnasium import spaces  # noqa: E402
from huggingface_hub import HfApi, ModelCard, constants, snapshot_download  # noqa: E402
from stable_baselines3 import A2C, PPO  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402
from stable_baselines3.common.vec_env import VecNormalize  # noqa: E402

from sb3_reinforce import Reinforce  # noqa: E402
from tests.hub_server import HubServer  # noqa: E402
from zoo import hub as zoo_hub  # noqa: E402
from zoo.config import RunConfig, ZooError, get_config, known_env_ids  # noqa: E402
from zoo.hub import (  # noqa: E402
    TEMPLATE_PATH,
    enjoy_main,
    load_from_hub,
    package_agent,
    push_all_main,
    push_folder,
    push_main,
    push_to_hub,
)
from zoo.serialization import load_agent, save_agent, space_from_json, space_to_json  # noqa: E402

TOKEN = "hf_test_write_token"
ENV_ID = "CartPole-v1"
ROOT = Path(__file__).resolve().parent.parent
PUSHED = {"README.md", "config.json", "config.yml", "model.safetensors", "reinforce-CartPole-v1.zip", "results.json"}
HYPERPARAMS = {"learning_rate": 0.01, "n_episodes": 4, "policy_kwargs": {"net_arch": [16], "activation_fn": "tanh"}}


# ---------------------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    with HubServer(tmp_path_factory.mktemp("hub-server"), tokens={TOKEN: "tester"}) as server:
        yield server


@pytest.fixture(autouse=True)
def hub_env(hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point huggingface_hub and zoo.hub at the local server and a per-test cache, whatever was imported first."""
    cache = tmp_path / "hf-cache"
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)  # no agent-registry request to the server
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token-file"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-stored-tokens"))
    monkeypatch.setattr(zoo_hub, "RETRY_BACKOFF_S", 0.01)
    return cache


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


@pytest.fixture(scope="module")
def model() -> Reinforce:
    config = run_config()
    agent = Reinforce("MlpPolicy", make_vec_env(ENV_ID, n_envs=4, seed=0), seed=0, **config.algorithm_kwargs())
    return agent.learn(2000)


@pytest.fixture(scope="module")
def normalized() -> tuple[Reinforce, VecNormalize]:
    config = run_config({"norm_obs": True, "norm_reward": True})
    env = VecNormalize(make_vec_env(ENV_ID, n_envs=4, seed=1), gamma=0.99)
    agent = Reinforce("MlpPolicy", env, seed=1, **config.algorithm_kwargs()).learn(500)
    return agent, env


def observations(n: int = 64) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(n, 4)).astype(np.float32) * np.array([1, 2, 0.2, 2], np.float32)


def greedy(agent: Any, obs: np.ndarray) -> np.ndarray:
    return np.asarray(agent.predict(obs, deterministic=True)[0])


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def push(model: Reinforce, repo_id: str, **kwargs: Any) -> zoo_hub.PushResult:
    options: dict[str, Any] = {"config": run_config(), "video_length": 40, **kwargs}
    return push_to_hub(model, ENV_ID, repo_id, **options)


def check_card(text: str, results: dict[str, Any], repo_id: str) -> None:
    card = ModelCard(text)
    data = card.data.to_dict()
    assert data["library_name"] == "stable-baselines3"
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


# ------------------------------------------------------------------------------------------------ serialization


@pytest.mark.parametrize(
    "space",
    [
        spaces.Box(low=np.array([-1.0, -np.inf], np.float32), high=np.array([2.5, np.inf], np.float32)),
        spaces.Box(low=0, high=255, shape=(6, 5, 3), dtype=np.uint8),
        spaces.Box(low=-1.0, high=1.0, shape=(2, 3), dtype=np.float64),
        spaces.Discrete(5, start=-2),
        spaces.MultiDiscrete([3, 4], start=[1, -1]),
        spaces.MultiBinary(3),
        spaces.MultiBinary([2, 3]),
        spaces.Dict(OrderedDict(b=spaces.Discrete(2), a=spaces.Box(-1, 1, (3,), np.float32))),
    ],
)
def test_spaces_round_trip_through_strict_json(space: Any) -> None:
    data = json.loads(json.dumps(space_to_json(space), allow_nan=False))
    rebuilt: Any = space_from_json(data)
    assert rebuilt == space
    assert type(rebuilt) is type(space)
    if isinstance(space, spaces.Box):
        assert rebuilt.dtype == space.dtype
        np.testing.assert_array_equal(rebuilt.low, space.low)
        np.testing.assert_array_equal(rebuilt.high, space.high)
    if isinstance(space, spaces.Dict):
        assert list(rebuilt.spaces) == list(space.spaces)


@pytest.mark.parametrize("algo", ["ppo", "a2c"])
def test_sb3_algorithms_rebuild_without_pickle(algo: str, tmp_path: Path) -> None:
    env = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    if algo == "ppo":
        model: Any = PPO(
            "MlpPolicy",
            env,
            n_steps=16,
            batch_size=16,
            clip_range=0.15,
            learning_rate=3e-4,
            policy_kwargs={"net_arch": [8], "activation_fn": th.nn.ReLU},
            seed=0,
        )
    else:
        model = A2C("MlpPolicy", env, n_steps=4, policy_kwargs={"net_arch": [8]}, seed=0)
    config = save_agent(tmp_path, model, env_id="Pendulum-v1")
    rebuilt: Any
    rebuilt, _, stats = load_agent(tmp_path, device="cpu")
    assert type(rebuilt) is type(model)
    assert stats is None
    assert config["algo"] == algo
    assert config["policy"] == "MlpPolicy"
    obs = np.random.default_rng(1).normal(size=(16, 3)).astype(np.float32)
    np.testing.assert_array_equal(greedy(rebuilt, obs), greedy(model, obs))
    if algo == "ppo":
        assert config["hyperparams"]["clip_range"] == 0.15
        assert config["policy_kwargs"]["activation_fn"] == "relu"
        assert rebuilt.clip_range(1.0) == pytest.approx(0.15)
    else:
        assert config["policy_kwargs"]["optimizer_class"] == "rmsprop"


def test_card_template_is_reached_through_the_package() -> None:
    # Installed from a wheel, the zoo has no hub_cards/ beside it: the template must come with the package.
    assert TEMPLATE_PATH.parent == ROOT / "zoo"
    assert TEMPLATE_PATH.read_bytes() == (ROOT / "hub_cards" / "template.md").read_bytes()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert TEMPLATE_PATH.name in package_data["zoo"]


def test_gsde_agent_rebuilds_without_pickle(tmp_path: Path) -> None:
    env = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    model = Reinforce(
        "MlpPolicy", env, n_episodes=2, use_sde=True, sde_sample_freq=4, seed=0, device="cpu",
        policy_kwargs={"net_arch": [8], "log_std_init": -2.0, "squash_output": True},
    )  # fmt: skip
    config = save_agent(tmp_path, model, env_id="Pendulum-v1")
    rebuilt: Any
    rebuilt, _, _ = load_agent(tmp_path, device="cpu")
    assert config["hyperparams"]["use_sde"] is True
    assert rebuilt.use_sde
    assert rebuilt.sde_sample_freq == 4
    assert rebuilt.policy.squash_output
    obs = np.random.default_rng(1).normal(size=(16, 3)).astype(np.float32)
    np.testing.assert_array_equal(greedy(rebuilt, obs), greedy(model, obs))
    th.testing.assert_close(rebuilt.policy.log_std, model.policy.log_std)


# ------------------------------------------------------------------------------------------------------- push/pull


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


def test_push_then_pull_gives_identical_files_and_predictions(model: Reinforce, hub: HubServer, hub_env: Path) -> None:
    repo_id = repo("pushed")
    result = push(model, repo_id)
    assert result.commit is not None
    assert not result.warnings
    commits = hub.commits(repo_id)
    assert [c.sha for c in commits][-1] == result.commit
    assert len(commits) == 2  # the repository's creation, then exactly one commit for the whole push
    assert set(hub.files(repo_id)) == PUSHED | {"replay.mp4", ".gitattributes"}

    everything = Path(snapshot_download(repo_id, cache_dir=hub_env / "all", endpoint=hub.url))
    assert {name: sha256(everything / name) for name in result.sha256} == result.sha256

    agent = load_from_hub(repo_id, device="cpu")
    assert agent.revision == result.commit
    assert isinstance(agent.model, Reinforce)
    obs = observations()
    np.testing.assert_array_equal(greedy(agent.model, obs), greedy(model, obs))
    for name, tensor in model.policy.state_dict().items():
        assert th.equal(agent.model.policy.state_dict()[name], tensor)
    assert agent.results == result.results == json.loads((everything / "results.json").read_text())
    assert agent.vec_normalize_stats is None
    assert agent.run_config == run_config().to_data(0)
    check_card((everything / "README.md").read_text(), agent.results, repo_id)
    assert not list(agent.local_dir.glob("*.zip"))  # the pickle is not even downloaded by default

    older = load_from_hub(repo_id, revision=result.commit, device="cpu")
    assert older.revision == result.commit


def test_dry_run_folder_uploads_byte_identical(model: Reinforce, hub: HubServer, tmp_path: Path) -> None:
    repo_id = repo("from-folder")
    folder = push(model, repo_id, dry_run_dir=tmp_path / "pkg").folder
    assert folder is not None
    result = push_folder(folder, repo_id)
    assert len(hub.commits(repo_id)) == 2
    for path in folder.iterdir():
        assert hub.read(repo_id, path.name) == path.read_bytes(), path.name
    assert set(result.files) == {p.name for p in folder.iterdir()}


def test_second_push_is_one_commit_and_removes_stale_files(
    model: Reinforce, normalized: tuple[Reinforce, VecNormalize], hub: HubServer
) -> None:
    repo_id = repo("twice")
    agent, venv = normalized
    first = push(agent, repo_id, config=run_config({"norm_obs": True, "norm_reward": True}), vec_normalize=venv)
    assert {"vec_normalize.json", "replay.mp4"} <= set(hub.files(repo_id))
    HfApi(endpoint=hub.url, token=TOKEN).upload_file(
        path_or_fileobj=b"mine", path_in_repo="notes.txt", repo_id=repo_id, commit_message="user notes"
    )
    before = len(hub.commits(repo_id))
    second = push(model, repo_id, record_video=False)
    commits = hub.commits(repo_id)
    assert len(commits) == before + 1
    assert commits[-1].sha == second.commit != first.commit
    assert second.deleted == ["replay.mp4", "vec_normalize.json"]
    assert set(hub.files(repo_id)) == PUSHED | {".gitattributes", "notes.txt"}
    loaded = load_from_hub(repo_id, device="cpu")
    assert loaded.revision == second.commit
    assert loaded.vec_normalize_stats is None


def test_vec_normalize_statistics_round_trip(normalized: tuple[Reinforce, VecNormalize]) -> None:
    agent, venv = normalized
    repo_id = repo("normalized")
    push(
        agent,
        repo_id,
        config=run_config({"norm_obs": True, "norm_reward": True}),
        vec_normalize=venv,
        record_video=False,
    )
    loaded = load_from_hub(repo_id, device="cpu")
    stats = loaded.vec_normalize_stats
    assert stats is not None
    for name in ("clip_obs", "clip_reward", "gamma", "epsilon", "norm_obs", "norm_reward"):
        assert getattr(stats, name) == getattr(venv, name), name
    for mine, theirs in ((stats.obs_rms, venv.obs_rms), (stats.ret_rms, venv.ret_rms)):
        np.testing.assert_array_equal(mine.mean, theirs.mean)  # type: ignore[union-attr]
        np.testing.assert_array_equal(mine.var, theirs.var)  # type: ignore[union-attr]
        assert mine.count == theirs.count  # type: ignore[union-attr]
    env = loaded.make_env(seed=3)
    try:
        assert isinstance(env, VecNormalize)
        assert not env.training
        assert not env.norm_reward
        raw = observations(8)
        ours, reference = np.asarray(env.normalize_obs(raw)), np.asarray(venv.normalize_obs(raw))
        np.testing.assert_array_equal(ours, reference)
        np.testing.assert_array_equal(greedy(loaded.model, ours), greedy(agent, reference))
    finally:
        env.close()


def test_loads_offline_from_the_cache_in_a_fresh_process(model: Reinforce, hub_env: Path) -> None:
    repo_id = repo("offline")
    pushed = push(model, repo_id, record_video=False)
    load_from_hub(repo_id, device="cpu")  # fills the cache (HF_HUB_CACHE of this test)
    obs = observations(16)
    script = (
        "import json, sys, numpy as np\n"
        "from zoo.hub import load_from_hub\n"
        "agent = load_from_hub(sys.argv[1])\n"
        "actions, _ = agent.model.predict(np.array(json.loads(sys.argv[2]), dtype=np.float32), deterministic=True)\n"
        "print(json.dumps({'revision': agent.revision, 'actions': actions.tolist()}))\n"
    )
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(hub_env),
        "HF_ENDPOINT": "http://127.0.0.1:9",
        "PYTHONPATH": str(ROOT),
        "OMP_NUM_THREADS": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", script, repo_id, json.dumps(obs.tolist())],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["revision"] == pushed.commit
    assert out["actions"] == greedy(model, obs).tolist()

    missing = subprocess.run(
        [sys.executable, "-c", script, "tester/never-downloaded", "[[0, 0, 0, 0]]"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert missing.returncode != 0
    assert "HF_HUB_OFFLINE is set" in missing.stderr


def test_nothing_is_unpickled_unless_allowed(model: Reinforce, monkeypatch: pytest.MonkeyPatch) -> None:
    repo_id = repo("pickle")
    push(model, repo_id, record_video=False)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("something was unpickled")

    with monkeypatch.context() as patch:
        for target, name in (
            (pickle, "load"),
            (pickle, "loads"),
            (pickle, "Unpickler"),
            (cloudpickle, "loads"),
            (cloudpickle, "load"),
            (th, "load"),
        ):
            patch.setattr(target, name, refuse)
        safe = load_from_hub(repo_id, device="cpu")
    pickled = load_from_hub(repo_id, allow_pickle=True, device="cpu")
    assert isinstance(pickled.model, Reinforce)
    assert list(pickled.local_dir.glob("*.zip")) == [pickled.local_dir / "reinforce-CartPole-v1.zip"]
    obs = observations()
    np.testing.assert_array_equal(greedy(pickled.model, obs), greedy(safe.model, obs))


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

        monkeypatch.setattr(zoo_hub, "_write_video", broken)
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


# ------------------------------------------------------------------------------------------------------ bad input


@pytest.fixture(scope="module")
def published(model: Reinforce, hub: HubServer) -> str:
    repo_id = repo("published")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_ENDPOINT", hub.url)
        patch.setenv("HF_TOKEN", TOKEN)
        patch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
        push(model, repo_id, record_video=False)
    return repo_id


def test_unknown_repo_revision_or_file(published: str, hub: HubServer) -> None:
    with pytest.raises(ZooError, match=r"repository tester/missing not found"):
        load_from_hub("tester/missing")
    with pytest.raises(ZooError, match=r"revision 'no-such-branch' not found"):
        load_from_hub(published, revision="no-such-branch")
    readme_only = repo("readme-only")
    api = HfApi(endpoint=hub.url, token=TOKEN)
    api.create_repo(readme_only)
    api.upload_file(path_or_fileobj=b"---\nlicense: mit\n---\nhello\n", path_in_repo="README.md", repo_id=readme_only)
    with pytest.raises(ZooError, match=r"has no config\.json: it is not an agent pushed by"):
        load_from_hub(readme_only)
    with pytest.raises(ZooError, match=r"invalid repo id"):
        load_from_hub("not a repo")


def test_missing_or_rejected_token(
    model: Reinforce, published: str, hub: HubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_TOKEN")
    hub.requests.clear()
    with pytest.raises(ZooError, match=r"no Hugging Face token"):
        push(model, repo("no-token"), record_video=False)
    assert hub.requests == []
    monkeypatch.setenv("HF_TOKEN", "hf_wrong")
    with pytest.raises(ZooError, match=r"rejected the token \(401"):
        push(model, repo("bad-token"), record_video=False)
    with pytest.raises(ZooError, match=r"rejected the token \(401"):
        load_from_hub(published)


def test_unreachable_hub_is_retried_then_reported(
    model: Reinforce, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv("HF_ENDPOINT", dead)
    with caplog.at_level(logging.WARNING, logger="zoo.hub"):
        with pytest.raises(ZooError, match=r"could not reach the Hub at http://127\.0\.0\.1:\d+ after 4 attempts"):
            push(model, repo("down"), record_video=False)
        retries = [r for r in caplog.records if "retrying" in r.getMessage()]
        assert len(retries) == zoo_hub.RETRY_ATTEMPTS - 1
        with pytest.raises(ZooError, match=r"could not reach the Hub .* not in the local cache"):
            load_from_hub("tester/anything", cache_dir=tmp_path / "empty-cache")


def test_transient_errors_are_retried(model: Reinforce, hub: HubServer) -> None:
    repo_id = repo("flaky")
    hub.fail_next(2, status=503)
    result = push(model, repo_id, record_video=False)
    assert len(hub.commits(repo_id)) == 2
    assert hub.commits(repo_id)[-1].sha == result.commit
    hub.fail_next(1, status=502)
    assert load_from_hub(repo_id, device="cpu").revision == result.commit


def test_tampered_truncated_or_mismatched_files(published: str, hub: HubServer, hub_env: Path) -> None:
    api = HfApi(endpoint=hub.url, token=TOKEN)
    weights = hub.read(published, "model.safetensors")
    config = json.loads(hub.read(published, "config.json"))

    truncated = repo("truncated")
    api.create_repo(truncated)
    api.upload_file(path_or_fileobj=hub.read(published, "config.json"), path_in_repo="config.json", repo_id=truncated)
    api.upload_file(path_or_fileobj=weights[:-50], path_in_repo="model.safetensors", repo_id=truncated)
    with pytest.raises(ZooError, match=r"model\.safetensors is corrupt or was modified"):
        load_from_hub(truncated)

    mismatched = repo("mismatched")
    config["policy_kwargs"]["net_arch"] = [32]
    api.create_repo(mismatched)
    api.upload_file(path_or_fileobj=json.dumps(config).encode(), path_in_repo="config.json", repo_id=mismatched)
    api.upload_file(path_or_fileobj=weights, path_in_repo="model.safetensors", repo_id=mismatched)
    with pytest.raises(ZooError, match=r"does not match the model that config\.json describes: .* is \(16, 4\)"):
        load_from_hub(mismatched)

    api.upload_file(path_or_fileobj=b'{"format": "sb3-rein', path_in_repo="config.json", repo_id=mismatched)
    with pytest.raises(ZooError, match=r"config\.json is not valid JSON"):
        load_from_hub(mismatched)

    agent = load_from_hub(published)  # a good download, then its cached copy is damaged on disk
    cached = (agent.local_dir / "model.safetensors").resolve()
    cached.write_bytes(cached.read_bytes()[:100])
    with pytest.raises(ZooError, match=r"corrupt or was modified"):
        load_from_hub(published)


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


# ------------------------------------------------------------------------------------------------------------- CLI


@pytest.fixture(scope="module")
def run_dir(model: Reinforce, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder as `zoo train` writes it."""
    folder = tmp_path_factory.mktemp("logs") / "reinforce" / f"{ENV_ID}_1"
    folder.mkdir(parents=True)
    model.save(folder / f"{ENV_ID}.zip")
    (folder / "config.yml").write_text(yaml.safe_dump(run_config().to_data(0), sort_keys=False))
    (folder / "command.txt").write_text("python -m zoo train --env CartPole-v1 --seed 0 --n-timesteps 2000\n")
    return folder


def test_cli_push_and_enjoy(run_dir: Path, hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo_id = repo("cli")
    assert (
        push_main(
            ["--model", str(run_dir / f"{ENV_ID}.zip"), "--env", ENV_ID, "--repo-id", repo_id, "--video-length", "20"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"pushed {ENV_ID} agent to {hub.url}/{repo_id} at commit {hub.commits(repo_id)[-1].sha}" in out
    card = hub.read(repo_id, "README.md").decode()
    assert "python -m zoo train --env CartPole-v1 --seed 0 --n-timesteps 2000" in card

    assert enjoy_main(["--repo-id", repo_id, "--episodes", "2"]) == 0
    assert f"{repo_id}@{hub.commits(repo_id)[-1].sha[:12]} on {ENV_ID}: mean_reward " in capsys.readouterr().out
    assert enjoy_main(["--repo-id", repo_id, "--episodes", "1", "--allow-pickle"]) == 0

    hub.requests.clear()
    assert (
        push_main(
            [
                "--model",
                str(run_dir),
                "--env",
                ENV_ID,
                "--repo-id",
                repo_id,
                "--no-video",
                "--dry-run",
                str(tmp_path / "dry"),
            ]
        )
        == 0
    )
    assert hub.requests == []
    assert "dry run: wrote" in capsys.readouterr().out
    assert {p.name for p in (tmp_path / "dry").iterdir()} == PUSHED


def test_cli_help_states_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    for command, default in (
        (push_main, "(default: 10)"),
        (enjoy_main, "(default: 10)"),
        (push_all_main, "(default: hub_cards)"),
    ):
        with pytest.raises(SystemExit) as exit_:
            command(["--help"])
        assert exit_.value.code == 0
        assert default in " ".join(capsys.readouterr().out.split())


def test_package_agent_and_push_all(
    run_dir: Path, hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cards = tmp_path / "hub_cards"
    result = package_agent(run_dir, ENV_ID, cards / ENV_ID, video_length=20)
    assert result.folder == cards / ENV_ID
    assert "ORG/reinforce-CartPole-v1" in (cards / ENV_ID / "README.md").read_text()
    (cards / "template.md").write_text("not an agent")
    (cards / "empty").mkdir()

    hub.requests.clear()
    assert push_all_main(["--org", "team", "--hub-cards", str(cards), "--dry-run"]) == 0
    assert hub.requests == []
    assert f"would push {cards / ENV_ID} to team/reinforce-CartPole-v1" in capsys.readouterr().out

    org = f"team{uuid.uuid4().hex[:6]}"
    assert push_all_main(["--org", org, "--hub-cards", str(cards)]) == 0
    repo_id = f"{org}/reinforce-CartPole-v1"
    files = hub.files(repo_id)
    assert set(files) == PUSHED | {"replay.mp4", ".gitattributes"}
    for name in files:
        if name not in (".gitattributes", "README.md"):
            assert hub.read(repo_id, name) == (cards / ENV_ID / name).read_bytes(), name
    card = hub.read(repo_id, "README.md").decode()
    check_card(card, json.loads((cards / ENV_ID / "results.json").read_text()), repo_id)

    shutil.copy(cards / ENV_ID / "config.json", cards / "empty" / "config.json")  # incomplete: no weights
    with pytest.raises(ZooError, match=r"1 of 2 agents were not pushed: empty"):
        push_all_main(["--org", org, "--hub-cards", str(cards), "--dry-run"])


def test_every_zoo_env_has_a_packaged_agent() -> None:
    packaged = {p.name for p in (ROOT / "hub_cards").iterdir() if p.is_dir()}
    assert packaged == set(known_env_ids("reinforce"))


@pytest.mark.parametrize(
    "folder", sorted(p for p in (ROOT / "hub_cards").iterdir() if p.is_dir()), ids=lambda p: p.name
)
def test_packaged_zoo_agents_match_the_zoo_and_their_cards(folder: Path) -> None:
    env_id = folder.name
    run = yaml.safe_load((folder / "config.yml").read_text())
    # Packaged from a run of the zoo's current entry, not of an older one.
    assert {key: value for key, value in run.items() if key != "seed"} == get_config("reinforce", env_id).to_data()
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
