"""The README's quick start runs as written, and the commands it names exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_block_after(heading: str) -> str:
    text = README.read_text()
    section = text.split(heading, 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, f"no python block after {heading!r}"
    return match.group(1)


def test_quick_start_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(python_block_after("## Quick start"), "README quick start", "exec"), {})
    assert (tmp_path / "reinforce_cartpole.zip").is_file()
    match = re.search(r"mean reward ([\d.]+) \+/- ([\d.]+)", capsys.readouterr().out)
    assert match
    # The quick start's promise: 100k steps are enough to get close to CartPole-v1's maximum of 500.
    assert float(match.group(1)) >= 400


def test_readme_commands_name_real_things() -> None:
    from zoo.cli import COMMANDS

    root = README.parent
    for page in [README, *sorted((root / "docs").rglob("*.md"))]:
        text = page.read_text()
        for path in re.findall(r"`((?:tests|benchmarks|zoo|sb3_reinforce|docs)/[\w/.-]+\.(?:py|yml|md))`", text):
            assert (root / path).exists(), (page.name, path)
        for command in re.findall(r"python -m zoo ([a-z-]+)", text):
            assert command in COMMANDS, (page.name, command)
    # CI runs exactly the README's test command: the last line of .ci/run.
    ci_command = (root / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci_command.startswith("pip install -e ")
    assert ci_command.endswith("&& python -m pytest")
    assert ci_command in README.read_text()


def test_readme_links_resolve_and_it_stays_short() -> None:
    text = README.read_text()
    assert len(text.encode()) <= 8 * 1024
    links = re.findall(r"\]\(([^)#]+)\)", text)
    local = [link for link in links if not link.startswith("http")]
    assert local
    for link in local:
        assert (README.parent / link).exists(), link
