"""A local stand-in for the Hugging Face Hub, for tests: standard library only, repositories stored on disk.

It answers the part of the Hub's HTTP API that ``huggingface_hub`` uses to create a repository, commit files
(inline "regular" uploads: neither LFS nor Xet storage is offered) and download them:

- ``POST /api/repos/create``
- ``GET  /api/models/{org}/{name}[/revision/{rev}]``              (repo info with ``sha`` and ``siblings``; with
  ``blobs``, each sibling's ``size`` and ``blobId``)
- ``GET  /api/models/{org}/{name}/tree/{rev}[/{path}]``           (``recursive``, ``expand`` accepted)
- ``POST /api/models/{org}/{name}/preupload/{rev}``               (every file: ``uploadMode: regular``)
- ``POST /api/models/{org}/{name}/commit/{rev}``                  (NDJSON: header, file, deletedFile, deletedFolder)
- ``POST /api/validate-yaml``                                     (front matter must be delimited by ``---``)
- ``GET  /api/whoami-v2``
- ``HEAD|GET /{org}/{name}/resolve/{rev}/{path}``                 (``X-Repo-Commit``, ``ETag``, ``Content-Length``,
  ``Range``)

Errors carry the Hub's ``X-Error-Code`` (``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``) and a bad
token gets 401 with ``X-Error-Message: Invalid credentials in Authorization header``, which is how
``huggingface_hub`` tells them apart. Blob ids are git blob sha1s (what the Hub reports for regular files) and a
commit id is the sha1 of the commit's content. Every request body is read before answering, errors included, so
a kept-alive connection stays usable.

Test hooks: ``requests`` (every request as ``(method, path)``), ``commits(repo_id)``, ``fail_next(n, status)``
(answer the next ``n`` requests with ``status``), ``files(repo_id)``, ``read(repo_id, path)``, ``put(repo_id,
files)`` (a commit made without HTTP, for files too large to send as inline JSON quickly) and
``sent(repo_id, path)`` (the bytes of a file that downloads have been sent).

:class:`SilentServer` is the opposite: a Hub that accepts every connection and never answers.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

GITATTRIBUTES = b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n*.zip filter=lfs diff=lfs merge=lfs -text\n"
BAD_TOKEN_MESSAGE = "Invalid credentials in Authorization header"


def git_blob_sha(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class Commit:
    sha: str
    parent: str | None
    message: str
    files: dict[str, str]  # path -> blob sha


@dataclass
class Repo:
    repo_id: str
    private: bool
    owner: str
    commits: list[Commit] = field(default_factory=list)
    refs: dict[str, str] = field(default_factory=dict)


class HubError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        commit: str | None = None,
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.commit = status, message, code, commit
        self.body = body or {}


class SilentServer:
    """A server that accepts connections and never sends a byte: ``with SilentServer() as hub: ... hub.url ...``."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, name="silent-hub", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}"

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = self._listener.accept()
                self._held.append(connection)  # kept open, never read from or written to

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self._listener.close()
        for connection in self._held:
            connection.close()
        self._thread.join(timeout=5)


class HubServer:
    """``with HubServer(root, tokens={"hf_token": "alice"}) as hub: ... hub.url ...``"""

    def __init__(self, root: Path, tokens: dict[str, str] | None = None) -> None:
        self.root = Path(root)
        self.tokens = dict(tokens or {})
        self.requests: list[tuple[str, str]] = []
        self.validated_yaml: list[str] = []
        self._repos: dict[str, Repo] = {}
        self._lock = threading.RLock()
        self._failures: list[int] = []
        self._sent: dict[tuple[str, str], int] = {}
        self._connections: set[socket.socket] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------------------------------------- lifecycle

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> HubServer:
        (self.root / "blobs").mkdir(parents=True, exist_ok=True)
        server = self

        class Handler(_Handler):
            hub = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="hub-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and drop the kept-alive connections too (their threads would serve on otherwise)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        with self._lock:
            connections, self._connections = list(self._connections), set()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------------------------------------ test hooks

    def fail_next(self, count: int, status: int = 503) -> None:
        with self._lock:
            self._failures.extend([status] * count)

    def commits(self, repo_id: str) -> list[Commit]:
        with self._lock:
            return list(self._repos[repo_id].commits)

    def files(self, repo_id: str, revision: str = "main") -> dict[str, str]:
        with self._lock:
            return dict(self._commit(self._repos[repo_id], revision).files)

    def read(self, repo_id: str, path: str, revision: str = "main") -> bytes:
        return self._blob(self.files(repo_id, revision)[path])

    def put(self, repo_id: str, files: dict[str, bytes], message: str = "put") -> Commit:
        """Commit ``files`` to ``repo_id`` (created if new) on main, as an upload would."""
        with self._lock:
            repo = self._repos.get(repo_id) or self.create_repo(repo_id)
            head = self._commit(repo, "main")
            stored = {path: self._store(content) for path, content in files.items()}
            return self._new_commit(repo, head.sha, message, {**head.files, **stored})

    def sent(self, repo_id: str, path: str) -> int:
        """How many bytes of ``path`` downloads of ``repo_id`` were sent, all revisions together."""
        with self._lock:
            return self._sent.get((repo_id, path), 0)

    def create_repo(self, repo_id: str, owner: str = "tester", private: bool = False) -> Repo:
        with self._lock:
            repo = Repo(repo_id=repo_id, private=private, owner=owner)
            self._repos[repo_id] = repo
            self._new_commit(repo, None, "initial commit", {".gitattributes": self._store(GITATTRIBUTES)})
            return repo

    # ----------------------------------------------------------------------------------------------- storage

    def _store(self, content: bytes) -> str:
        sha = git_blob_sha(content)
        path = self.root / "blobs" / sha
        if not path.exists():
            path.write_bytes(content)
        return sha

    def _blob(self, sha: str) -> bytes:
        return (self.root / "blobs" / sha).read_bytes()

    def _size(self, sha: str) -> int:
        return (self.root / "blobs" / sha).stat().st_size

    def _new_commit(self, repo: Repo, parent: str | None, message: str, files: dict[str, str]) -> Commit:
        body = json.dumps(
            {"parent": parent, "message": message, "files": sorted(files.items()), "n": len(repo.commits)}
        ).encode()
        commit = Commit(
            sha=hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest(),
            parent=parent,
            message=message,
            files=dict(files),
        )
        repo.commits.append(commit)
        repo.refs["main"] = commit.sha
        return commit

    def _commit(self, repo: Repo, revision: str) -> Commit:
        sha = repo.refs.get(revision, revision)
        for commit in repo.commits:
            if commit.sha == sha or (len(revision) >= 7 and commit.sha.startswith(revision)):
                return commit
        raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")

    # ----------------------------------------------------------------------------------------------- handlers

    def handle(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.requests.append((method, target))
            if self._failures:
                status = self._failures.pop(0)
                return status, {"Content-Type": "text/plain"}, b"injected failure"
        split = urlsplit(target)
        query = {key: values[-1] for key, values in parse_qs(split.query).items()}
        parts = split.path.strip("/").split("/")
        try:
            user = self._user(headers)
            with self._lock:
                return self._route(method, parts, query, headers, body, user)
        except HubError as error:
            extra = {"X-Error-Message": error.message}
            if error.code:
                extra["X-Error-Code"] = error.code
            if error.commit:
                extra["X-Repo-Commit"] = error.commit
            return (
                error.status,
                {"Content-Type": "application/json", **extra},
                json.dumps({"error": error.message, **error.body}).encode(),
            )

    def _user(self, headers: dict[str, str]) -> str | None:
        auth = headers.get("authorization", "")
        if not auth:
            return None
        token = auth.removeprefix("Bearer ").strip()
        if token not in self.tokens:
            raise HubError(401, BAD_TOKEN_MESSAGE)
        return self.tokens[token]

    def _repo(self, org: str, name: str, user: str | None) -> Repo:
        repo = self._repos.get(f"{unquote(org)}/{unquote(name)}")
        if repo is None:
            raise HubError(404, "Repository not found", "RepoNotFound")
        if repo.private and user != repo.owner:
            raise HubError(401, "Repository not found", "RepoNotFound")
        return repo

    def _route(
        self,
        method: str,
        parts: list[str],
        query: dict[str, str],
        headers: dict[str, str],
        body: bytes,
        user: str | None,
    ) -> tuple[int, dict[str, str], bytes]:
        if parts[:1] == ["api"]:
            rest = parts[1:]
            if method == "POST" and rest == ["repos", "create"]:
                return self._create(body, user)
            if method == "POST" and rest == ["validate-yaml"]:
                return self._validate_yaml(body)
            if method == "GET" and rest == ["whoami-v2"]:
                if user is None:
                    raise HubError(401, BAD_TOKEN_MESSAGE)
                return _json({"type": "user", "name": user, "orgs": [], "auth": {"type": "access_token"}})
            if len(rest) >= 3 and rest[0] == "models":
                repo = self._repo(rest[1], rest[2], user)
                action, args = (rest[3] if len(rest) > 3 else None), rest[4:]
                blobs = query.get("blobs", "False").lower() in ("1", "true")
                if method == "GET" and action is None:
                    return self._info(repo, "main", blobs)
                if method == "GET" and action == "revision" and len(args) == 1:
                    return self._info(repo, unquote(args[0]), blobs)
                if method == "GET" and action == "tree" and args:
                    return self._tree(repo, unquote(args[0]), "/".join(unquote(p) for p in args[1:]), query)
                if method == "POST" and action == "preupload" and len(args) == 1:
                    return self._preupload(repo, unquote(args[0]), body, user)
                if method == "POST" and action == "commit" and len(args) == 1:
                    return self._commit_files(repo, unquote(args[0]), body, user)
        elif len(parts) >= 5 and parts[2] == "resolve" and method in ("GET", "HEAD"):
            repo = self._repo(parts[0], parts[1], user)
            return self._resolve(repo, unquote(parts[3]), "/".join(unquote(p) for p in parts[4:]), headers, method)
        raise HubError(404, f"no route for {method} /{'/'.join(parts)}")

    def _create(self, body: bytes, user: str | None) -> tuple[int, dict[str, str], bytes]:
        if user is None:
            raise HubError(401, "You must be authenticated to create a repository")
        payload = json.loads(body or b"{}")
        repo_id = f"{payload.get('organization') or user}/{payload['name']}"
        if repo_id in self._repos:
            # As the Hub: create_repo(exist_ok=True) reads the url from this answer.
            raise HubError(409, "You already created this model repo", body={"url": f"{self.url}/{repo_id}"})
        private = payload.get("visibility") == "private" or bool(payload.get("private"))
        self.create_repo(repo_id, owner=user, private=private)
        return _json({"url": f"{self.url}/{repo_id}", "name": repo_id, "id": repo_id})

    def _validate_yaml(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        content = json.loads(body).get("content", "")
        self.validated_yaml.append(content)
        lines = content.splitlines()
        if not lines or lines[0].strip() != "---" or "---" not in [line.strip() for line in lines[1:]]:
            return (
                400,
                {"Content-Type": "application/json"},
                json.dumps(
                    {"errors": [{"message": "README.md has no metadata block delimited by ---"}], "warnings": []}
                ).encode(),
            )
        return _json({"errors": [], "warnings": []})

    def _info(self, repo: Repo, revision: str, blobs: bool = False) -> tuple[int, dict[str, str], bytes]:
        commit = self._commit(repo, revision)
        siblings: list[dict[str, Any]] = [{"rfilename": path} for path in sorted(commit.files)]
        if blobs:
            for sibling in siblings:
                sha = commit.files[sibling["rfilename"]]
                sibling.update(blobId=sha, size=self._size(sha))
        return _json(
            {
                "_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24],
                "id": repo.repo_id,
                "modelId": repo.repo_id,
                "author": repo.repo_id.split("/")[0],
                "sha": commit.sha,
                "private": repo.private,
                "disabled": False,
                "gated": False,
                "tags": [],
                "siblings": siblings,
            }
        )

    def _tree(self, repo: Repo, revision: str, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        commit = self._commit(repo, revision)
        recursive = query.get("recursive", "False").lower() in ("1", "true")
        prefix = f"{path}/" if path else ""
        entries: dict[str, dict[str, Any]] = {}
        for file_path, sha in sorted(commit.files.items()):
            if not file_path.startswith(prefix):
                continue
            rest = file_path[len(prefix) :].split("/")
            for depth in range(1, len(rest)):
                folder = prefix + "/".join(rest[:depth])
                if recursive or depth == 1:
                    entries.setdefault(
                        folder,
                        {
                            "type": "directory",
                            "oid": hashlib.sha1(folder.encode()).hexdigest(),
                            "size": 0,
                            "path": folder,
                        },
                    )
                if not recursive:
                    break
            else:
                entries[file_path] = {"type": "file", "oid": sha, "size": self._size(sha), "path": file_path}
        if path and not entries:
            raise HubError(404, f"{path} does not exist on {revision}", "EntryNotFound", commit.sha)
        return _json(list(entries.values()))

    def _preupload(self, repo: Repo, revision: str, body: bytes, user: str | None) -> tuple[int, dict[str, str], bytes]:
        self._check_writer(repo, user)
        commit = self._commit(repo, revision)
        files = json.loads(body)["files"]
        return _json(
            {
                "files": [
                    {
                        "path": f["path"],
                        "uploadMode": "regular",
                        "shouldIgnore": False,
                        "oid": commit.files.get(f["path"]),
                    }
                    for f in files
                ]
            }
        )

    def _check_writer(self, repo: Repo, user: str | None) -> None:
        if user is None:
            raise HubError(401, "You must be authenticated to write to a repository")
        if user != repo.owner and not repo.repo_id.startswith(f"{user}/"):
            raise HubError(403, f"You don't have the rights to write to {repo.repo_id}")

    def _commit_files(
        self, repo: Repo, revision: str, body: bytes, user: str | None
    ) -> tuple[int, dict[str, str], bytes]:
        self._check_writer(repo, user)
        head = self._commit(repo, revision)
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise HubError(400, "the first line of a commit must be its header")
        header = lines[0]["value"]
        parent = header.get("parentCommit")
        if parent is not None and not head.sha.startswith(parent):
            raise HubError(412, f"A commit has happened since {parent}. Please refresh and try again.")
        files = dict(head.files)
        for line in lines[1:]:
            key, value = line["key"], line["value"]
            if key == "file":
                if value.get("encoding") != "base64":
                    raise HubError(400, "only base64 file content is supported")
                files[value["path"]] = self._store(base64.b64decode(value["content"]))
            elif key == "deletedFile":
                if value["path"] not in files:
                    raise HubError(404, "A file with this name doesn't exist", "EntryNotFound", head.sha)
                del files[value["path"]]
            elif key == "deletedFolder":
                folder = value["path"].rstrip("/") + "/"
                files = {path: sha for path, sha in files.items() if not path.startswith(folder)}
            else:
                raise HubError(400, f"unsupported commit operation {key!r} (this server takes inline files only)")
        commit = self._new_commit(repo, head.sha, header.get("summary", ""), files)
        return _json(
            {
                "commitUrl": f"{self.url}/{repo.repo_id}/commit/{commit.sha}",
                "commitOid": commit.sha,
                "pullRequestUrl": None,
                "success": True,
            }
        )

    def _resolve(
        self, repo: Repo, revision: str, path: str, headers: dict[str, str], method: str
    ) -> tuple[int, dict[str, str], bytes]:
        commit = self._commit(repo, revision)
        if path not in commit.files:
            raise HubError(404, "Entry not found", "EntryNotFound", commit.sha)
        sha = commit.files[path]
        content = self._blob(sha)
        status, start = 200, 0
        response = {
            "Content-Type": "application/octet-stream",
            "X-Repo-Commit": commit.sha,
            "ETag": f'"{sha}"',
            "Accept-Ranges": "bytes",
        }
        requested = headers.get("range", "")
        if requested.startswith("bytes=") and requested.endswith("-") and method == "GET":
            start = int(requested.removeprefix("bytes=").removesuffix("-") or 0)
            status = 206
            response["Content-Range"] = f"bytes {start}-{len(content) - 1}/{len(content)}"
        if method == "GET":
            key = (repo.repo_id, path)
            self._sent[key] = self._sent.get(key, 0) + len(content) - start
        return status, response, content[start:]


def _json(data: Any, status: int = 200) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(data).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the Hub: every response has a Content-Length
    hub: HubServer

    def log_message(self, format: str, *args: Any) -> None:  # tests read hub.requests instead
        pass

    def setup(self) -> None:
        super().setup()
        with self.hub._lock:
            self.hub._connections.add(self.connection)

    def finish(self) -> None:
        with self.hub._lock:
            self.hub._connections.discard(self.connection)
        super().finish()

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self, method: str) -> None:
        body = self._body()  # read first, even for an error, so the connection stays in sync
        headers = {key.lower(): value for key, value in self.headers.items()}
        status, response, content = self.hub.handle(method, self.path, headers, body)
        self.send_response(status)
        for key, value in response.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(content)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_HEAD(self) -> None:
        self._serve("HEAD")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")
