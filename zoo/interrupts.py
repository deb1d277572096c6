"""Interrupts that reach their code: SIGTERM handled as Ctrl-C while a driver waits on runs it started elsewhere
(worker processes, Ray tasks), a local worker stopped by its driver alone, and a cancelled Ray task's interrupt
repeated until the task has stopped."""

from __future__ import annotations

import _thread
import contextlib
import shutil
import signal
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TypeVar

Argument = TypeVar("Argument")
Result = TypeVar("Result")

# How often a cancelled task is interrupted again while it has not stopped (see :func:`interrupted_until_stopped`):
# well inside the driver's grace before it kills the worker (zoo.ray_backend.CANCEL_GRACE_S).
INTERRUPT_REPEAT_S = 1.0


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


def stopped_by_the_driver() -> None:
    """Initializer of a local worker process (``multiprocessing.Pool``) whose tasks run through :func:`run_in_worker`:
    Ctrl-C is its driver's alone, and the driver's SIGTERM (``Pool.terminate``, which then waits for each worker to
    exit) interrupts a task as Ctrl-C would, so that a run saves what it has and each file being written is finished
    or removed; the worker then exits quietly, in a task or between two.

    Why: a terminal's Ctrl-C reaches every process of its group. A worker that took it began to save its model while
    the driver, interrupted too, terminated it, and SIGTERM's default action ended it in the middle of an atomic
    write, whose temporary file was left behind (empty ``.<env>.tmp-<pid>-<id>.zip`` files in the runs' partial
    folders). Now each worker takes a single interrupt, from its driver, and its cleanup runs.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_quietly)


def _exit_quietly(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(1)  # between tasks: nothing to save, and no traceback from the pool's own loop


def run_in_worker(function: Callable[[Argument], Result], argument: Argument) -> Result:
    """``function(argument)`` in a worker set up by :func:`stopped_by_the_driver`, SIGTERM raised in it as Ctrl-C
    (:func:`terminated_as_interrupted`); interrupted, the worker exits with status 1 once the task's own Ctrl-C path
    has run (it says what it saved), without a traceback."""
    try:
        with terminated_as_interrupted():
            return function(argument)
    except KeyboardInterrupt:
        raise SystemExit(1) from None


@contextlib.contextmanager
def interrupted_until_stopped(every_s: float = INTERRUPT_REPEAT_S) -> Iterator[None]:
    """Once interrupted (SIGINT, or Ray's cancel, which calls ``_thread.interrupt_main``), the block is interrupted
    again every ``every_s`` until it has been left.

    Why: Python raises the KeyboardInterrupt in whatever code the main thread runs at that moment, and when that is a
    callback from C (numba's compiler calling llvmlite through ctypes, while a training compiles its kernels), a
    finalizer or a weakref callback, the exception is printed as "Exception ignored" and lost. A Ray task cancelled
    so trained on until the driver killed its worker, which left the task's scratch folder behind (seen in the
    workers' logs of a loaded machine, cancels pressed while fresh workers compiled the kernels). Only the main
    thread can take signals: elsewhere this does nothing.

    The handler is installed whatever the one inherited: the workers of a Ray node started in the background (`ray
    start ... &` in a script) inherit SIGINT ignored, where ``_thread.interrupt_main``, and so Ray's cancel, does
    nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    interrupted = threading.Event()
    left = threading.Event()
    # The repeater checks `left` and sends under it, and the block sets `left` under it: once set, nothing more is
    # sent. Reentrant, so that an interrupt landing as the block takes it cannot leave the block waiting on itself.
    deciding = threading.RLock()

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        interrupted.set()
        raise KeyboardInterrupt

    def repeat() -> None:
        while not left.wait(every_s):
            with deciding:
                if interrupted.is_set() and not left.is_set():
                    # Not an OS signal (signal.raise_signal): a Ray worker blocks SIGINT in its threads, so one
                    # raised would stay pending. interrupt_main runs the handler in the main thread, as Ray does.
                    _thread.interrupt_main(signal.SIGINT)

    previous = signal.signal(signal.SIGINT, on_interrupt)
    threading.Thread(target=repeat, name="interrupt-repeater", daemon=True).start()
    try:
        yield
    finally:
        # An interrupt sent just before lands here: it is dropped (the block is being left) and `left` set again,
        # since a repeater left running would interrupt whatever comes next (a reused Ray worker's next task).
        while True:
            try:
                with deciding:
                    left.set()
                break
            except KeyboardInterrupt:
                continue
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)


@contextlib.contextmanager
def scratch_folder(parent: Path, prefix: str) -> Iterator[Path]:
    """A new folder ``parent/<prefix><random hex>``, removed when the block ends, an interrupt during the removal
    included.

    A second interrupt (repeated by :func:`interrupted_until_stopped`, or a second Ctrl-C) that lands in
    ``shutil.rmtree`` would stop it half-way and keep the folder: the removal is then started again, and the
    interrupt raised once it is done. The folder is made inside the ``try`` (its 128-bit random name is no other
    folder's), so an interrupt before it exists leaves nothing behind either.
    """
    folder = parent / f"{prefix}{uuid.uuid4().hex}"
    try:
        folder.mkdir(mode=0o700)
        yield folder
    finally:
        interrupted = False
        while True:
            try:
                shutil.rmtree(folder, ignore_errors=True)
                break
            except KeyboardInterrupt:
                interrupted = True
        if interrupted:
            raise KeyboardInterrupt
