"""``zoo benchmark --ray`` on a two-node Ray cluster (a head and one worker node, one CPU each).

Not collected by the default run: ``tests/test_ray.py`` runs this file inside a network namespace of its own with
only ``lo`` up, since Ray listens on every interface. The tests run in file order and share the cluster; the last
one kills the worker node. The overhead script of ``benchmarks/`` starts a cluster of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

if [name for _, name in socket.if_nameindex()] != ["lo"]:
    pytest.skip("run by tests/test_ray.py inside a network namespace with only lo", allow_module_level=True)

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from zoo.cli import main as cli  # noqa: E402
from zoo.ray_backend import GCS_PROBE  # noqa: E402

QUICK = ["benchmark", "--quick", "--n-timesteps", "3000"]
ROOT = Path(__file__).parents[1]
# A bound on what should take seconds, far above it on a loaded machine: reached only by a hang.
HANG_S = 180
# A bound on what takes a minute on an idle machine, Ray tasks starting (a worker process, then torch imported), far
# above it on a machine loaded with several trainings: reached only by a hang.
START_S = 3 * HANG_S
# Runs of half an hour or more: a test interrupts them on an event (they have started), long before they could end.
LONG = ["benchmark", "--envs", "Acrobot-v1", "--seeds", "2", "--n-timesteps", "5000000"]


@contextlib.contextmanager
def within(seconds: int) -> Iterator[None]:
    """Fail the block, rather than hang the run, if it is still going after ``seconds``."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def dead_port() -> int:
    """A port of 127.0.0.1 where nothing listens (this network namespace holds only the tests' own servers)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scratch_folders() -> list[Path]:
    """The tasks' scratch folders in the nodes' temp dir (the nodes of these tests share this machine's)."""
    return sorted(Path(tempfile.gettempdir()).glob("zoo-ray-run-*"))


def has_updated(scratch: Path) -> bool:
    """Whether the run training in ``scratch`` has logged an update (SB3 writes progress.csv at each one)."""
    return any(log.stat().st_size > 0 for log in scratch.rglob("progress.csv"))


def zoo(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m zoo ARGS`` in a process of its own (for an environment of its own, or a signal)."""
    command = [sys.executable, "-m", "zoo", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=HANG_S, env=env, cwd=ROOT)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    # Its nodes ignore SIGINT, as a node started in the background (`ray start ... &` in a script) and its workers do:
    # Ray's cancel, which interrupts a task through its worker's SIGINT handler, must still stop the zoo's tasks.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        made = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        made.add_node(num_cpus=1)
    finally:
        signal.signal(signal.SIGINT, previous)
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


def refused_in_one_line(argv: list[str], env: dict[str, str] | None = None) -> str:
    """The one line of ``python -m zoo ARGV``, which must end with exit status 2, within :data:`HANG_S`. In a
    process of its own: Ray's driver waits inside its C++ core, where no signal of this process would stop it."""
    result = zoo(argv, env)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr
    [line] = result.stderr.strip().splitlines()
    return line


def driver_for_ctrl_c(setup: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``python -m zoo ARGV``, after the Python statements ``setup``, as a terminal runs it: Ctrl-C interrupts it.

    A suite started in the background (``&``, nohup, a CI runner's job) ignores SIGINT, and so, by inheritance, would
    the drivers it starts: the tests' Ctrl-C would then never reach them. At SIGUSR1 the driver writes its threads'
    stacks to its stderr (see :func:`exit_after_ctrl_c`).
    """
    code = "import faulthandler, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    code += "faulthandler.register(signal.SIGUSR1, all_threads=True); import zoo.cli, zoo.ray_backend as ray_backend; "
    code += f"{setup or 'pass'}; sys.exit(zoo.cli.main(sys.argv[1:]))"
    command = [sys.executable, "-c", code, *argv]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def exit_after_ctrl_c(driver: subprocess.Popen[str], signum: int = signal.SIGINT) -> str:
    """Press Ctrl-C on ``driver`` (or send it ``signum``: SIGTERM, a scheduler's preemption, is handled as Ctrl-C)
    and return its stderr once it has exited with status 130. Its interrupt path takes seconds (at most
    :data:`~zoo.ray_backend.CANCEL_GRACE_S` for cancelled tasks, then Ray's shutdown): still going after
    :data:`HANG_S`, it hangs, and the failure shows where."""
    driver.send_signal(signum)
    try:
        _, err = driver.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        driver.send_signal(signal.SIGUSR1)
        time.sleep(5)
        driver.kill()
        _, err = driver.communicate()
        raise AssertionError(f"the driver still runs {HANG_S} s after Ctrl-C; its stacks:\n{err[-12000:]}") from None
    assert driver.returncode == 130, err[-3000:]
    assert err.strip().splitlines()[-1] == "interrupted", err[-3000:]
    return err


def test_an_address_where_something_else_listens_is_one_line_within_seconds(tmp_path: Path) -> None:
    import grpc

    # A server that takes connections and says nothing, and a gRPC server with no Ray service: the latter stands
    # in for Ray Client's server (HEAD:10001), which this installation of Ray may not have.
    silent = socket.create_server(("127.0.0.1", 0))
    other_grpc = grpc.server(ThreadPoolExecutor(max_workers=1))
    grpc_port = other_grpc.add_insecure_port("127.0.0.1:0")
    other_grpc.start()
    try:
        for port, expected in [(silent.getsockname()[1], "does not answer as a Ray head"), (grpc_port, "10001")]:
            line = refused_in_one_line([*QUICK, "--seeds", "1", "--out", str(tmp_path), "--ray", f"127.0.0.1:{port}"])
            assert f"what listens at 127.0.0.1:{port} " in line, line
            assert expected in line, line
    finally:
        other_grpc.stop(grace=None)
        silent.close()
    assert not (tmp_path / "runs").exists()


def test_ray_auto_naming_a_dead_cluster_is_one_line_within_seconds(tmp_path: Path) -> None:
    dead = f"127.0.0.1:{dead_port()}"
    argv = [*QUICK, "--seeds", "1", "--out", str(tmp_path / "out"), "--ray", "auto"]
    env = {name: value for name, value in os.environ.items() if name != "RAY_ADDRESS"}
    line = refused_in_one_line(argv, {**env, "RAY_ADDRESS": dead})
    assert f"no Ray cluster answers at {dead}, from RAY_ADDRESS" in line, line
    # The address file that a head which crashed left behind, in Ray's temp dir (RAY_TMPDIR here).
    env["RAY_TMPDIR"] = str(tmp_path)
    address_file = tmp_path / "ray" / "ray_current_cluster"
    line = refused_in_one_line(argv, env)
    assert (
        f"found no cluster: RAY_ADDRESS is unset and no ray start of this machine left an address in {address_file}"
        in line
    ), line
    address_file.parent.mkdir()
    address_file.write_text(dead + "\n")
    line = refused_in_one_line(argv, env)
    assert f"no Ray cluster answers at {dead}, from {address_file}" in line, line
    assert not (tmp_path / "out" / "runs").exists()


def test_ctrl_c_while_connecting_is_honoured_at_once(tmp_path: Path) -> None:
    import grpc

    # A gRPC server that takes the driver's probe of a Ray head and never answers it: the driver then waits for the
    # answer, on a connection that gRPC keeps (a server that said nothing at all would have it given up, UNAVAILABLE,
    # after gRPC's own connection timeout of 20 s, which a loaded machine can reach before the Ctrl-C lands).
    asked, release = threading.Event(), threading.Event()

    def never_answer(request: bytes, context: grpc.ServicerContext) -> bytes:
        asked.set()
        release.wait()
        return b""

    service, method = GCS_PROBE.strip("/").split("/")
    handler = grpc.method_handlers_generic_handler(service, {method: grpc.unary_unary_rpc_method_handler(never_answer)})
    server = grpc.server(ThreadPoolExecutor(max_workers=1))
    server.add_generic_rpc_handlers([handler])
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    # The driver waits on the address as long as it may: only Ctrl-C can end this wait.
    argv = [*QUICK, "--seeds", "1", "--out", str(tmp_path), "--ray", address]
    driver = driver_for_ctrl_c("ray_backend.CONNECT_TIMEOUT_S = 3600", argv)
    try:
        # The event: the driver has sent its probe and waits for the answer, which only Ctrl-C can end.
        with within(HANG_S):
            while not asked.wait(timeout=1):
                assert driver.poll() is None, driver.communicate()[1]
        exit_after_ctrl_c(driver)
    finally:
        driver.kill()
        release.set()
        server.stop(grace=None)


def test_ray_local_starts_a_private_cluster_for_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As on a cluster's machine, whose RAY_ADDRESS would otherwise be joined (and num_cpus refused there).
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{dead_port()}")
    with within(HANG_S * 2):
        assert cli([*QUICK, "--seeds", "1", "--jobs", "1", "--out", str(tmp_path), "--ray", "local"]) == 0
    assert len(scores(tmp_path)) == 1
    assert not ray.is_initialized()  # and stopped it at the end
    assert os.environ["RAY_ADDRESS"].startswith("127.0.0.1:")  # left as it was for the rest of the process
    assert scratch_folders() == []


def ray_start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """A node started as the cluster page starts one (``ray start ... --block``), returned once it says it runs.
    Its own process is its handle: ending it stops exactly this node (``ray stop`` would stop every Ray process of
    the machine)."""
    command = [str(Path(sys.executable).with_name("ray")), "start", *args, "--block"]
    node = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert node.stdout is not None
    said = []
    with within(HANG_S):
        for line in node.stdout:  # the event: the node says it runs
            said.append(line)
            if "Ray runtime started" in line:
                # Read on, so that a full pipe never blocks the node.
                threading.Thread(target=node.stdout.read, daemon=True).start()
                return node
    node.wait()
    raise AssertionError("".join(said[-20:]))


def error_lines(stderr: str) -> list[str]:
    """The zoo's own lines of ``stderr`` (a node of this namespace may add Ray's warning that it has no route out)."""
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def lost_cpu_mid_run(address: str, out: Path, env: dict[str, str], worker: subprocess.Popen[str]) -> None:
    """The cluster's only CPU node is stopped while a run trains: the runs wait NO_CPU_GRACE_S (1 s here) for a
    node, then are reported failed with that reason, and the command exits with status 1."""
    child = "import sys, zoo.ray_backend as ray_backend, zoo.cli; ray_backend.NO_CPU_GRACE_S = 1; "
    child += "sys.exit(zoo.cli.main(sys.argv[1:]))"
    argv = [sys.executable, "-c", child, *LONG, "--out", str(out), "--ray", address]
    driver = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        with within(START_S):  # the event: a run trains on the worker node
            while not scratch_folders():
                assert driver.poll() is None, "the driver ended before its task started"
                time.sleep(0.2)
        worker.terminate()
        worker.wait(timeout=HANG_S)
        _, err = driver.communicate(timeout=HANG_S)
    finally:
        driver.kill()
    assert driver.returncode == 1, err[-3000:]
    assert err.count("no node of the cluster has had a CPU for 1 s") == 2, err[-3000:]
    # A killed worker leaves its scratch folder (the cluster page says so): removed here for the next checks.
    for folder in scratch_folders():
        shutil.rmtree(folder)


def test_a_token_cluster_takes_its_token_and_one_without_a_cpu_is_refused(tmp_path: Path) -> None:
    # The cluster page's recipe, in a home of its own: a token, then RAY_AUTH_MODE=token on every node and driver.
    env = {name: value for name, value in os.environ.items() if not name.startswith(("RAY_AUTH", "RAY_ADDRESS"))}
    env.update(HOME=str(tmp_path / "home"), RAY_USAGE_STATS_ENABLED="0")
    with_token = {**env, "RAY_AUTH_MODE": "token"}
    ray_cli = str(Path(sys.executable).with_name("ray"))
    subprocess.run([ray_cli, "get-auth-token", "--generate"], env=env, capture_output=True, timeout=HANG_S, check=True)
    port = dead_port()
    address = f"127.0.0.1:{port}"
    argv = [*QUICK, "--seeds", "1", "--out", str(tmp_path / "out"), "--ray", address]
    head_args = ["--head", "--port", str(port), "--num-cpus", "0", "--include-dashboard=false"]
    nodes = [ray_start([*head_args, "--disable-usage-stats"], with_token)]
    try:
        refused = zoo(argv, env)
        assert refused.returncode == 2, refused.stderr
        [line] = error_lines(refused.stderr)
        assert f"{address} asks for a token" in line, line
        assert "RAY_AUTH_MODE=token" in line, line
        no_cpu = zoo(argv, with_token)
        assert no_cpu.returncode == 2, no_cpu.stderr
        [line] = error_lines(no_cpu.stderr)
        assert f"the Ray cluster at {address} has no CPU for the runs" in line, line
        nodes.append(ray_start(["--address", address, "--num-cpus", "1"], with_token))
        joined = zoo(argv, with_token)
        assert joined.returncode == 0, joined.stderr[-3000:]
        lost_cpu_mid_run(address, tmp_path / "lost", with_token, nodes[-1])
    finally:
        for node in reversed(nodes):
            node.terminate()
            node.wait(timeout=HANG_S)
    assert len(scores(tmp_path / "out")) == 1
    assert scratch_folders() == []


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
    pressed: list[bool] = []

    def wait_then_ctrl_c(*args: Any, **kwargs: Any) -> Any:
        # Ctrl-C reaches the driver while it waits on its tasks, once the first run is written: an event, not a
        # time, so the test cannot race a loaded machine (before, all four runs could finish first). Pressed once:
        # the driver then waits on the cancelled tasks, which a second Ctrl-C would kill.
        if not pressed and list(first.glob("seed*/result.json")):
            pressed.append(True)
            raise KeyboardInterrupt
        return wait(*args, **kwargs)

    monkeypatch.setattr(ray, "wait", wait_then_ctrl_c)
    assert cli(argv) == 130
    monkeypatch.undo()
    assert "the same command resumes" in capsys.readouterr().err
    kept = len(scores(tmp_path))
    assert kept == 1
    assert not [path for path in first.iterdir() if path.name.startswith(".")]  # no half-written run
    assert scratch_folders() == []  # nor a scratch folder on the nodes
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


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "kill"])
def test_ctrl_c_on_the_driver_stops_its_tasks_and_leaves_no_scratch(cluster: Any, tmp_path: Path, signum: int) -> None:
    # SIGTERM (`kill`, a scheduler's preemption) by default ends the driver alone: its tasks would train on, their
    # scratch folders left on the nodes, to results nobody collects.
    driver = driver_for_ctrl_c("", [*LONG, "--out", str(tmp_path), "--ray", cluster.address])
    try:
        # The event: both tasks train, each in its scratch folder on its node (runs of minutes, far from done), past
        # their first update (its log written). A task then still compiles numba's kernels, where Ray's interrupt
        # used to be lost (in llvmlite's ctypes callback): the task trained on and its killed worker kept its
        # folder. The interrupt is now repeated until the task stops (tests/test_interrupts.py).
        with within(START_S):
            while len([folder for folder in scratch_folders() if has_updated(folder)]) < 2:
                assert driver.poll() is None, f"the driver ended before its tasks started: {driver.communicate()[1]}"
                time.sleep(0.2)
        # The tasks are asked to stop, and their workers killed after CANCEL_GRACE_S at most: then the driver exits.
        exit_after_ctrl_c(driver, signum)
    finally:
        driver.kill()
    assert scratch_folders() == []
    assert not list(tmp_path.rglob("result.json"))


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
