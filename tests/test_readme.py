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


def test_gae_snippet_runs() -> None:
    namespace: dict[str, object] = {}
    exec(compile(python_block_after("## GAE rollout buffer"), "README GAE snippet", "exec"), namespace)
    model = namespace["model"]
    assert type(model.rollout_buffer).__name__ == "GAERolloutBuffer"  # type: ignore[attr-defined]


def test_readme_commands_name_real_things() -> None:
    text = README.read_text()
    root = README.parent
    for path in re.findall(r"`((?:tests|benchmarks|zoo|sb3_reinforce)/[\w/.-]+\.(?:py|yml|md))`", text):
        assert (root / path).exists(), path
    for command in re.findall(r"python -m zoo ([a-z-]+)", text):
        from zoo.cli import COMMANDS

        assert command in COMMANDS, command
    assert 'pip install -e ".[zoo,mujoco,rl-zoo3,tests]" && python -m pytest' in text


def test_readme_benchmark_table_is_the_committed_one() -> None:
    # The zoo table in the README is copied from benchmarks/results/zoo/benchmark.md (`python -m zoo benchmark`).
    table = (README.parent / "benchmarks" / "results" / "zoo" / "benchmark.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| env ")]
    assert rows
    readme = README.read_text()
    assert [row for row in rows if row not in readme] == []
