"""zoo.hub.push and zoo.hub.pull: one commit per push, and the agent loaded back exactly, without pickle."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import cloudpickle
import numpy as np
import pytest
import torch as th
from huggingface_hub import HfApi, snapshot_download
from stable_baselines3.common.vec_env import VecNormalize

from sb3_reinforce import Reinforce
from tests.hub.support import (
    PUSHED,
    ROOT,
    TOKEN,
    check_card,
    greedy,
    observations,
    push,
    repo,
    run_config,
    sha256,
)
from tests.hub_server import HubServer
from zoo.hub import load_from_hub, push_folder


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
    assert agent.run_config == run_config().with_seed(0).to_data()
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
    assert second.deleted == ["replay.mp4", "vec_normalize.json", "vec_normalize.pkl"]
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

    def load_in_a_fresh_process(repo_id: str, obs: list[list[float]]) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", script, repo_id, json.dumps(obs)]
        return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)

    done = load_in_a_fresh_process(repo_id, obs.tolist())
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["revision"] == pushed.commit
    assert out["actions"] == greedy(model, obs).tolist()

    missing = load_in_a_fresh_process("tester/never-downloaded", [[0, 0, 0, 0]])
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
