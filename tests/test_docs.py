"""The docs site builds without a warning, and the examples on its pages run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), re.DOTALL)


def test_the_docs_build_with_warnings_as_errors(tmp_path: Path) -> None:
    pytest.importorskip("sphinx", reason="the docs need sphinx and myst-parser (the tests extra)")
    pytest.importorskip("myst_parser", reason="the docs need sphinx and myst-parser (the tests extra)")
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    assert (tmp_path / "api" / "reinforce.html").is_file()
    assert "n_episodes" in (tmp_path / "api" / "reinforce.html").read_text()  # the parameters, from the docstring


@pytest.mark.parametrize("page", ["api/reinforce.md", "guide/gae_buffer.md"])
def test_the_examples_run(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks(DOCS / page)
    assert blocks
    for index, block in enumerate(blocks):
        exec(compile(block, f"{page} example {index}", "exec"), {})
