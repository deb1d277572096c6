"""zoo.hub.client: user errors as one line, retries of transient failures, files checked on download."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest
from huggingface_hub import HfApi, constants, get_session
from huggingface_hub.errors import OfflineModeIsEnabled

from sb3_reinforce import Reinforce
from tests.hub.support import TOKEN, push, repo, upload_agent, use_endpoint
from tests.hub_server import HubServer
from zoo.errors import ZooError
from zoo.hub import client, load_from_hub


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
    use_endpoint(monkeypatch, dead)
    with caplog.at_level(logging.WARNING, logger="zoo.hub"):
        with pytest.raises(
            ZooError,
            match=rf"could not reach the Hub at http://127\.0\.0\.1:\d+ after {client.RETRY_ATTEMPTS} attempts",
        ):
            push(model, repo("down"), record_video=False)
        retries = [r for r in caplog.records if "retrying" in r.getMessage()]
        assert len(retries) == client.RETRY_ATTEMPTS - 1
        with pytest.raises(ZooError, match=r"could not reach the Hub .* not in the local cache"):
            load_from_hub("tester/anything", cache_dir=tmp_path / "empty-cache")


def test_a_cached_agent_loads_while_the_hub_is_down(
    published: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    revision = load_from_hub(published, device="cpu").revision
    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        use_endpoint(monkeypatch, f"http://127.0.0.1:{probe.getsockname()[1]}")
    with caplog.at_level(logging.WARNING, logger="zoo.hub"):
        assert load_from_hub(published, device="cpu").revision == revision  # the cache answers, without sizes
    assert len([r for r in caplog.records if "retrying" in r.getMessage()]) == client.RETRY_ATTEMPTS - 1


def test_transient_errors_are_retried(model: Reinforce, hub: HubServer) -> None:
    repo_id = repo("flaky")
    hub.fail_next(2, status=503)
    result = push(model, repo_id, record_video=False)
    assert len(hub.commits(repo_id)) == 2
    assert hub.commits(repo_id)[-1].sha == result.commit
    hub.fail_next(1, status=502)
    assert load_from_hub(repo_id, device="cpu").revision == result.commit


def test_tampered_truncated_or_mismatched_files(published: str, hub: HubServer, hub_env: Path) -> None:
    weights = hub.read(published, "model.safetensors")
    config_bytes = hub.read(published, "config.json")
    config = json.loads(config_bytes)

    truncated = repo("truncated")  # a manifest that vouches for the truncated file: config.json's record catches it
    upload_agent(hub.url, truncated, {"config.json": config_bytes, "model.safetensors": weights[:-50]})
    with pytest.raises(ZooError, match=r"model\.safetensors is corrupt or was modified"):
        load_from_hub(truncated)

    mismatched = repo("mismatched")
    config["policy_kwargs"]["net_arch"] = [32]
    upload_agent(hub.url, mismatched, {"config.json": json.dumps(config).encode(), "model.safetensors": weights})
    with pytest.raises(ZooError, match=r"does not match the model that config\.json describes: .* is \(16, 4\)"):
        load_from_hub(mismatched)

    upload_agent(hub.url, mismatched, {"config.json": b'{"format": "sb3-rein', "model.safetensors": weights})
    with pytest.raises(ZooError, match=r"config\.json is not valid JSON"):
        load_from_hub(mismatched)

    agent = load_from_hub(published)  # a good download, then its cached copy is damaged on disk
    cached = (agent.local_dir / "model.safetensors").resolve()
    cached.write_bytes(cached.read_bytes()[:100])
    with pytest.raises(ZooError, match=r"corrupt or was modified"):
        load_from_hub(published)


def test_timeouts_go_through_the_client_factory(published: str, hub: HubServer) -> None:
    load_from_hub(published, device="cpu")
    session = get_session()
    hooks = list(session.event_hooks["request"])
    assert client._apply_timeout in hooks  # built in by the factory the zoo gave huggingface_hub
    load_from_hub(published, device="cpu", timeout=3)
    assert get_session() is session
    assert list(session.event_hooks["request"]) == hooks  # no operation edits the live session

    request = session.build_request("GET", hub.url, timeout=None)
    client._apply_timeout(request)
    assert request.extensions["timeout"]["read"] is None  # outside a zoo operation, huggingface_hub's own
    with client.request_timeout(2.5), client.request_timeout(4.0):
        client._apply_timeout(request)
        assert request.extensions["timeout"] == {"connect": 4.0, "read": 4.0, "write": 4.0, "pool": 4.0}


def test_the_zoos_client_keeps_huggingface_hubs_own_request_hook(
    hub: HubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # client_factory starts from huggingface_hub's default client, which only a private module builds (2.x has no
    # public one): its request hook is what refuses every request under HF_HUB_OFFLINE.
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    hub.requests.clear()
    with client.client_factory() as http, pytest.raises(OfflineModeIsEnabled):
        http.get(f"{hub.url}/api/whoami-v2")
    assert hub.requests == []


def test_a_local_os_error_is_one_line(published: str, tmp_path: Path) -> None:
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file where the cache should be")
    with pytest.raises(ZooError, match=rf"download {published}: .*cache") as error:
        load_from_hub(published, cache_dir=not_a_folder)
    assert "\n" not in str(error.value)
