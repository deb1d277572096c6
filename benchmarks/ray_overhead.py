"""What Ray costs the benchmark: cluster start-up, per-task overhead, memory, and a small benchmark's wall-clock
on a two-node cluster (a head and one worker node, one CPU each) against ``--jobs 2`` local worker processes.

Ray listens on every interface, so the script refuses to start a cluster unless it runs in a network namespace
whose only interface is ``lo``. As root::

    unshare --net sh -c 'ip link set lo up && python benchmarks/ray_overhead.py'

Reported (one run; the machine is shared, so repeat it before trusting a small difference):

- start-up: seconds until the head node, then the worker node, is up;
- per task: the round trip of an empty task once its worker process exists, and of the first one, which starts
  a worker process on the node;
- memory: resident memory of the cluster's processes (GCS, raylets, their workers and helpers), idle after the
  tasks;
- the benchmark: ``zoo benchmark --quick --seeds N --n-timesteps T`` on Ray and with ``--jobs 2``, wall-clock and
  whether every seed scored the same.

Writes ``benchmarks/results/ray_overhead.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

from zoo.benchmark import main as benchmark
from zoo.machine import cpu_model

OUT = Path(__file__).resolve().parent / "results" / "ray_overhead.md"


def children(pids: set[int]) -> set[int]:
    """``pids`` and every live descendant of them, from /proc."""
    parent_of: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parent_of[int(entry.name)] = int(fields[1])
    found = set(pids)
    grew = True
    while grew:
        more = {pid for pid, parent in parent_of.items() if parent in found} - found
        found |= more
        grew = bool(more)
    return {pid for pid in found if pid in parent_of}


def resident_mib(pids: set[int]) -> float:
    total_kib = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        total_kib += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total_kib / 1024


def scores(out: Path) -> dict[str, float]:
    runs = sorted((out / "runs" / "reinforce" / "CartPole-v1").glob("seed*/result.json"))
    return {path.parent.name: json.loads(path.read_text())["mean_reward"] for path in runs}


def timed_benchmark(argv: list[str]) -> float:
    start = time.perf_counter()
    if benchmark(argv) != 0:
        raise SystemExit(f"python -m zoo benchmark {' '.join(argv)} failed")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=4, help="seeds of the benchmark (default: 4)")
    parser.add_argument("--n-timesteps", type=int, default=20_000, help="budget of each run (default: 20000)")
    parser.add_argument("--tasks", type=int, default=50, help="empty tasks timed for the overhead (default: 50)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"the report (default: {OUT})")
    args = parser.parse_args(argv)
    if [name for _, name in socket.if_nameindex()] != ["lo"]:
        raise SystemExit("run this inside a network namespace with only lo (see the docstring): Ray listens on all")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray
    from ray.cluster_utils import Cluster

    start = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    head_s = time.perf_counter() - start
    start = time.perf_counter()
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    worker_s = time.perf_counter() - start
    try:
        ray.init(address=cluster.address, log_to_driver=False)

        @ray.remote(num_cpus=1)
        def empty() -> None:
            return None

        start = time.perf_counter()
        ray.get(empty.remote())
        first_ms = (time.perf_counter() - start) * 1000
        round_trips = []
        for _ in range(args.tasks):
            start = time.perf_counter()
            ray.get(empty.remote())
            round_trips.append((time.perf_counter() - start) * 1000)
        ray.shutdown()
        # Both nodes' processes and their workers (the driver's own process is not counted).
        pids = {
            info.process.pid
            for node in cluster.list_all_nodes()
            for infos in node.all_processes.values()
            for info in infos
            if info.process is not None
        }
        memory = resident_mib(children(pids))
        budget = ["--quick", "--seeds", str(args.seeds), "--n-timesteps", str(args.n_timesteps)]
        with tempfile.TemporaryDirectory() as scratch:
            on_ray = timed_benchmark([*budget, "--out", f"{scratch}/ray", "--ray", cluster.address])
            local = timed_benchmark([*budget, "--out", f"{scratch}/local", "--jobs", "2"])
            same = scores(Path(scratch) / "ray") == scores(Path(scratch) / "local")
            n_runs = len(scores(Path(scratch) / "ray"))
    finally:
        cluster.shutdown()
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python benchmarks/ray_overhead.py", *given])
    report = f"""Ray's overhead for `zoo benchmark --ray`, on a two-node cluster on one machine (a head and one worker
node, one CPU each, no dashboard), Ray {ray.__version__}, {cpu_model()}, in a network namespace with only lo.
`unshare --net sh -c 'ip link set lo up && {command}'`

| what | measured |
|---|---:|
| head node start-up | {head_s:.1f} s |
| worker node start-up | {worker_s:.1f} s |
| first task (starts a worker process) | {first_ms:.0f} ms |
| an empty task's round trip, median of {args.tasks} | {statistics.median(round_trips):.1f} ms |
| resident memory of the cluster's processes, idle | {memory:.0f} MiB |
| `zoo benchmark --quick --seeds {args.seeds} --n-timesteps {args.n_timesteps}` on Ray | {on_ray:.1f} s |
| the same with `--jobs 2` (local worker processes) | {local:.1f} s |
| every seed scored the same on both ({n_runs} runs) | {"yes" if same else "NO"} |
"""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report)
    print(report)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
