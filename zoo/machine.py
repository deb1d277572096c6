"""What a measurement ran on, recorded beside it.

The CPU matters for more than speed: the same seed gives bit-identical runs on one machine but slightly different
floats on another (measured between an Intel and an AMD CPU, both with AVX-512), and a long run on a chaotic env
(LunarLander's physics) then follows a different trajectory.
"""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path

SIMD_FLAGS = ("sse4_2", "avx2", "fma", "avx512f")


def cpu_model() -> str:
    """The CPU's model name and its widest SIMD extensions, e.g. ``Intel(R) Xeon(R) Processor (avx2, avx512f)``."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or platform.machine() or "unknown CPU"
    model = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown CPU")
    flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
    simd = [flag for flag in SIMD_FLAGS if flag in flags]
    return f"{model} ({', '.join(simd)})" if simd else model


# What decides an evaluation's digits besides the agent: the CPU (above), and the libraries that do its arithmetic.
EVALUATION_LIBRARIES = {"torch": "torch", "numpy": "numpy", "gymnasium": "gymnasium", "mujoco": "mujoco"}


def evaluation_machine(*, mujoco: bool) -> dict[str, str]:
    """The CPU and the installed versions of the libraries whose floating point an evaluation's episodes follow
    (MuJoCo's for a MuJoCo task only)."""
    versions = {}
    for name, distribution in EVALUATION_LIBRARIES.items():
        if name == "mujoco" and not mujoco:
            continue
        try:
            versions[name] = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return {"cpu": cpu_model(), **versions}
