"""Interrupts that must reach their code (zoo.interrupts): a cancelled Ray task's interrupt that Python lost, and a
scratch folder removed however often its removal is interrupted.

Interrupts are delivered to a child process, so that none can reach pytest's own main thread.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from zoo import interrupts
from zoo.interrupts import scratch_folder

ROOT = Path(__file__).resolve().parent.parent
# A bound far above what the child takes (a tenth of a second), reached only if it trains on after its interrupt.
HANG_S = 120


def child(body: str) -> subprocess.CompletedProcess[str]:
    """Run ``body`` in a fresh Python with these helpers: ``lose_an_interrupt()`` interrupts the main thread inside a
    callback from C, as Ray's cancel does when it lands while numba's compiler calls llvmlite through ctypes (Python
    prints the KeyboardInterrupt as "Exception ignored" and goes on); ``train_for(s)`` runs Python code for ``s``
    seconds."""
    prelude = """
        import _thread, ctypes, signal, time
        from zoo.interrupts import interrupted_until_stopped

        def in_c_callback():
            _thread.interrupt_main(signal.SIGINT)
            for _ in range(1_000_000):  # Python code, where the interrupt is raised, inside the callback
                pass

        lose_an_interrupt = ctypes.CFUNCTYPE(None)(in_c_callback)

        def train_for(seconds):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                sum(range(1000))
    """
    code = textwrap.dedent(prelude) + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_S, cwd=ROOT, check=False
    )


@pytest.mark.parametrize("sigint", ["handled", "blocked"], ids=["sigint-handled", "sigint-blocked-as-in-a-ray-worker"])
def test_an_interrupt_lost_in_a_callback_from_c_is_sent_again(sigint: str) -> None:
    # A Ray worker blocks SIGINT in its threads (pthread_sigmask): the interrupts must not be OS signals.
    block = "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})" if sigint == "blocked" else "pass"
    ran = child(f"""
        {block}
        try:
            with interrupted_until_stopped(every_s=0.05):
                lose_an_interrupt()
                train_for({HANG_S // 2})
            print("trained on")
        except KeyboardInterrupt:
            print("stopped")
    """)
    assert "Exception ignored" in ran.stderr, ran.stderr  # the first interrupt was lost...
    assert "KeyboardInterrupt" in ran.stderr, ran.stderr
    assert ran.stdout.splitlines() == ["stopped"], ran.stdout + ran.stderr


def test_without_it_the_lost_interrupt_leaves_the_code_running() -> None:
    # The same code, unguarded: what a cancelled task did (the reason for the guard, and a check that the child
    # really loses its interrupt).
    ran = child("""
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            lose_an_interrupt()
            train_for(1.0)
            print("trained on")
        except KeyboardInterrupt:
            print("stopped")
    """)
    assert ran.stdout.splitlines() == ["trained on"], ran.stdout + ran.stderr


def test_an_inherited_ignored_sigint_still_interrupts_and_is_put_back() -> None:
    # A Ray node started in the background (`ray start ... &`) gives its workers SIGINT ignored, where Ray's cancel
    # would do nothing; after the block the inherited disposition is back.
    ran = child(f"""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            with interrupted_until_stopped(every_s=0.05):
                _thread.interrupt_main(signal.SIGINT)
                train_for({HANG_S // 2})
            print("trained on")
        except KeyboardInterrupt:
            print("stopped")
        print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)
    """)
    assert ran.stdout.splitlines() == ["stopped", "True"], ran.stdout + ran.stderr


def test_no_interrupt_is_sent_after_the_block_nor_without_one() -> None:
    # Interrupted inside, then quiet once left, even with the repeater sending every millisecond as the block is
    # left (the race: an interrupt sent as `left` is set would land after the block, in a reused Ray worker's next
    # task), 200 times over; and a block that was never interrupted is never interrupted.
    ran = child("""
        inherited = signal.getsignal(signal.SIGINT)  # ignored where the suite runs in the background (nohup, &)
        for _ in range(200):
            try:
                with interrupted_until_stopped(every_s=0.001):
                    _thread.interrupt_main(signal.SIGINT)
                    train_for(60)
            except KeyboardInterrupt:
                pass
            train_for(0.01)  # ten repeat periods
        print("quiet")
        with interrupted_until_stopped(every_s=0.05):
            train_for(0.5)
        print("never interrupted")
        print(signal.getsignal(signal.SIGINT) is inherited)
    """)
    assert ran.stdout.splitlines() == ["quiet", "never interrupted", "True"], ran.stdout + ran.stderr
    assert "Traceback" not in ran.stderr, ran.stderr


def train_in_scratch(parent: Path, error: type[BaseException] | None = None) -> Path:
    """A run's files in a scratch folder of ``parent``, the block ending with ``error`` raised (None: it finishes)."""
    with scratch_folder(parent, "zoo-ray-run-") as folder:
        (folder / "run" / "logs").mkdir(parents=True)
        for name in ("progress.csv", "monitor.csv"):
            (folder / "run" / "logs" / name).write_text("a,b\n")
        if error is not None:
            raise error("the training stopped")
    return folder


def test_the_scratch_folder_is_removed_when_the_block_finishes(tmp_path: Path) -> None:
    folder = train_in_scratch(tmp_path)
    assert folder.parent == tmp_path
    assert folder.name.startswith("zoo-ray-run-")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("error", [OSError, KeyboardInterrupt])
def test_the_scratch_folder_is_removed_when_the_block_raises(tmp_path: Path, error: type[BaseException]) -> None:
    with pytest.raises(error):
        train_in_scratch(tmp_path, error)
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_during_the_removal_still_removes_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A second interrupt (Ctrl-C pressed twice, or the repeated one) lands half-way through the removal.
    calls: list[int] = []
    rmtree = shutil.rmtree

    def interrupted_half_way(path: Path, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 1:
            next(Path(path).rglob("*.csv")).unlink()
            raise KeyboardInterrupt
        rmtree(path, **kwargs)

    monkeypatch.setattr(interrupts.shutil, "rmtree", interrupted_half_way)
    with pytest.raises(KeyboardInterrupt):
        train_in_scratch(tmp_path)
    assert len(calls) == 2
    assert list(tmp_path.iterdir()) == []
