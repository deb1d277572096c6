"""The lint gate runs with the tests: ruff (rules in pyproject.toml) and mypy, both without --exit-zero."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "ruff", "check", "sb3_reinforce", "zoo", "tests", "benchmarks"],
        [sys.executable, "-m", "ruff", "format", "--check", "sb3_reinforce", "zoo", "tests", "benchmarks"],
        [sys.executable, "-m", "mypy"],
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_lint(command: list[str]) -> None:
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
