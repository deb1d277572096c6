"""zoo.hub.cli: ``python -m zoo push``, ``enjoy`` and ``push-all`` in-process against the local server."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import json
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import zoo.hub as hub_package
from tests.helpers import one_error_line
from tests.hub.support import ENV_ID, PUSHED, ROOT, check_card, repo
from tests.hub_server import HubServer
from zoo.cli import COMMANDS
from zoo.cli import main as cli
from zoo.errors import Message, Parameter, ZooError, in_words_of
from zoo.hub import load_from_hub, package_agent
from zoo.hub.cli import ENJOY_FLAGS, PUSH_ALL_FLAGS, PUSH_FLAGS, enjoy_main, push_all_main, push_main


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


def test_enjoy_plays_a_packaged_folder_as_its_card_says(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``enjoy --folder`` reads a packaged agent without the Hub, checked as a download is, and applies its
    VecNormalize statistics: the Pendulum-v1 agent scores its card, not the -1,100 of raw observations."""
    folder = ROOT / "hub_cards" / "Pendulum-v1"
    results = json.loads((folder / "results.json").read_text())
    episodes = ["--episodes", str(results["n_eval_episodes"]), "--seed", str(results["eval_seed"])]
    hub.requests.clear()
    assert enjoy_main(["--folder", str(folder), *episodes, "--device", "cpu"]) == 0
    assert hub.requests == []
    found = re.search(rf"^{re.escape(str(folder))} on Pendulum-v1: mean_reward (\S+) \+/- ", capsys.readouterr().out)
    assert found is not None
    assert abs(float(found.group(1)) - results["mean_reward"]) <= 2 * results["std_reward"]

    edited = tmp_path / "edited"
    shutil.copytree(folder, edited)
    stats = json.loads((edited / "vec_normalize.json").read_text())
    (edited / "vec_normalize.json").write_text(json.dumps({**stats, "clip_obs": 5.0}))
    assert cli(["enjoy", "--folder", str(edited), "--episodes", "1"]) == 2
    assert one_error_line(capsys).startswith(f"error: {edited}: vec_normalize.json is corrupt or was modified")
    assert cli(["enjoy", "--folder", str(folder), "--repo-id", "tester/x"]) == 2
    assert "argument --repo-id: not allowed with argument --folder" in capsys.readouterr().err
    assert cli(["enjoy", "--folder", str(folder), "--revision", "main"]) == 2
    assert one_error_line(capsys) == "error: --revision applies to --repo-id only; a --folder is read as it is"


def test_a_bad_device_is_named_as_the_users_flag_before_any_download(
    published: str, hub: HubServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: the download went ahead, and the error blamed it ("config.json does not describe a valid reinforce
    # model"). The bad value is the flag's.
    hub.requests.clear()
    folder = str(ROOT / "hub_cards" / ENV_ID)
    for source in (["--repo-id", published], ["--folder", folder]):
        assert cli(["enjoy", *source, "--device", "bogus"]) == 2
        assert one_error_line(capsys) == (
            "error: --device must be 'auto', 'cpu', 'cuda', 'cuda:N' or another torch device type, got 'bogus'"
        )
    assert hub.requests == []
    with pytest.raises(ZooError, match=r"^device must be 'auto', 'cpu', .* got 'cuda:x'$"):
        load_from_hub(published, device="cuda:x")
    assert hub.requests == []


def test_cli_help_states_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    for command, default in (
        (push_main, "(>= 10; default: 50)"),
        (push_main, "(default: 5)"),
        (enjoy_main, "(default: 20, as zoo train's final score)"),
        (push_all_main, "(default: hub_cards in a checkout)"),
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
        if name not in (".gitattributes", "README.md", "manifest.json"):  # the card and manifest are written again
            assert hub.read(repo_id, name) == (cards / ENV_ID / name).read_bytes(), name
    card = hub.read(repo_id, "README.md").decode()
    check_card(card, json.loads((cards / ENV_ID / "results.json").read_text()), repo_id)

    shutil.copy(cards / ENV_ID / "config.json", cards / "empty" / "config.json")  # incomplete: no weights
    with pytest.raises(ZooError, match=r"1 of 2 agents were not pushed: empty"):
        push_all_main(["--org", org, "--hub-cards", str(cards), "--dry-run"])


def test_the_library_names_parameters_and_the_commands_name_flags(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "full"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    with pytest.raises(ZooError, match=r"^dry_run_dir .* is not empty; .* pass force=True to write into it"):
        package_agent(run_dir, ENV_ID, target, record_video=False)
    with pytest.raises(ZooError, match=r"^--dry-run .* is not empty; .* pass --force to write into it"):
        push_main(["--model", str(run_dir), "--env", ENV_ID, "--repo-id", "tester/x", "--dry-run", str(target)])
    with pytest.raises(ZooError, match=r"^--timeout must be a number of seconds > 0, got -1\.0"):
        enjoy_main(["--repo-id", "tester/x", "--timeout", "-1"])
    timed_out = ZooError("timed out; allow more time (a larger ", Parameter("timeout"), ")")
    assert (str(timed_out), timed_out.parameter) == ("timed out; allow more time (a larger timeout)", "timeout")
    assert in_words_of(PUSH_FLAGS, timed_out).endswith("(a larger --timeout)")
    public = Message("x is public; ", Parameter("private", "private=True"), " does not change an existing repo")
    assert public == "x is public; private=True does not change an existing repo"
    assert in_words_of(PUSH_ALL_FLAGS, public).startswith("x is public; --private does not")
    for module in ("card", "client", "layout", "package", "pull", "push", "video"):
        source = (Path(hub_package.__file__).parent / f"{module}.py").read_text()
        flags = re.findall(r"[\"' (]--[a-z][a-z-]+", source)
        # zoo train's flags in a card's training command, pip's in its install lines
        others = ("--seed", "--algo", "--env", "--index-url")
        assert [flag for flag in flags if flag.strip("\"' (") not in others] == [], module


def test_zoo_hub_exports_the_library_and_the_commands_live_in_its_cli() -> None:
    assert not [name for name in hub_package.__all__ if name.endswith("_main") or name == "packaged_folders"]
    assert {"push_to_hub", "load_from_hub", "choose_env_kwargs", "HubAgent", "ZooError"} <= set(hub_package.__all__)
    script = "import sys, zoo.hub; print('zoo.hub.cli' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300)
    assert done.stdout.strip() == "False"  # the library does not load the commands
    for command in ("push", "enjoy", "push-all"):
        module, function, _ = COMMANDS[command]
        assert module == "zoo.hub.cli"
        assert callable(getattr(importlib.import_module(module), function))


def test_push_all_outside_a_checkout_needs_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli(["push-all", "--org", "tester", "--dry-run"]) == 2
    assert one_error_line(capsys) == (
        "error: --hub-cards is needed here: the default, hub_cards, is the folder of a checkout of sb3-reinforce"
    )
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "hub_cards").mkdir()  # in a checkout, the default folder is used
    assert cli(["push-all", "--org", "tester", "--dry-run"]) == 2
    assert "no packaged agents (folders with a config.json) under hub_cards" in one_error_line(capsys)


def test_every_parameter_the_commands_name_is_one_the_library_names() -> None:
    # The commands name the library's parameters by their flags: a parameter renamed in the library fails here,
    # rather than losing its flag from the commands' messages in silence.
    named = set()
    for path in (ROOT / "zoo").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Parameter":
                assert isinstance(node.args[0], ast.Constant), f"{path}: a Parameter named by a constant"
                named.add(node.args[0].value)
    mapped = {*PUSH_FLAGS, *ENJOY_FLAGS, *PUSH_ALL_FLAGS}
    assert mapped - named == set()
    assert named - mapped == set()  # and every parameter the library names has its flag in a command
    # Each is a name of zoo.hub's API: a function, or a parameter of one, or a field of its options.
    api = [getattr(hub_package, name) for name in hub_package.__all__]
    known = set(hub_package.__all__)
    for thing in api:
        if dataclasses.is_dataclass(thing):
            known |= {field.name for field in dataclasses.fields(thing)}
        elif inspect.isfunction(thing):
            known |= set(inspect.signature(thing).parameters)
    assert named - known == set()
