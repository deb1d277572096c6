"""SIGTERM handled as Ctrl-C while a driver waits on runs it started elsewhere (worker processes, Ray tasks)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


@contextlib.contextmanager
def terminated_as_interrupted() -> Iterator[None]:
    """SIGTERM (``kill``, a scheduler's preemption) raised as KeyboardInterrupt in the block: the driver's Ctrl-C path
    then stops its workers or cancels its tasks and keeps the finished runs. By default SIGTERM would end the driver
    alone and leave each run training on, unwatched, to a result nobody collects.

    Enter it after ``ray.init``, which installs Ray's own SIGTERM handler (one that exits the driver at once).
    """
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set a handler
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        # None: a handler installed outside Python (Ray's, in C++), which Python cannot put back.
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
