"""The benchmark's runs as Ray tasks: ``python -m zoo benchmark ... --ray ADDRESS``.

Each (algorithm, env, seed) run is one Ray task that asks for one CPU. The task trains in a scratch folder of the
node it lands on and sends back the run's record and the bytes of its files (model, config.yml, VecNormalize
statistics, result.json: a few hundred kB). The driver writes them into the results folder as the local backend
does, atomically and only once the run has finished, so the nodes share no filesystem and a table mixes runs of
both backends. What goes out is the run's description (algorithm, env, seed, budget, overrides); the nodes need
the same installation of the zoo as the driver.

Faults: a task whose worker or node dies is retried elsewhere by Ray, up to :data:`MAX_RETRIES` times; after that,
or when the training itself raises, the run is reported as failed with its reason and the others go on. Ctrl-C
cancels the tasks still out, which remove their scratch folders; the runs already written stay, and the same
command resumes. Before Ray joins a cluster, the driver checks that a Ray head answers at its address and takes the
token the driver sends (:func:`check_cluster`), then that the cluster has a CPU for the tasks (:func:`check_cpus`):
each failure is one line, within seconds, where Ray would retry for minutes or wait forever. The policies, and
what Ray 2.60 does about tokens, are on the cluster page of the docs.

Ray listens on every interface: a cluster belongs on a private network, with token authentication.
Importing this module imports neither Ray nor gRPC: :func:`connect` does, for ``--ray`` alone.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zoo.checks import shown
from zoo.errors import ZooError, first_line
from zoo.folders import move_into_place
from zoo.interrupts import interrupted_until_stopped, scratch_folder, terminated_as_interrupted
from zoo.measure import Task, check_task_result, train_to_staging

# Retries of a task whose worker process or node died (Ray's max_retries); an exception raised by the training is
# not retried, since it would raise again.
MAX_RETRIES = 2
# How long the driver gives a cluster address to accept a connection, then to answer as a Ray head, before saying it
# does not: a head answers in milliseconds, and 10 s leaves room for a loaded one. Ray's own driver retries for
# minutes at an address where nothing, or something other than Ray, listens.
CONNECT_TIMEOUT_S = 10.0
# A request that every Ray head (its GCS) answers, given an empty message, and no other server does: asked before
# ray.init, it tells a Ray head from another server (Ray Client's port 10001 included) and says if a token is wanted.
GCS_PROBE = "/ray.rpc.NodeInfoGcsService/GetClusterId"
# The driver wakes up this often while waiting, so that Ctrl-C is handled promptly.
POLL_S = 0.5
# A task trains in a folder of its node's temp dir named so; the folder goes when the task ends, cancelled included.
SCRATCH_PREFIX = "zoo-ray-run-"
# After Ctrl-C, how long the cancelled tasks have to stop and remove their scratch folders before their workers are
# killed (which leaves the folders): removing a run's few MB takes well under a second.
CANCEL_GRACE_S = 10.0
# How long the runs may wait on a cluster with no CPU left (its only CPU node died) before they are reported failed:
# time for a node to be restarted, or added by an autoscaler.
NO_CPU_GRACE_S = 60.0


def train_remotely(task: Task) -> tuple[dict[str, Any], dict[str, bytes], str]:
    """On a node: train ``task`` in a scratch folder; return its record, its files' bytes, and the node's name."""
    import ray

    # A cancelled task is interrupted (KeyboardInterrupt) where it trains, again until it has stopped (the first
    # interrupt can be lost), and removes its folder however often it is interrupted; only a killed worker leaves the
    # folder, which the driver avoids (see :func:`cancel`).
    with scratch_folder(Path(tempfile.gettempdir()), SCRATCH_PREFIX) as scratch, interrupted_until_stopped():
        record, staging = train_to_staging(task, scratch)
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


def host_port(address: str, what: str) -> tuple[str, int]:
    """``address`` as (host, port), or one line saying that ``what`` is not ``HOST:PORT``."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ZooError(f"{what}, got {shown(address)}")
    return host.strip("[]"), int(port)


def ray_address_file() -> Path:
    """Where ``ray start`` leaves the address of the cluster it made: Ray's temp dir, found as Ray finds it."""
    if "RAY_TMPDIR" in os.environ:
        root = os.environ["RAY_TMPDIR"]
    elif sys.platform.startswith("linux") and "TMPDIR" in os.environ:
        root = os.environ["TMPDIR"]
    else:
        root = "/tmp" if sys.platform.startswith(("linux", "darwin")) else tempfile.gettempdir()
    return Path(root) / "ray" / "ray_current_cluster"


def resolve(address: str) -> tuple[str, str]:
    """The ``HOST:PORT`` that ``--ray address`` names, and where it was read, for the error lines.

    ``auto`` is the cluster ``ray.init(address="auto")`` joins: ``RAY_ADDRESS``, else the one whose address the last
    ``ray start`` of this machine left in Ray's temp dir. Ray's last resort, any Ray process of the machine, is left
    out: on a shared machine it may be another user's cluster.
    """
    if address != "auto":
        host_port(address, "--ray takes a cluster address HOST:PORT, 'auto' or 'local'")
        return address, ""
    if os.environ.get("RAY_ADDRESS"):
        found = os.environ["RAY_ADDRESS"]
        host_port(found, "--ray auto joins RAY_ADDRESS, which is not a cluster address HOST:PORT (ray:// is not one)")
        return found, ", from RAY_ADDRESS"
    file = ray_address_file()
    try:
        found = file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        raise ZooError(
            f"--ray auto found no cluster: RAY_ADDRESS is unset and no ray start of this machine left an address in "
            f"{file}"
        ) from None
    host_port(found, f"--ray auto reads {file}, which does not hold a cluster address HOST:PORT")
    return found, f", from {file}, which the last ray start of this machine left (has that cluster stopped?)"


def driver_token(by_address_file: bool) -> tuple[str, str] | None:
    """The token Ray's driver will send, and where it read it; None where it sends none.

    Ray 2.60 sends one where ``RAY_AUTH_MODE=token``; with ``RAY_AUTH_MODE`` unset, only to the cluster it found
    by the address file. It reads ``RAY_AUTH_TOKEN``, else the file ``RAY_AUTH_TOKEN_PATH`` names, else
    ``~/.ray/auth_token``.
    """
    mode = os.environ.get("RAY_AUTH_MODE")
    if (mode or "").lower() != "token" and not (mode is None and by_address_file):
        return None
    if os.environ.get("RAY_AUTH_TOKEN"):
        return os.environ["RAY_AUTH_TOKEN"].strip(), "RAY_AUTH_TOKEN"
    path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")
    try:
        return path.read_text(encoding="utf-8").strip(), str(path)
    except (OSError, UnicodeDecodeError):
        return None


def check_cluster(address: str, where: str, token: tuple[str, str] | None) -> None:
    """One line, within seconds, unless a Ray head listens at ``address`` and takes ``token``."""
    import grpc

    try:
        socket.create_connection(host_port(address, "--ray"), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise ZooError(f"no Ray cluster answers at {address}{where} ({error.strerror or error})") from None
    metadata = [("authorization", f"Bearer {token[0]}")] if token else None
    # No proxy: a cluster's address is a private one, where a proxy from the environment would answer instead.
    with grpc.insecure_channel(address, options=[("grpc.enable_http_proxy", 0)]) as channel:
        try:
            channel.unary_unary(GCS_PROBE)(b"", timeout=CONNECT_TIMEOUT_S, metadata=metadata)
        except grpc.RpcError as error:
            code = error.code()
            details = " ".join(str(error.details() or "no details").split())
            if code == grpc.StatusCode.UNAUTHENTICATED and token is None:
                reason = (
                    "asks for a token (it runs with token authentication): set RAY_AUTH_MODE=token, with the "
                    "cluster's token in ~/.ray/auth_token or RAY_AUTH_TOKEN"
                )
            elif code == grpc.StatusCode.UNAUTHENTICATED:
                reason = f"refuses the token of {token[1] if token else '-'}: give the driver its head's token"
            elif code == grpc.StatusCode.UNIMPLEMENTED:
                reason = (
                    "is a server, but not a Ray head (Ray Client's port, 10001, is not one): give the port of the "
                    "head's ray start --port (6379 by default)"
                )
            elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
                reason = f"does not answer as a Ray head within {CONNECT_TIMEOUT_S:.0f} s ({code.name})"
            elif code == grpc.StatusCode.UNAVAILABLE:
                # Early, whatever the deadline: gRPC gives up a connection that the server closes, or where it sends
                # nothing of HTTP/2 within gRPC's own connection timeout (20 s).
                reason = f"closed the gRPC connection, or never set it up, before any answer ({code.name}: {details})"
            else:
                reason = f"does not answer as a Ray head ({code.name}: {details})"
            raise ZooError(f"what listens at {address}{where} {reason}") from None


def connect(address: str, n_cpus: int) -> None:
    """Join the cluster at ``address`` (``auto``: see :func:`resolve`), or start a private one for this run
    (``local``, ``n_cpus`` CPUs, no dashboard)."""
    by_address_file = address == "auto" and not os.environ.get("RAY_ADDRESS")
    if address != "local":
        target, where = resolve(address)
        check_cluster(target, where, driver_token(by_address_file))
    try:
        import ray
    except ImportError:
        raise ZooError("--ray needs Ray: pip install 'sb3-reinforce[zoo,ray]'") from None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    quiet: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False, "configure_logging": True}
    if address == "local":
        # RAY_ADDRESS (set on a cluster's machines) would make ray.init join that cluster, where num_cpus is refused:
        # a private cluster ignores it.
        outer = os.environ.pop("RAY_ADDRESS", None)
        try:
            ray.init(num_cpus=n_cpus, include_dashboard=False, **quiet)
        finally:
            if outer is not None:
                os.environ["RAY_ADDRESS"] = outer
        return
    try:
        # By the address file, "auto" itself: Ray then sends the user's token, as it does for its own `auto`.
        ray.init(address="auto" if by_address_file else target, **quiet)
    except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as error:
        raise ZooError(f"cannot join the Ray cluster at {target}{where}: {first_line(error)}") from None


def check_cpus(resources: dict[str, float], address: str) -> None:
    """One line when the cluster has no CPU for a run's one-CPU task: Ray would keep such a task waiting, unsaid.

    Counted before any task goes out, from the nodes alive: a cluster that only an autoscaler would give a CPU is
    refused too, since nothing says one ever comes.
    """
    if resources.get("CPU", 0) < 1:
        offered = ", ".join(f"{name} {amount:g}" for name, amount in sorted(resources.items()) if "node:" not in name)
        raise ZooError(
            f"the Ray cluster at {address} has no CPU for the runs, which take one each (its nodes offer: "
            f"{offered or 'nothing'}); add a node with a CPU (ray start --address ... --num-cpus N)"
        )


def cancel(refs: list[Any]) -> None:
    """Cancel the tasks of ``refs``: each is interrupted where it trains and removes its scratch folder; a worker
    still busy after :data:`CANCEL_GRACE_S`, or at a second Ctrl-C, is killed."""
    import ray

    for ref in refs:
        ray.cancel(ref)
    stuck = refs
    try:
        if refs:
            _, stuck = ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE_S)
    finally:
        for ref in stuck:
            ray.cancel(ref, force=True)


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
    no_cpu_since: float | None = None
    with terminated_as_interrupted():  # after connect: ray.init installs a SIGTERM handler of its own
        try:
            check_cpus(ray.cluster_resources(), address)
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
                            # Checked before anything is written: a node with another version of the zoo fails its run.
                            record, files, node = check_task_result(task, ray.get(ref))
                        except ray.exceptions.RayError as error:
                            cause = error.cause if isinstance(error, ray.exceptions.RayTaskError) else error
                            failed.append(f"{task.algo} {task.env_id} seed {task.seed}: {first_line(cause)}")
                        except ZooError as error:
                            failed.append(f"{task.algo} {task.env_id} seed {task.seed}: {error}")
                        else:
                            write_run(task, files)
                            done_on[node] += 1
                            on_record(record)
                        bar.update(1)
                        show()
                    # A cluster whose last CPU node died would keep the runs left waiting forever.
                    has_cpu = bool(ready) or ray.cluster_resources().get("CPU", 0) >= 1
                    no_cpu_since = None if has_cpu else no_cpu_since or time.monotonic()
                    if no_cpu_since is not None and time.monotonic() - no_cpu_since > NO_CPU_GRACE_S:
                        cancel(list(pending))
                        reason = f"no node of the cluster has had a CPU for {NO_CPU_GRACE_S:.0f} s"
                        failed += [f"{task.algo} {task.env_id} seed {task.seed}: {reason}" for task in pending.values()]
                        bar.update(len(pending))
                        pending.clear()
                        show()
        except KeyboardInterrupt:
            cancel(list(pending))
            raise
        finally:
            ray.shutdown()
    return failed
