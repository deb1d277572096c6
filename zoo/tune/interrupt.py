"""Ctrl-C in a worker, raised only where it cannot cut a write to the study's storage in half.

A KeyboardInterrupt raised inside a storage write can leave a journal's lock file behind (every later write then
waits for it to go stale) or a database row half-updated. So a worker handles SIGINT itself: while a trial is
training (:func:`interruptible`) it raises KeyboardInterrupt at once, as usual; anywhere else (the storage calls
of Optuna and of the pruning reporter) it only records the request, and :func:`check` raises it at the next safe
point. A trial stopped this way is recorded FAIL ("interrupted"), and the worker stops.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

_state = {"requested": False, "interruptible": False}


def _handler(signum: int, frame: FrameType | None) -> None:
    _state["requested"] = True
    if _state["interruptible"]:
        raise KeyboardInterrupt


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Handle SIGINT as the module doc says, for the duration of the block (the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _state.update(requested=False, interruptible=False)
    previous = signal.signal(signal.SIGINT, _handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """A block that Ctrl-C may interrupt at any point (training: no storage write in it)."""
    check()
    _state["interruptible"] = True
    try:
        yield
    finally:
        _state["interruptible"] = False


@contextlib.contextmanager
def protected() -> Iterator[None]:
    """A block inside :func:`interruptible` that Ctrl-C must not cut (a storage write); raised after it."""
    was = _state["interruptible"]
    _state["interruptible"] = False
    try:
        yield
    finally:
        _state["interruptible"] = was
    check()


def check() -> None:
    """Raise KeyboardInterrupt if Ctrl-C was pressed while it could not be raised."""
    if _state["requested"]:
        raise KeyboardInterrupt
