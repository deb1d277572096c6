"""Files and folders written so that a reader never sees half of one: write a temporary file or build a staging
folder beside the target, then rename it into place. A write that fails midway (disk full, quota, a file size
limit, Ctrl-C) leaves the previous file as it was, never a truncated one."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from zoo.errors import ZooError, first_line


def write_atomically(path: str | Path, write: Callable[[Path], object], what: str = "file") -> Path:
    """``write(temporary)``, then the temporary file (flushed to disk) renamed to ``path``.

    The temporary file sits beside ``path`` (same filesystem, so the rename is atomic) and keeps its suffix, since
    some writers add one (SB3's ``save`` appends ``.zip`` to a path without it). A failed write removes it and
    raises a ZooError naming ``what`` and ``path``, which still holds its previous content, if it had one.
    """
    path = Path(path)
    temporary = path.with_name(f".{path.stem}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}{path.suffix}")
    try:
        write(temporary)
        with temporary.open("rb+") as file:  # delayed allocation can report a full disk only here
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except OSError as error:
        before = "it keeps its previous content" if path.exists() else "nothing was written there"
        raise ZooError(f"could not write the {what} {path}: {first_line(error)}; {before}") from None
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
    return path


def check_folder_path(path: str | Path, what: str) -> Path:
    """``path`` if it is, or can be made, a folder; a ZooError naming ``what`` if it, or the nearest of its parents
    that exists, is a file, or if the path cannot be looked at (a name too long, no permission)."""
    path = Path(path)
    try:
        for candidate in (path, *path.parents):
            if candidate.exists():
                if not candidate.is_dir():
                    raise ZooError(f"{what} {path}: {candidate} is a file, not a folder")
                break
    except OSError as error:
        raise ZooError(f"{what} {path}: {first_line(error)}") from None
    return path


def check_file_path(path: str | Path, what: str) -> Path:
    """``path`` if a file can be written there; a ZooError naming ``what`` if it is a folder, or if its folder
    cannot be one (see :func:`check_folder_path`)."""
    path = Path(path)
    try:
        is_folder = path.is_dir()
    except OSError as error:  # a name too long, no permission
        raise ZooError(f"{what} {path}: {first_line(error)}") from None
    if is_folder:
        raise ZooError(f"{what} {path} is a folder; name a file")
    check_folder_path(path.parent, f"the folder of {what}")
    return path


def make_folder(path: str | Path, what: str) -> Path:
    """``path`` as a folder, created with its parents; a ZooError naming ``what`` where it cannot be one."""
    path = check_folder_path(path, what)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ZooError(f"could not create {what} {path}: {first_line(error)}") from None
    return path


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
