"""A throwaway PostgreSQL server for tests: a fresh cluster in a temporary folder, on a loopback port, stopped after.

PostgreSQL refuses to run as root, so as root the cluster belongs to an unprivileged user (``postgres``, which
Debian's package creates, else ``nobody``). Authentication is ``trust`` on 127.0.0.1 and the unix socket in the
cluster's own folder: nothing listens beyond this machine. ``.ci/run`` installs the server when it is missing.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

DATABASE = "postgres"  # the database initdb creates
USER = "zoo"  # the cluster's superuser, the one the URL names
DATA_FOLDERS: dict[str, Path] = {}  # the data folder of each running server, by URL


def crash(url: str) -> None:
    """Stop the server of ``url`` at once, as a crash or a lost network would: open connections are cut."""
    pid = int((DATA_FOLDERS[url] / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGQUIT)  # PostgreSQL's immediate shutdown


def server_binaries() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl``: on PATH, else the newest Debian ``/usr/lib/postgresql/N/bin``."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(initdb).resolve().parent  # Debian links them into PATH from /usr/lib/postgresql/N/bin
    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda path: int(Path(path).parent.name))
    found = [Path(folder) for folder in folders if (Path(folder) / "initdb").is_file()]
    return found[-1] if found else None


def _runner() -> tuple[Callable[[list[str]], list[str]], int | None, int | None]:
    """A wrapper that runs a command as a user PostgreSQL accepts, and that user's uid and gid (None: this one)."""
    if os.geteuid() != 0:
        return (lambda command: command), None, None
    users = [user for user in pwd.getpwall() if user.pw_name in ("postgres", "nobody")]
    if not users:
        raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists to run PostgreSQL as")
    user = min(users, key=lambda user: user.pw_name != "postgres")
    runuser = shutil.which("runuser")

    def as_user(command: list[str]) -> list[str]:
        if runuser:
            return [runuser, "-u", user.pw_name, "--", *command]
        return ["su", user.pw_name, "-s", "/bin/sh", "-c", shlex.join(command)]

    return as_user, user.pw_uid, user.pw_gid


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def postgres_server(binaries: Path) -> Iterator[str]:
    """Start a cluster and yield its URL (``postgresql://zoo@127.0.0.1:PORT/postgres``); stop and delete it after."""
    as_user, uid, gid = _runner()
    folder = Path(tempfile.mkdtemp(prefix="zoo-postgres-"))
    data, log = folder / "data", folder / "server.log"
    if uid is not None and gid is not None:
        os.chown(folder, uid, gid)
    env = {**os.environ, "LC_ALL": "C"}

    def run(command: list[str]) -> None:
        result = subprocess.run(as_user(command), capture_output=True, text=True, env=env, cwd=folder, timeout=120)
        if result.returncode != 0:
            server_log = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(command)} failed: {result.stdout}{result.stderr}{server_log}")

    port = free_port()
    try:
        run([str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", USER, "-E", "UTF8", "--no-sync"])
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off -c max_connections=50"
        run([str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "-t", "60", "start"])
        url = f"postgresql://{USER}@127.0.0.1:{port}/{DATABASE}"
        DATA_FOLDERS[url] = data
        try:
            yield url
        finally:
            del DATA_FOLDERS[url]
            if (data / "postmaster.pid").exists():  # else a test crashed it
                run([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
