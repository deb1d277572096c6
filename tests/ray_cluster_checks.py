"""``zoo benchmark --ray`` on a two-node Ray cluster (a head and one worker node, one CPU each).

Not collected by the default run: ``tests/test_ray.py`` runs this file inside a network namespace of its own with
only ``lo`` up, since Ray listens on every interface. The tests run in file order and share the cluster; the last
one kills the worker node. The overhead script of ``benchmarks/`` starts a cluster of its own.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if [name for _, name in socket.if_nameindex()] != ["lo"]:
    pytest.skip("run by tests/test_ray.py inside a network namespace with only lo", allow_module_level=True)

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from zoo.cli import main as cli  # noqa: E402

QUICK = ["benchmark", "--quick", "--n-timesteps", "3000"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    made = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    made.add_node(num_cpus=1)
    made.wait_for_nodes()
    try:
        yield made
    finally:
        made.shutdown()  # stops exactly the processes this cluster started


def scores(out: Path, algo: str = "reinforce", env_id: str = "CartPole-v1") -> dict[str, float]:
    runs = sorted((out / "runs" / algo / env_id).glob("seed*/result.json"))
    return {path.parent.name: json.loads(path.read_text())["mean_reward"] for path in runs}


def test_a_bad_address_is_one_line_and_no_hang(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for address, expected in [("127.0.0.1:1", "no Ray cluster answers at 127.0.0.1:1"), ("nowhere", "HOST:PORT")]:
        start = time.monotonic()
        assert cli([*QUICK, "--seeds", "1", "--out", str(tmp_path), "--ray", address]) == 2
        assert time.monotonic() - start < 20
        err = capsys.readouterr().err
        assert expected in err
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_ray_local_starts_a_private_cluster_for_the_run(tmp_path: Path) -> None:
    assert cli([*QUICK, "--seeds", "1", "--jobs", "1", "--out", str(tmp_path), "--ray", "local"]) == 0
    assert len(scores(tmp_path)) == 1
    assert not ray.is_initialized()  # and stopped it at the end


def test_the_overhead_script_reports_every_figure(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    from ray_overhead import main as overhead  # a script of benchmarks/, run as a function

    report = tmp_path / "ray_overhead.md"
    assert overhead(["--seeds", "1", "--n-timesteps", "1000", "--tasks", "3", "--out", str(report)]) == 0
    text = report.read_text()
    for what in (
        "head node start-up",
        "round trip",
        "resident memory",
        "--jobs 2",
        "scored the same on both (1 runs) | yes",
    ):
        assert what in text


def test_runs_on_ray_score_as_local_runs_and_resume(
    cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli([*QUICK, "--seeds", "2", "--jobs", "2", "--out", str(tmp_path / "local")]) == 0
    assert cli([*QUICK, "--seeds", "2", "--out", str(tmp_path / "ray"), "--ray", cluster.address]) == 0
    assert "2 runs, 0 already done, 2 to do on Ray" in capsys.readouterr().out
    # Same seeds, same CPU model, one torch thread: the same final scores, whichever backend trained them.
    assert scores(tmp_path / "ray") == scores(tmp_path / "local")
    assert len(scores(tmp_path / "ray")) == 2
    for name in ("benchmark.md", "benchmark.csv"):
        assert (tmp_path / "ray" / name).is_file()
    assert cli([*QUICK, "--seeds", "2", "--out", str(tmp_path / "ray"), "--ray", cluster.address]) == 0
    assert "2 runs, 2 already done, 0 to do" in capsys.readouterr().out


def test_ctrl_c_cancels_the_tasks_and_keeps_the_finished_runs(
    cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = [*QUICK, "--seeds", "4", "--out", str(tmp_path), "--ray", cluster.address]
    first = tmp_path / "runs" / "reinforce" / "CartPole-v1"
    wait = ray.wait

    def wait_then_ctrl_c(*args: Any, **kwargs: Any) -> Any:
        # Ctrl-C reaches the driver while it waits on its tasks, once the first run is written: an event, not a
        # time, so the test cannot race a loaded machine (before, all four runs could finish first).
        if list(first.glob("seed*/result.json")):
            raise KeyboardInterrupt
        return wait(*args, **kwargs)

    monkeypatch.setattr(ray, "wait", wait_then_ctrl_c)
    assert cli(argv) == 130
    monkeypatch.undo()
    assert "the same command resumes" in capsys.readouterr().err
    kept = len(scores(tmp_path))
    assert kept == 1
    assert not [path for path in first.iterdir() if path.name.startswith(".")]  # no half-written run
    # The cancelled tasks give their CPUs back.
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        deadline = time.monotonic() + 30
        while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ray.available_resources().get("CPU", 0) == 2
    finally:
        ray.shutdown()
    assert cli(argv) == 0
    assert f"4 runs, {kept} already done, {4 - kept} to do" in capsys.readouterr().out
    assert len(scores(tmp_path)) == 4


def test_a_killed_worker_node_has_its_task_rerun_on_the_head(
    cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    worker = next(node for node in cluster.list_all_nodes() if node is not cluster.head_node)
    head_id = cluster.head_node.node_id[:6]
    # Two runs of several seconds each: one lands on each node, and the worker dies under its run.
    argv = ["benchmark", "--envs", "Acrobot-v1", "--seeds", "2", "--n-timesteps", "20000", "--out", str(tmp_path)]
    killer = threading.Timer(6.0, cluster.remove_node, args=(worker,))
    killer.start()
    try:
        assert cli([*argv, "--ray", cluster.address]) == 0
    finally:
        killer.cancel()
    assert not killer.is_alive()
    assert len(scores(tmp_path, env_id="Acrobot-v1")) == 2
    progress = capsys.readouterr().err.strip().splitlines()[-1]
    # Both runs were finished by the head: the worker's was retried there.
    assert f"done per node: 127.0.0.1/{head_id}: 2" in progress, progress
    assert "| Acrobot-v1 | reinforce |" in (tmp_path / "benchmark.md").read_text()
