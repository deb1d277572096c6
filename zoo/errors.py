"""The zoo's one exception: a user error, reported by the CLI as one line and exit status 2."""

from __future__ import annotations


class ZooError(Exception):
    """A user error: reported as one line and a non-zero exit, without a traceback."""


def first_line(error: BaseException) -> str:
    """``"<exception class>: <first line of its message>"``, for a one-line report of another library's error."""
    text = str(error).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0] if lines else text}"
