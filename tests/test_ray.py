"""``zoo benchmark --ray``: the checks of ``tests/ray_cluster_checks.py``, run in a private network.

Ray listens on every interface of the machine, so its test clusters run inside a network namespace of their own
(``unshare --net``) where only ``lo`` is up: nothing of them can be reached from outside, and they reach nothing.
Making the namespace needs root (CI runs as root); elsewhere the test is skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

CHECKS = Path(__file__).with_name("ray_cluster_checks.py")
N_CHECKS = 12


def test_the_benchmark_on_a_two_node_ray_cluster_in_a_private_network() -> None:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare and ip (util-linux, iproute2) to isolate the Ray cluster's network")
    if subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode != 0:
        pytest.skip("cannot make a network namespace here (needs root): Ray must not listen on a shared network")
    script = 'ip link set lo up && exec "$0" -m pytest -q -p no:cacheprovider "$1"'
    # A home and a temp dir of their own: Ray writes its token (~/.ray/auth_token), its sessions and the address of
    # a cluster started by `ray start` there, and the tasks their scratch folders. The temp dir's path stays short,
    # for Ray's socket paths (at most 107 characters).
    private = Path(tempfile.mkdtemp(prefix="zoo-ray-", dir="/tmp"))
    (private / "home").mkdir()
    (private / "tmp").mkdir()
    env = {**os.environ, "HOME": str(private / "home"), "TMPDIR": str(private / "tmp")}
    try:
        result = subprocess.run(
            ["unshare", "--net", "--", "sh", "-c", script, sys.executable, str(CHECKS)],
            capture_output=True,
            text=True,
            timeout=1500,
            cwd=CHECKS.parent.parent,
            env=env,
        )
    finally:
        shutil.rmtree(private, ignore_errors=True)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert f"{N_CHECKS} passed" in result.stdout, result.stdout[-3000:]
