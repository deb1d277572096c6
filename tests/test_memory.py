"""Peak memory does not grow with training length: buffers are allocated once and reused across updates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import resource, sys, torch
torch.set_num_threads(1)
from stable_baselines3.common.env_util import make_vec_env
from sb3_reinforce import Reinforce
model = Reinforce("MlpPolicy", make_vec_env("CartPole-v1", n_envs=8, seed=0), learning_rate=1e-2, baseline="mean",
                  seed=0, device="cpu")
model.learn(int(sys.argv[1]))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_rss_kib(steps: int) -> int:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(steps)], cwd=ROOT, capture_output=True, text=True, check=True, timeout=600
    )
    return int(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_ten_times_longer_run_has_the_same_peak_memory() -> None:
    short, long = peak_rss_kib(100_000), peak_rss_kib(1_000_000)
    assert long <= 1.10 * short, f"peak RSS {short} KiB after 100k steps, {long} KiB after 1M steps"
