"""Reliability of push, dry run and pull, done for real against the local Hub server (and one that never answers).

Each test is a case a hostile or unlucky user meets, and what holds: a dry run or a push never removes a file it did not
write; nothing in a download is trusted (every file read is checked against the push's manifest, every value is
validated, no env id imports a module, env_kwargs are not applied silently, sizes are checked before allocating,
``allow_pickle`` opens only a file of the snapshot); a Hub that never answers is a clear error; push-all goes on
past a bad folder.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub import HfApi
from stable_baselines3.common.vec_env import VecNormalize

from sb3_reinforce import Reinforce
from tests.helpers import one_error_line
from tests.hub.support import (
    ENV_ID,
    ROOT,
    TOKEN,
    push,
    repo,
    run_config,
    upload_agent,
    use_endpoint,
    with_manifest,
)
from tests.hub_server import HubServer, SilentServer
from zoo.cli import main as cli
from zoo.episodes import evaluate_episodes
from zoo.errors import ZooError
from zoo.hub import load_from_hub, package_agent, push_folder
from zoo.hub.cli import push_all_main
from zoo.hub.layout import write_manifest
from zoo.hub.pull import choose_env_kwargs

NORMALIZED = {"norm_obs": True, "norm_reward": True}


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def dry_run(run_dir: Path, target: str | Path, *extra: str) -> int:
    argv = ["push", "--model", str(run_dir), "--env", ENV_ID, "--repo-id", "tester/dry", "--no-video"]
    return cli([*argv, "--dry-run", str(target), *extra])


# --------------------------------------------------------------------------------------------------- data loss


def test_a_dry_run_refuses_a_folder_that_is_not_empty(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "mine"
    (target / "sub").mkdir(parents=True)
    (target / "notes.txt").write_text("my notes")
    (target / "sub" / "data.csv").write_text("1,2,3")
    before = tree(target)
    assert dry_run(run_dir, target) == 2
    assert f"--dry-run {target} is not empty" in one_error_line(capsys)
    assert tree(target) == before


def test_a_dry_run_never_touches_the_run_folder(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree(run_dir)
    for target, extra in ((run_dir, ()), (run_dir, ("--force",)), (run_dir.parent, ("--force",))):
        assert dry_run(run_dir, target, *extra) == 2
        assert "the run folder" in one_error_line(capsys)
    assert tree(run_dir) == before


def test_a_dry_run_into_the_current_folder_is_a_clear_error(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "keep.txt").write_text("keep")
    monkeypatch.chdir(tmp_path)
    assert dry_run(run_dir, ".") == 2
    assert "--dry-run . is not empty" in one_error_line(capsys)
    assert (tmp_path / "keep.txt").read_text() == "keep"

    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    assert dry_run(run_dir, ".") == 0  # an empty current folder is filled, and stays the current folder
    assert (empty / "config.json").is_file()
    assert Path.cwd() == empty


def test_a_forced_dry_run_replaces_only_its_own_files(run_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "package"
    assert dry_run(run_dir, target) == 0
    first = json.loads((target / "manifest.json").read_text())["files"]
    (target / "replay.mp4").write_bytes(b"an earlier push's video")  # as if the earlier dry run had recorded one
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["files"]["replay.mp4"] = {"size": 23, "sha256": "0" * 64}
    (target / "manifest.json").write_text(json.dumps(manifest))
    (target / "notes.txt").write_text("my notes")
    (target / "sub").mkdir()
    (target / "sub" / "data.csv").write_text("1,2,3")

    assert dry_run(run_dir, target, "--force") == 0
    assert (target / "notes.txt").read_text() == "my notes"
    assert (target / "sub" / "data.csv").read_text() == "1,2,3"
    assert not (target / "replay.mp4").exists()  # listed by the earlier manifest, not written again
    assert set(json.loads((target / "manifest.json").read_text())["files"]) == set(first)
    assert not [p.name for p in target.iterdir() if ".tmp-" in p.name]


def test_a_push_deletes_only_what_an_earlier_push_recorded(model: Reinforce, hub: HubServer) -> None:
    repo_id = repo("owned")
    push(model, repo_id, video_length=20)
    api = HfApi(endpoint=hub.url, token=TOKEN)
    for name, data in (("mine.zip", b"the user's own model"), ("notes.txt", b"notes")):
        api.upload_file(path_or_fileobj=data, path_in_repo=name, repo_id=repo_id)
    second = push(model, repo_id, record_video=False)
    assert second.deleted == ["replay.mp4"]
    files = set(hub.files(repo_id))
    assert {"mine.zip", "notes.txt", "reinforce-CartPole-v1.zip"} <= files
    assert "replay.mp4" not in files
    assert hub.read(repo_id, "mine.zip") == b"the user's own model"


def test_a_push_to_a_repository_without_a_manifest_deletes_nothing(model: Reinforce, hub: HubServer) -> None:
    repo_id = repo("foreign")
    api = HfApi(endpoint=hub.url, token=TOKEN)
    api.create_repo(repo_id)
    for name in ("old-agent.zip", "replay.mp4", "vec_normalize.json"):
        api.upload_file(path_or_fileobj=b"someone else's", path_in_repo=name, repo_id=repo_id)
    result = push(model, repo_id, record_video=False)
    assert result.deleted == []
    assert {"old-agent.zip", "replay.mp4", "vec_normalize.json"} <= set(hub.files(repo_id))
    assert any("left in place: old-agent.zip, replay.mp4, vec_normalize.json" in w for w in result.warnings)


# ------------------------------------------------------------------------------------- nothing downloaded is trusted


@pytest.fixture(scope="module")
def agent_files(normalized: tuple[Reinforce, VecNormalize], hub: HubServer) -> dict[str, bytes]:
    """The files of a pushed agent that normalizes (README and video aside), to alter and serve again."""
    agent, venv = normalized
    repo_id = repo("source")
    with pytest.MonkeyPatch.context() as patch:
        use_endpoint(patch, hub.url)
        patch.setenv("HF_TOKEN", TOKEN)
        push(agent, repo_id, config=run_config(NORMALIZED), vec_normalize=venv, record_video=False)
    names = ("config.json", "model.safetensors", "vec_normalize.json", "results.json", "config.yml")
    return {name: hub.read(repo_id, name) for name in names}


def serve(hub: HubServer, files: dict[str, bytes], **changes: Any) -> str:
    """A repository of ``files`` with ``changes`` applied (``config``/``stats``: functions editing the JSON), and
    a manifest that vouches for every file, as a malicious publisher would write it."""
    files = dict(files)
    for name, key in (("config.json", "config"), ("vec_normalize.json", "stats")):
        if key in changes:
            document = json.loads(files[name])
            changes[key](document)
            files[name] = json.dumps(document).encode()
    repo_id = repo("served")
    upload_agent(hub.url, repo_id, files)
    return repo_id


def test_a_vec_normalize_json_edited_in_the_cache_is_refused(agent_files: dict[str, bytes], hub: HubServer) -> None:
    repo_id = serve(hub, agent_files)
    agent = load_from_hub(repo_id, device="cpu")
    assert agent.vec_normalize_stats is not None
    cached = (agent.local_dir / "vec_normalize.json").resolve()
    stats = json.loads(cached.read_text())
    stats["obs_rms"]["mean"][0] += 1.0
    cached.write_text(json.dumps(stats))
    with pytest.raises(ZooError, match=r"vec_normalize\.json is corrupt or was modified: .* manifest\.json records"):
        load_from_hub(repo_id, device="cpu")


def test_a_repository_without_a_manifest_is_refused(agent_files: dict[str, bytes], hub: HubServer) -> None:
    repo_id = repo("no-manifest")
    upload_agent(hub.url, repo_id, agent_files, manifest=False)
    with pytest.raises(ZooError, match=r"has no manifest\.json, so its files cannot be verified"):
        load_from_hub(repo_id, device="cpu")


def set_in(path: tuple[Any, ...], value: Any) -> Any:
    def edit(document: Any) -> None:
        for key in path[:-1]:
            document = document[key]
        document[path[-1]] = value

    return edit


@pytest.mark.parametrize(
    ("stats", "message"),
    [
        (set_in(("obs_rms", "var", 1), -1.0), r"obs_rms\.var must be positive"),
        (set_in(("obs_rms", "var", 0), 0.0), r"obs_rms\.var must be positive"),
        (set_in(("obs_rms", "mean", 2), float("nan")), r"obs_rms\.mean must hold finite numbers, found nan"),
        (set_in(("obs_rms", "mean", 0), "0.5"), r"obs_rms\.mean must hold finite numbers, found '0\.5'"),
        (set_in(("obs_rms", "count"), float("inf")), r"obs_rms\.count must be a finite number > 0"),
        (set_in(("obs_rms", "shape"), [2, 2]), r"obs_rms\.mean does not have the shape \[2, 2\]"),
        (set_in(("obs_rms", "mean"), [[[[[0.0]]]]] * 4), r"obs_rms\.mean must hold finite numbers"),
        (set_in(("clip_obs",), 0), r"clip_obs must be a finite number > 0, got 0"),
        (set_in(("clip_obs",), "10"), r"clip_obs must be a finite number > 0, got '10'"),
        (set_in(("norm_obs",), "false"), r"norm_obs must be true or false"),
        (set_in(("format_version",), 99), r"format_version 99 is newer than this zoo reads \(1 to 1\)"),
        (set_in(("ret_rms", "var"), -2.0), r"ret_rms\.var must be positive"),
    ],
    ids=[
        "negative-var", "zero-var", "nan-mean", "string-mean", "inf-count", "shape", "nested", "clip-zero",
        "clip-string", "bool-string", "version", "ret-var",
    ],
)  # fmt: skip
def test_vec_normalize_values_are_validated(
    stats: Any, message: str, agent_files: dict[str, bytes], hub: HubServer
) -> None:
    repo_id = serve(hub, agent_files, stats=stats)
    with pytest.raises(ZooError, match=r"vec_normalize\.json: .*" + message):
        load_from_hub(repo_id, device="cpu")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (set_in(("env_id",), "this:Zen-v0"), r"env_id 'this:Zen-v0' is not a gymnasium env id"),
        (set_in(("env_kwargs",), {"render_mode": "human"}), r"env_kwargs may not set render_mode"),
        (set_in(("format_version",), "1"), r"format_version must be an integer >= 1, got '1'"),
        (set_in(("n_envs",), 10**6), r"n_envs must be an integer in \[1, 1,024\]"),
        (set_in(("n_envs",), 2.5), r"n_envs must be an integer"),
        (set_in(("observation_space", "shape"), [10**4] * 2), r"observation_space\.shape .* more than 4194304 entries"),
        (set_in(("observation_space", "dtype"), "object"), r"observation_space\.dtype must be one of"),
        (set_in(("action_space", "n"), True), r"action_space\.n must be an integer"),
        (set_in(("hyperparams", "learning_rate"), "lin_nan"), r"learning_rate must start at a finite number > 0"),
        (set_in(("hyperparams", "tensorboard_log"), "/tmp/x"), r"unknown key 'tensorboard_log'"),
        (set_in(("policy",), "os.system"), r"policy must be one of MlpPolicy"),
        (set_in(("policy_kwargs", "activation_fn"), "os.system"), r"policy_kwargs\.activation_fn must be one of"),
        (set_in(("weights", "file"), "../model.safetensors"), r"weights\.file must be a plain file name"),
        (set_in(("sb3_zip", "file"), "/etc/passwd.zip"), r"sb3_zip\.file must be a plain file name"),
        (set_in(("normalize", "clip_obs"), -1), r"normalize: clip_obs must be a finite number > 0"),
    ],
    ids=[
        "module-env-id", "render-mode", "version-string", "n-envs", "n-envs-float", "huge-space", "dtype",
        "bool-n", "nan-schedule", "not-a-hyperparameter", "policy", "activation", "weights-path", "zip-path",
        "normalize",
    ],
)  # fmt: skip
def test_config_values_are_validated(config: Any, message: str, agent_files: dict[str, bytes], hub: HubServer) -> None:
    imported = set(sys.modules)
    repo_id = serve(hub, agent_files, config=config)
    with pytest.raises(ZooError, match=message):
        load_from_hub(repo_id, device="cpu")
    assert "this" not in set(sys.modules) - imported  # no id made anything import a module


def test_downloaded_env_kwargs_are_not_applied_silently(
    agent_files: dict[str, bytes], hub: HubServer, caplog: pytest.LogCaptureFixture
) -> None:
    repo_id = serve(hub, agent_files, config=set_in(("env_kwargs",), {"max_episode_steps": 3}))
    agent = load_from_hub(repo_id, device="cpu")
    assert agent.env_kwargs == {"max_episode_steps": 3}
    with caplog.at_level(logging.WARNING, logger="zoo.hub"):
        env = agent.make_env(seed=0)
    try:
        _, lengths = evaluate_episodes(agent.model, env, 3)
    finally:
        env.close()
    assert min(lengths) > 3  # CartPole as registered: no episode is cut at 3 steps
    assert any(
        "trained with env_kwargs {'max_episode_steps': 3}; they are not applied" in r.message for r in caplog.records
    )
    env = agent.make_env(seed=0, env_kwargs=agent.env_kwargs)  # asked for: applied
    try:
        assert evaluate_episodes(agent.model, env, 3)[1] == [3, 3, 3]
    finally:
        env.close()


def test_one_rule_decides_the_env_kwargs_for_the_library_and_enjoy(
    agent_files: dict[str, bytes], hub: HubServer, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = serve(hub, agent_files, config=set_in(("env_kwargs",), {"max_episode_steps": 3}))
    agent = load_from_hub(repo_id, device="cpu")
    assert choose_env_kwargs(agent) == (
        {},
        f"{repo_id} was trained with env_kwargs {{'max_episode_steps': 3}}; they are not applied",
    )
    assert choose_env_kwargs(agent, ENV_ID, apply=True)[0] == {"max_episode_steps": 3}
    assert choose_env_kwargs(agent, "Acrobot-v1", apply=True) == ({}, None)  # another env: never applied
    plain = load_from_hub(serve(hub, agent_files), device="cpu")
    assert choose_env_kwargs(plain, apply=True) == ({}, None)

    capsys.readouterr()
    assert cli(["enjoy", "--repo-id", repo_id, "--episodes", "2", "--device", "cpu"]) == 0
    out, err = capsys.readouterr()
    assert "they are not applied (--use-env-kwargs applies them)" in err
    assert cli(["enjoy", "--repo-id", repo_id, "--episodes", "2", "--device", "cpu", "--use-env-kwargs"]) == 0
    out, err = capsys.readouterr()
    assert "applying the env_kwargs {'max_episode_steps': 3}" in out
    assert "mean_reward 3.00 +/- 0.00" in out
    assert "not applied" not in err


def test_sizes_are_checked_before_anything_big_is_allocated(
    agent_files: dict[str, bytes], hub: HubServer, hub_env: Path
) -> None:
    """A 2 kB config.json that describes a 8192-wide network (its tensor manifest too), with the small weights file:
    before, the loader built the network (about 600 MB) and only then found that the weights do not match."""
    config = json.loads(agent_files["config.json"])
    config["policy_kwargs"]["net_arch"] = [8192, 8192]
    tensors = config["weights"]["tensors"]  # widened as the network is (16 -> 8192), a layer added
    for tensor in tensors.values():
        tensor["shape"] = [8192 if size == 16 else size for size in tensor["shape"]]
    tensors["mlp_extractor.policy_net.2.weight"] = {"shape": [8192, 8192], "dtype": "float32"}
    tensors["mlp_extractor.policy_net.2.bias"] = {"shape": [8192], "dtype": "float32"}
    tensors["mlp_extractor.value_net.2.weight"] = {"shape": [8192, 8192], "dtype": "float32"}
    tensors["mlp_extractor.value_net.2.bias"] = {"shape": [8192], "dtype": "float32"}
    repo_id = serve(hub, agent_files, config=lambda document: document.update(config))
    script = (
        "import resource, sys\n"
        "from zoo.errors import ZooError\n"
        "from zoo.hub import load_from_hub\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n"
        "    load_from_hub(sys.argv[1], device='cpu')\n"
        "except ZooError as error:\n"
        "    print(error)\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    env = {
        **os.environ,
        "HF_ENDPOINT": hub.url,
        "HF_HUB_CACHE": str(hub_env),
        "HF_TOKEN": TOKEN,
        "PYTHONPATH": str(ROOT),
        "OMP_NUM_THREADS": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", script, repo_id], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    message, grown_kb = done.stdout.strip().splitlines()[-2:]
    assert "needs 537" in message
    assert "bytes of weights, but model.safetensors holds" in message
    assert int(grown_kb) < 100_000  # less than 100 MB, where the network alone takes 537 MB


BIG = 100 << 20  # 100 MB


def oversized(files: dict[str, bytes], case: str) -> dict[str, bytes]:
    """The agent's files with one too large for what it is, and a manifest that vouches for all of them."""
    if case == "manifest":  # past the 64 MB a JSON file of an agent may take
        return {**with_manifest(files), "manifest.json": b" " * ((64 << 20) + 1)}
    config = json.loads(files["config.json"])
    if case == "weights-and-records":  # config.json records the size too: its tensors still take 38 kB
        config["weights"]["size"] = BIG
    return with_manifest({**files, "config.json": json.dumps(config).encode(), "model.safetensors": bytes(BIG)})


@pytest.mark.parametrize(
    ("case", "big_file", "message"),
    [
        (
            "weights",
            "model.safetensors",
            rf"model\.safetensors is corrupt or was modified: {BIG:,} bytes on the Hub, but config\.json records "
            r"\d[\d,]* \(refused before downloading it\)",
        ),
        (
            "weights-and-records",
            "model.safetensors",
            rf"model\.safetensors is {BIG:,} bytes on the Hub, more than the \d[\d,]* bytes a safetensors file of the "
            r"tensors config\.json describes takes \(refused before downloading it\)",
        ),
        (
            "manifest",
            "manifest.json",
            r"manifest\.json is 67,108,865 bytes on the Hub, more than the 67,108,864 bytes its reader accepts "
            r"\(refused before downloading it\)",
        ),
    ],
)
def test_a_file_too_large_for_what_it_is_is_refused_before_it_is_downloaded(
    agent_files: dict[str, bytes], hub: HubServer, case: str, big_file: str, message: str
) -> None:
    """Before, a 100 MB weights file where config.json records (and its tensors take) 38 kB, or a manifest.json
    over the 64 MB limit of JSON, was downloaded in full and only then refused: now the size the Hub reports is
    checked first, and not a byte of the file is sent."""
    repo_id = repo(f"big-{case}")
    hub.put(repo_id, oversized(agent_files, case))
    with pytest.raises(ZooError, match=rf"^{repo_id}@[0-9a-f]{{12}}: {message}$") as error:
        load_from_hub(repo_id, device="cpu")
    assert "\n" not in str(error.value)
    assert hub.sent(repo_id, big_file) == 0


def test_allow_pickle_opens_only_a_file_of_the_snapshot(
    agent_files: dict[str, bytes], model: Reinforce, hub: HubServer, hub_env: Path, tmp_path: Path
) -> None:
    outside = hub_env.parent / "outside.zip"  # a real SB3 zip beside the cache: unpickling it runs its code
    model.save(outside)
    digest = hashlib.sha256(outside.read_bytes()).hexdigest()
    for name in ("../../../../outside.zip", str(outside)):
        record = {"file": name, "size": outside.stat().st_size, "sha256": digest}
        repo_id = serve(hub, agent_files, config=set_in(("sb3_zip",), record))
        with pytest.raises(ZooError, match=r"sb3_zip\.file must be a plain file name ending in \.zip"):
            load_from_hub(repo_id, device="cpu", allow_pickle=True)


def test_a_hub_that_never_answers_is_a_clear_error(
    model: Reinforce, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with SilentServer() as silent:
        use_endpoint(monkeypatch, silent.url)
        started = time.monotonic()
        with pytest.raises(ZooError, match=r"the Hub at http://127\.0\.0\.1:\d+ did not answer within 0\.3 s"):
            load_from_hub("tester/anything", timeout=0.3)
        with pytest.raises(ZooError, match=r"push to tester/silent: the Hub at .* did not answer within 0\.3 s"):
            push(model, "tester/silent", record_video=False, timeout=0.3)
        assert cli(["enjoy", "--repo-id", "tester/anything", "--timeout", "0.3"]) == 2
        assert "did not answer within 0.3 s" in one_error_line(capsys)
        assert time.monotonic() - started < 60


def test_push_all_reports_a_bad_folder_and_pushes_the_others(
    run_dir: Path, hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cards = tmp_path / "hub_cards"
    package_agent(run_dir, ENV_ID, cards / ENV_ID, record_video=False)
    broken = cards / "A-broken"  # sorted first
    broken.mkdir()
    for path in (cards / ENV_ID).iterdir():
        (broken / path.name).write_bytes(path.read_bytes())
    results = json.loads((broken / "results.json").read_text())
    del results["mean_reward"]
    (broken / "results.json").write_text(json.dumps(results))
    write_manifest(broken)  # a manifest that agrees, so only the check of results.json meets the broken file

    org = f"team{time.monotonic_ns() % 10**8}"
    with pytest.raises(ZooError, match=r"1 of 2 agents were not pushed: A-broken"):
        push_all_main(["--org", org, "--hub-cards", str(cards)])
    err = capsys.readouterr().err
    assert f"error: {broken}: results.json is not an evaluation this zoo wrote: mean_reward None" in err
    assert "Traceback" not in err
    assert "config.json" in hub.files(f"{org}/reinforce-CartPole-v1")


def test_push_all_uploads_exactly_the_package_and_nothing_beside_it(
    run_dir: Path, hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cards = tmp_path / "hub_cards"
    folder = cards / ENV_ID
    package_agent(run_dir, ENV_ID, folder, record_video=False)
    packaged = sorted(path.name for path in folder.iterdir())
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the folder")
    (folder / "leak.txt").symlink_to(secret)
    (folder / ".env").write_text("HF_TOKEN=hf_secret")
    (folder / "draft-notes.md").write_text("unlisted draft")

    org = f"team{time.monotonic_ns() % 10**8}"
    assert push_all_main(["--org", org, "--hub-cards", str(cards), "--dry-run"]) == 0
    listing = capsys.readouterr().out
    for stray in ("leak.txt", ".env", "draft-notes.md"):
        assert stray not in listing
    assert push_all_main(["--org", org, "--hub-cards", str(cards)]) == 0
    uploaded = sorted(name for name in hub.files(f"{org}/reinforce-{ENV_ID}") if name != ".gitattributes")
    assert uploaded == packaged


def test_a_listed_file_that_became_a_link_is_refused(run_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / ENV_ID
    package_agent(run_dir, ENV_ID, folder, record_video=False)
    target = tmp_path / "elsewhere.json"
    target.write_bytes((folder / "results.json").read_bytes())
    (folder / "results.json").unlink()
    (folder / "results.json").symlink_to(target)
    with pytest.raises(ZooError, match=r"results\.json is a symbolic link"):
        push_folder(folder, "tester/linked")


def test_a_folder_without_a_manifest_is_not_a_package(run_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / ENV_ID
    package_agent(run_dir, ENV_ID, folder, record_video=False)
    (folder / "manifest.json").unlink()
    with pytest.raises(ZooError, match=r"it has no manifest\.json"):
        push_folder(folder, "tester/unlisted")


def test_the_served_agent_loads_when_left_alone(agent_files: dict[str, bytes], hub: HubServer) -> None:
    """The repositories above differ from this one by the one change each makes."""
    agent = load_from_hub(serve(hub, copy.deepcopy(agent_files)), device="cpu")
    assert agent.vec_normalize_stats is not None
    assert agent.env_kwargs == {}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda results: results.update(mean_reward=results["mean_reward"] + 100), "mean_reward .*its episodes give"),
        (lambda results: results.update(mean_reward=float("nan")), "mean_reward nan"),
        (lambda results: results.update(env_id="Other-v0"), "env_id 'Other-v0'"),
        (lambda results: results["episode_lengths"].pop(), "episode_lengths is not"),
        (lambda results: results.update(episode_rewards="high"), "episode_rewards is not"),
        (lambda results: results.clear(), "env_id None"),
        (lambda results: results.update(replay={"frames": 9, "episode_length": 3}), "replay .* 1 <= frames <="),
        (
            lambda results: results.update(benchmark={"seed": 2, "scores": [{"seed": 0, "mean_reward": 1.0}]}),
            "benchmark.seed 2 is not one of the seeds it scores",
        ),
        (
            lambda results: results.update(benchmark={"seed": 0, "scores": [{"seed": 0, "mean_reward": "high"}]}),
            "benchmark.scores holds .*'high'.*, not a seed and its finite mean_reward",
        ),
    ],
    ids=[
        "inflated-mean",
        "nan-mean",
        "other-env",
        "short-lengths",
        "not-a-list",
        "empty",
        "replay-longer-than-episode",
        "benchmark-of-another-seed",
        "benchmark-score",
    ],
)
def test_a_results_json_that_is_not_its_agents_evaluation_is_refused(
    agent_files: dict[str, bytes], hub: HubServer, edit: Any, message: str
) -> None:
    files = dict(agent_files)
    results = json.loads(files["results.json"])
    edit(results)
    files["results.json"] = json.dumps(results).encode()
    with pytest.raises(ZooError, match=r"results\.json is not an evaluation this zoo wrote: " + message):
        load_from_hub(serve(hub, files), device="cpu")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda results: results.update(mean_reward=results["mean_reward"] + 100), "mean_reward .*its episodes give"),
        (lambda results: results.update(std_reward=float("inf")), "std_reward inf"),
        (lambda results: results.update(env_id="Other-v0"), "env_id 'Other-v0'"),
        (lambda results: results.pop("mean_reward"), "mean_reward None"),
    ],
    ids=["inflated-mean", "inf-std", "other-env", "no-mean"],
)
def test_a_push_refuses_a_results_json_that_is_not_its_agents_evaluation(
    run_dir: Path, tmp_path: Path, edit: Any, message: str
) -> None:
    # The push side checks what the pull side checks: before, an edited results.json (its manifest written again)
    # was uploaded and its score shown on the card, or a missing mean was a KeyError.
    folder = tmp_path / ENV_ID
    package_agent(run_dir, ENV_ID, folder, record_video=False)
    results = json.loads((folder / "results.json").read_text())
    edit(results)
    (folder / "results.json").write_text(json.dumps(results))
    write_manifest(folder)
    with pytest.raises(ZooError, match=r"results\.json is not an evaluation this zoo wrote: " + message):
        push_folder(folder, "tester/edited")
