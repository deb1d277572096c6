"""Checks of the data the zoo reads: one place, so that every reader refuses the same things the same way.

What the zoo reads may come from a download, a damaged disk or a hand-edited file, so every reader (hyperparameter
files, agent configs, VecNormalize statistics, Hub manifests, run records, search spaces) goes through these:

- one version policy: a reader reads every ``format_version`` from 1 up to its own, and asks for an upgrade for a
  newer one (:func:`check_format`);
- one digest check: a file's size, then its sha256, against the record that names it (:func:`check_digest`);
- one meaning of "an integer" and "a number": ``bool`` is neither, though Python counts it as an int, and a number
  read from data is finite (:func:`is_integer`, :func:`is_number`);
- one message style: ``<file or flag>: <field> must be <what is allowed>, got <what was found>``, where what was
  found is shown at most :data:`SHOWN_CHARS` characters long (:func:`shown`), so a hostile value cannot flood the
  one-line error the command line prints.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard

from zoo.errors import ZooError, first_line

SHOWN_CHARS = 120
MAX_JSON_BYTES = 64 << 20
MAX_FILE_BYTES = 1 << 50
SHA256 = re.compile(r"^[0-9a-f]{64}$")
# A file a record names: a plain name in the record's own folder, never a path out of it.
FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,200}$")


def shown(value: Any) -> str:
    """``repr(value)``, cut to :data:`SHOWN_CHARS` characters (with ``...``) for an error message."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def clipped(text: str, limit: int = 3 * SHOWN_CHARS) -> str:
    """Another library's message on one line, cut to ``limit`` characters (with ``...``)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def is_integer(value: Any) -> TypeGuard[int]:
    """An ``int`` that is not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_real(value: Any) -> TypeGuard[int | float]:
    """An ``int`` or ``float`` that is not a ``bool`` (infinities and NaN included)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_number(value: Any) -> TypeGuard[int | float]:
    """A real number that JSON or YAML can hold (``bool`` is not one), finite: an integer past a float's range
    (JSON holds ``10**400``) is not one, since every computation with it would overflow."""
    if not is_real(value):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def integer(value: Any, where: str, low: int, high: int) -> int:
    """``value`` if it is an integer in ``[low, high]``, else one ZooError naming ``where`` and the bounds."""
    if not (is_integer(value) and low <= value <= high):
        raise ZooError(f"{where} must be an integer in [{low:,}, {high:,}], got {shown(value)}")
    return int(value)


def flatten(value: Any, shape: tuple[int, ...], where: str) -> list[Any]:
    """The entries of nested lists of exactly ``shape``, in C order, walked level by level: no recursion, so a
    deeply nested value costs a ZooError, not a RecursionError."""
    level = [value]
    for depth, size in enumerate(shape):
        if not all(isinstance(item, list) and len(item) == size for item in level):
            raise ZooError(f"{where} does not have the shape {list(shape)} (at depth {depth})")
        level = [element for item in level for element in item]
    return level


def check_format(data: Any, source: str, name: str, version: int) -> dict[str, Any]:
    """``data`` if it is a JSON object of ``format`` ``name`` and a ``format_version`` from 1 to ``version``."""
    if not isinstance(data, dict) or data.get("format") != name:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ZooError(f"{source} is not a {name} file (format={shown(found)})")
    found_version = data.get("format_version")
    if not (is_integer(found_version) and found_version >= 1):
        raise ZooError(f"{source}: format_version must be an integer >= 1, got {shown(found_version)}")
    if found_version > version:
        raise ZooError(
            f"{source}: format_version {found_version} is newer than this zoo reads (1 to {version}): "
            "upgrade sb3-reinforce"
        )
    return data


def file_record(entry: Any, where: str) -> dict[str, Any]:
    """``entry`` as a record of one file: a mapping with an integer ``size`` >= 0 and a ``sha256`` of 64 lowercase
    hexadecimal digits (other keys are the caller's to check)."""
    if not isinstance(entry, Mapping):
        raise ZooError(f"{where} must be a mapping with size and sha256, got {shown(entry)}")
    integer(entry.get("size"), f"{where}.size", 0, MAX_FILE_BYTES)
    if not (isinstance(entry.get("sha256"), str) and SHA256.match(entry["sha256"])):
        raise ZooError(f"{where}.sha256 must be 64 hexadecimal digits, got {shown(entry.get('sha256'))}")
    return dict(entry)


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_digest(path: Path, size: Any, sha256: Any, record: str) -> Path:
    """``path``, if its size and sha256 are those that ``record`` (the file that lists it) gives; else one ZooError.

    The size is compared first, so a file of the wrong length is refused without reading it all.
    """
    found_size = path.stat().st_size
    found_sha256 = sha256_file(path) if found_size == size else None
    if found_size != size or found_sha256 != sha256:
        found = f"{found_size} bytes" + (f" with sha256 {found_sha256[:12]}..." if found_sha256 else "")
        raise ZooError(
            f"{path.name} is corrupt or was modified: {found}, but {record} records {shown(size)} bytes with "
            f"sha256 {str(sha256)[:12]}..."
        )
    return path


def read_bounded(path: Path, limit: int = MAX_JSON_BYTES) -> bytes:
    """The bytes of the regular file ``path``, of at most ``limit`` bytes, or one ZooError. Only a regular file: a
    FIFO would block the read and a device (``/dev/zero``) never end it, and ``stat`` gives both a size of 0. The
    file is opened without blocking, checked on its descriptor, and read to at most ``limit + 1`` bytes."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        what = "a folder" if stat.S_ISDIR(mode) else "a device, a FIFO or a socket"
        raise ZooError(f"{path} is not a regular file ({what}): not a file this zoo wrote")
    with os.fdopen(descriptor, "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise ZooError(f"{path} is larger than {limit >> 20} MB: not a file this zoo wrote")
    return data


def read_json(path: Path, missing: str | None = None) -> Any:
    """A JSON file of at most :data:`MAX_JSON_BYTES` (:func:`read_bounded`), or one ZooError (``missing`` replaces
    "not found")."""
    try:
        return json.loads(read_bounded(path).decode("utf-8"))
    except FileNotFoundError:
        raise ZooError(missing or f"{path} not found") from None
    except (UnicodeDecodeError, ValueError) as error:  # JSONDecodeError, and integers too long to read
        raise ZooError(f"{path} is not valid JSON ({first_line(error)}): truncated or modified?") from None
    except RecursionError:
        raise ZooError(f"{path} is nested too deeply to be a file this zoo wrote") from None
