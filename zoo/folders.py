"""Folders written so that a reader never sees half of one: build in a staging folder, then move into place."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from zoo.errors import ZooError


@contextlib.contextmanager
def staging(prefix: str = "zoo-") -> Iterator[Path]:
    """A temporary folder, removed on exit."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def move_into_place(staged: Path, target: Path) -> None:
    """Make ``target`` a folder holding exactly the files of ``staged``; a reader never sees a half-written one.

    The files are gathered in a temporary folder beside ``target`` (same filesystem), which is then renamed.
    """
    if target.exists() and not target.is_dir():
        raise ZooError(f"{target} exists and is not a folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    sibling = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    old: Path | None = None
    try:
        for path in staged.iterdir():
            moved = Path(shutil.move(str(path), str(sibling / path.name)))
            moved.chmod(0o644)  # some writers (safetensors, mkdtemp) use owner-only modes: this is for sharing
        sibling.chmod(0o755)
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}-{time.monotonic_ns()}")
            target.rename(old)
        sibling.rename(target)
    except BaseException:
        if old is not None and not target.exists():
            old.rename(target)
        shutil.rmtree(sibling, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
