"""The benchmark's runs as Ray tasks: ``python -m zoo benchmark ... --ray ADDRESS``.

Each (algorithm, env, seed) run is one Ray task that asks for one CPU. The task trains in a scratch folder of the
node it lands on and sends back the run's record and the bytes of its files (model, config.yml, VecNormalize
statistics, result.json: a few hundred kB). The driver writes them into the results folder as the local backend
does, atomically and only once the run has finished, so the nodes share no filesystem and a table mixes runs of
both backends. What goes out is the run's description (algorithm, env, seed, budget, overrides); the nodes need
the same installation of the zoo as the driver.

Faults: a task whose worker or node dies is retried elsewhere by Ray, up to :data:`MAX_RETRIES` times; after that,
or when the training itself raises, the run is reported as failed with its reason and the others go on. Ctrl-C
cancels the tasks still out; the runs already written stay, and the same command resumes.

Ray has no authentication by default and listens on every interface: a cluster belongs on a private network.
Importing this module does not import Ray: :func:`connect` does, for ``--ray`` alone.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zoo.checks import shown
from zoo.errors import ZooError, first_line
from zoo.folders import move_into_place
from zoo.measure import Task, train_to_staging

# Retries of a task whose worker process or node died (Ray's max_retries); an exception raised by the training is
# not retried, since it would raise again.
MAX_RETRIES = 2
# How long the driver waits for a cluster address to accept a connection before saying it does not.
CONNECT_TIMEOUT_S = 10.0
# The driver wakes up this often while waiting, so that Ctrl-C is handled promptly.
POLL_S = 0.5


def train_remotely(task: Task) -> tuple[dict[str, Any], dict[str, bytes], str]:
    """On a node: train ``task`` in a scratch folder; return its record, its files' bytes, and the node's name."""
    import ray

    with tempfile.TemporaryDirectory() as scratch:
        record, staging = train_to_staging(task, Path(scratch))
        files = {path.name: path.read_bytes() for path in staging.iterdir()}
    node = f"{ray.util.get_node_ip_address()}/{ray.get_runtime_context().get_node_id()[:6]}"
    return record, files, node


def write_run(task: Task, files: dict[str, bytes]) -> None:
    """On the driver: the run's folder, written as the local backend writes it (complete, then renamed)."""
    with tempfile.TemporaryDirectory() as staging:
        for name, data in files.items():
            if Path(name).name != name or name.startswith("."):
                raise ZooError(f"a Ray task sent back a file named {shown(name)}, which is not a plain file name")
            (Path(staging) / name).write_bytes(data)
        move_into_place(Path(staging), task.folder)


def check_reachable(address: str) -> None:
    """One line, quickly, when nothing listens at ``HOST:PORT`` (Ray itself would keep retrying for minutes)."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ZooError(f"--ray takes a cluster address HOST:PORT, 'auto' or 'local', got {shown(address)}")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise ZooError(f"no Ray cluster answers at {address} ({error.strerror or error})") from None


def connect(address: str, n_cpus: int) -> None:
    """Join the cluster at ``address`` (``auto``: the one this machine's ``ray start`` made), or start a private
    one for this run (``local``, ``n_cpus`` CPUs, no dashboard)."""
    try:
        import ray
    except ImportError:
        raise ZooError("--ray needs Ray: pip install 'sb3-reinforce[zoo,ray]'") from None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    quiet: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False, "configure_logging": True}
    if address == "local":
        ray.init(num_cpus=n_cpus, include_dashboard=False, **quiet)
        return
    if address != "auto":
        check_reachable(address)
    try:
        ray.init(address=address, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise ZooError(f"cannot join the Ray cluster at {address}: {first_line(error)}") from None


def run_on_ray(tasks: list[Task], address: str, n_cpus: int, on_record: Callable[[dict[str, Any]], None]) -> list[str]:
    """Run ``tasks`` on the cluster; write each finished run and pass its record to ``on_record``.

    :return: one line per run that failed (its task and the reason).
    :raises KeyboardInterrupt: after cancelling the tasks still out (the finished runs are written).
    """
    connect(address, n_cpus)
    import ray
    from tqdm import tqdm

    remote = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False)(train_remotely)
    failed: list[str] = []
    done_on: Counter[str] = Counter()
    pending: dict[ray.ObjectRef, Task] = {}
    try:
        pending.update({remote.remote(task): task for task in tasks})
        with tqdm(total=len(tasks), unit="run", file=sys.stderr, dynamic_ncols=True) as bar:

            def show() -> None:
                nodes = ", ".join(f"{node}: {count}" for node, count in sorted(done_on.items()))
                bar.set_postfix_str(f"running {len(pending)}, failed {len(failed)}; done per node: {nodes or '-'}")

            show()
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
                for ref in ready:
                    task = pending.pop(ref)
                    try:
                        record, files, node = ray.get(ref)
                    except ray.exceptions.RayError as error:
                        cause = error.cause if isinstance(error, ray.exceptions.RayTaskError) else error
                        failed.append(f"{task.algo} {task.env_id} seed {task.seed}: {first_line(cause)}")
                    else:
                        write_run(task, files)
                        done_on[node] += 1
                        on_record(record)
                    bar.update(1)
                    show()
    except KeyboardInterrupt:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        ray.shutdown()
    return failed
