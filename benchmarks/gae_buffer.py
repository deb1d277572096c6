"""Benchmark: SB3's ``RolloutBuffer.compute_returns_and_advantage`` against ``GAERolloutBuffer``'s.

Both run in the same process on the same data, interleaved (alternating which goes first) so that machine noise
hits both alike. Each sample times enough back-to-back calls to last about a millisecond; the table reports the
median time per call. Warm-up calls are excluded, so the one-off cost of the first call (numba compiling the
kernel, or loading it from numba's on-disk cache) is measured separately, in fresh subprocesses.

Run from the repository root, on a quiet machine::

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. taskset -c 0 \\
        python benchmarks/gae_buffer.py

It prints a Markdown table and writes it to ``benchmarks/results/gae_buffer.md`` (and a CSV beside it).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np
import stable_baselines3
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer

from sb3_reinforce.common.buffers import GAERolloutBuffer
from zoo.machine import cpu_model

DEFAULT_SHAPES = ((2048, 1), (2048, 16), (128, 256), (1000, 1024))
TARGET_SHAPE, TARGET_SPEEDUP = (2048, 16), 30.0
RESULTS_DIR = Path(__file__).resolve().parent / "results"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")


@dataclass
class Row:
    n_steps: int
    n_envs: int
    sb3_ms: float
    ours_ms: float
    max_abs_diff: float

    @property
    def speedup(self) -> float:
        return self.sb3_ms / self.ours_ms


def make_buffers(
    n_steps: int, n_envs: int, seed: int = 0
) -> tuple[RolloutBuffer, RolloutBuffer, th.Tensor, np.ndarray]:
    """An SB3 buffer and ours holding the same rollout (random rewards/values, ~2% episode starts)."""
    rng = np.random.default_rng(seed)
    rewards = rng.standard_normal((n_steps, n_envs)).astype(np.float32)
    values = rng.standard_normal((n_steps, n_envs)).astype(np.float32)
    starts = (rng.random((n_steps, n_envs)) < 0.02).astype(np.float32)
    buffers = []
    for cls in (RolloutBuffer, GAERolloutBuffer):
        # Observations are never touched by the GAE pass: keep them tiny so large shapes fit in memory quickly.
        buffer = cls(n_steps, spaces.Box(-1, 1, (1,)), spaces.Discrete(2), "cpu", 0.95, 0.99, n_envs)
        buffer.rewards[:] = rewards
        buffer.values[:] = values
        buffer.episode_starts[:] = starts
        buffers.append(buffer)
    last_values = th.as_tensor(rng.standard_normal((n_envs, 1)), dtype=th.float32)
    dones = rng.random(n_envs) < 0.02
    return buffers[0], buffers[1], last_values, dones


def calls_per_sample(func: Callable[[], None], target_s: float) -> int:
    start = time.perf_counter()
    func()
    once = time.perf_counter() - start
    return max(1, math.ceil(target_s / max(once, 1e-7)))


def sample(func: Callable[[], None], number: int) -> float:
    """Seconds per call, averaged over ``number`` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(number):
        func()
    return (time.perf_counter() - start) / number


def bench_shape(n_steps: int, n_envs: int, repeats: int, warmup: int, target_s: float) -> Row:
    sb3, ours, last_values, dones = make_buffers(n_steps, n_envs)
    runners = {
        "sb3": lambda: sb3.compute_returns_and_advantage(last_values, dones),
        "ours": lambda: ours.compute_returns_and_advantage(last_values, dones),
    }
    for _ in range(warmup):
        for run in runners.values():
            run()
    max_abs_diff = float(np.abs(ours.advantages - sb3.advantages).max())
    numbers = {name: calls_per_sample(run, target_s) for name, run in runners.items()}
    times: dict[str, list[float]] = {name: [] for name in runners}
    for i in range(repeats):
        order = ("sb3", "ours") if i % 2 == 0 else ("ours", "sb3")
        for name in order:
            times[name].append(sample(runners[name], numbers[name]))
    return Row(
        n_steps,
        n_envs,
        1e3 * statistics.median(times["sb3"]),
        1e3 * statistics.median(times["ours"]),
        max_abs_diff,
    )


def first_call_probe(n_steps: int, n_envs: int) -> None:
    """Subprocess mode: time the first GAERolloutBuffer call in a fresh process and print it as JSON."""
    _, ours, last_values, dones = make_buffers(n_steps, n_envs)
    start = time.perf_counter()
    ours.compute_returns_and_advantage(last_values, dones)
    first = time.perf_counter() - start
    start = time.perf_counter()
    ours.compute_returns_and_advantage(last_values, dones)
    second = time.perf_counter() - start
    print(json.dumps({"first_ms": 1e3 * first, "second_ms": 1e3 * second}))


def measure_first_calls(n_steps: int, n_envs: int) -> dict[str, float]:
    """First-call cost in fresh processes: with an empty numba cache (compile) and then a filled one (load)."""
    result: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache_dir:
        repo_root = str(Path(__file__).resolve().parents[1])
        python_path = os.pathsep.join(p for p in (repo_root, os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "PYTHONPATH": python_path}
        for label in ("compile", "cache_load"):
            command = [sys.executable, str(Path(__file__).resolve()), "--probe-first-call", f"{n_steps}x{n_envs}"]
            output = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
            probe = json.loads(output.strip().splitlines()[-1])
            result[f"{label}_first_call_ms"] = probe["first_ms"]
            result[f"{label}_second_call_ms"] = probe["second_ms"]
    return result


def machine_description() -> dict[str, str]:
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return {
        "cpu": cpu_model(),
        "logical cores": str(os.cpu_count()),
        "cores used (affinity)": ",".join(map(str, affinity)) or "unknown",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "torch": th.__version__.split("+")[0] + f" ({th.get_num_threads()} thread(s))",
        "stable-baselines3": stable_baselines3.__version__,
        **{name: os.environ.get(name, "unset") for name in THREAD_VARIABLES},
    }


def reproduce_command(argv: list[str]) -> str:
    env = " ".join(f"{name}={os.environ[name]}" for name in THREAD_VARIABLES if name in os.environ)
    pin = ""
    if hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) < (os.cpu_count() or 0):
        pin = "taskset -c " + ",".join(map(str, sorted(os.sched_getaffinity(0)))) + " "
    args = " ".join(shlex.quote(a) for a in argv)
    return f"{env} PYTHONPATH=. {pin}python benchmarks/gae_buffer.py {args}".strip().replace("  ", " ")


def render_markdown(
    rows: list[Row],
    first_calls: dict[str, float] | None,
    probe_shape: tuple[int, int],
    machine: dict[str, str],
    command: str,
    repeats: int,
) -> str:
    lines = [
        "# GAE: SB3 `RolloutBuffer` vs `GAERolloutBuffer`",
        "",
        "`compute_returns_and_advantage` (GAE + returns) per call, median of "
        f"{repeats} interleaved samples, warm-up excluded.",
        "",
        "| shape (T, N) | SB3 median ms | ours median ms | speed-up (SB3 / ours) | max abs diff of advantages |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| ({row.n_steps}, {row.n_envs}) | {row.sb3_ms:.4g} | {row.ours_ms:.4g} | {row.speedup:.1f}x "
            f"| {row.max_abs_diff:.1e} |"
        )
    lines += ["", f"Targets: >= {TARGET_SPEEDUP:g}x at {TARGET_SHAPE}, no slower than SB3 at any shape."]
    if first_calls:
        lines += [
            "",
            f"One-off first call of `GAERolloutBuffer` in a fresh process, shape {probe_shape}:",
            "",
            f"- numba cache empty (JIT compile): {first_calls['compile_first_call_ms']:.0f} ms "
            f"(next call {first_calls['compile_second_call_ms']:.3f} ms)",
            f"- numba cache filled (load from disk): {first_calls['cache_load_first_call_ms']:.1f} ms "
            f"(next call {first_calls['cache_load_second_call_ms']:.3f} ms)",
            "",
            "Both include numba's one-off runtime start-up (~0.3 s on this machine), paid by the first numba call "
            "of any kind in a process; loading the cached kernel itself takes a few ms.",
        ]
    lines += ["", "## Machine", ""]
    lines += [f"- {key}: {value}" for key, value in machine.items()]
    lines += ["", "## Reproduce", "", "```sh", command, "```", ""]
    return "\n".join(lines)


def write_csv(path: Path, rows: list[Row]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["n_steps", "n_envs", "sb3_median_ms", "ours_median_ms", "speedup", "max_abs_diff"])
        for row in rows:
            timings = [f"{row.sb3_ms:.6g}", f"{row.ours_ms:.6g}", f"{row.speedup:.4g}"]
            writer.writerow([row.n_steps, row.n_envs, *timings, f"{row.max_abs_diff:.3g}"])


def parse_shape(text: str) -> tuple[int, int]:
    n_steps, n_envs = (int(part) for part in text.lower().split("x"))
    return n_steps, n_envs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--shapes", nargs="+", type=parse_shape, default=list(DEFAULT_SHAPES), metavar="TxN")
    parser.add_argument("--repeats", type=int, default=31, help="interleaved samples per implementation and shape")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls per implementation first")
    parser.add_argument("--sample-seconds", type=float, default=2e-3, help="minimum duration of one sample")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--no-first-call", action="store_true", help="skip the fresh-process first-call probes")
    parser.add_argument("--check", action="store_true", help="exit with status 1 if a target is missed")
    parser.add_argument("--probe-first-call", type=parse_shape, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.probe_first_call is not None:
        first_call_probe(*args.probe_first_call)
        return 0

    th.set_num_threads(1)
    probe_shape = TARGET_SHAPE if TARGET_SHAPE in args.shapes else args.shapes[0]
    first_calls = None if args.no_first_call else measure_first_calls(*probe_shape)
    rows = [
        bench_shape(n_steps, n_envs, args.repeats, args.warmup, args.sample_seconds) for n_steps, n_envs in args.shapes
    ]

    command = reproduce_command(sys.argv[1:] if argv is None else argv)
    markdown = render_markdown(rows, first_calls, probe_shape, machine_description(), command, args.repeats)
    print(markdown)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "gae_buffer.md").write_text(markdown)
    write_csv(args.output_dir / "gae_buffer.csv", rows)

    missed = [row for row in rows if row.speedup < 1.0]
    missed += [row for row in rows if (row.n_steps, row.n_envs) == TARGET_SHAPE and row.speedup < TARGET_SPEEDUP]
    for row in missed:
        print(f"target missed at ({row.n_steps}, {row.n_envs}): {row.speedup:.1f}x", file=sys.stderr)
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
