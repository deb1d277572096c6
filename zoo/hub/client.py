"""The zoo's only user of the Hub's API: repo-id checks, token, one-commit upload, file sizes, download, and errors.

Errors a user can cause (unknown repo, revision or file, no or rejected token, the Hub out of reach after a few
retries) become :class:`zoo.errors.ZooError` with one line. The endpoint and the cache are huggingface_hub's
(``HF_ENDPOINT`` and ``HF_HUB_CACHE`` as it read them) unless a caller passes its own.

huggingface_hub retries file transfers itself, but not its API calls (create the repo, read its info, commit,
list a revision), so a whole operation is retried here on a transient failure: a network error or HTTP 408, 429
or 5xx. Its API calls also wait forever by default (they pass ``timeout=None``), so every request a zoo operation
sends waits at most ``timeout`` seconds (:data:`DEFAULT_TIMEOUT_S` unless the caller says otherwise), through
huggingface_hub's supported hook for this: :func:`huggingface_hub.set_client_factory`. The zoo's factory builds
huggingface_hub's default client with one more request hook, which sets the timeout of each request while a zoo
operation runs and does nothing otherwise; it is installed on the first operation, not on import. A Hub that
accepts the connection and never answers is thus an error after the retries, not a hang.

A download is pinned to one commit, so that files fetched one after the other belong to the same push, and the
Hub's metadata gives each file's size before any byte of it is fetched (:func:`snapshot_info`), so that the caller
can refuse a file too large for what it is (:func:`zoo.hub.pull.load_from_hub`).
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import httpx2
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
    ModelInfo,
    ResolvedRevision,
    constants,
    get_token,
    hf_hub_download,
    set_client_factory,
    snapshot_download,
)
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
    RevisionResolutionError,
)
from huggingface_hub.utils import HFValidationError, validate_repo_id

from zoo.checks import is_number, read_json, shown
from zoo.errors import Message, Parameter, ZooError, first_line
from zoo.hub.layout import MANIFEST_FILE, parse_manifest
from zoo.parsers import HUB_TIMEOUT_S

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Network retries: attempts in all, and the first wait (doubled after each failure). Tests make them fast.
RETRY_ATTEMPTS = 3
RETRY_BACKOFF_S = 1.0
TRANSIENT_STATUS = {408, 429, 500, 502, 503, 504}
# How long one request may wait for the Hub (to connect, or between two reads or writes), in seconds. A Hub that
# accepts connections and never answers costs RETRY_ATTEMPTS * 8 s plus the backoffs (1 + 2 s): 27 s in all, near
# huggingface_hub's own 10 s a request. The limit is between two reads or writes, not on a whole transfer, so a
# slow but working Hub only needs to answer within it; a caller's ``timeout`` raises it.
DEFAULT_TIMEOUT_S = HUB_TIMEOUT_S
TIMEOUT = Parameter("timeout")
PRIVATE = Parameter("private", "private=True")

# The errors of a request that got no answer: the transport's (httpx2, the library of the client that
# huggingface_hub's client factory returns) and the operating system's network errors. The first tuple is retried,
# as huggingface_hub retries its own transfers; every other failure of the Hub is one of huggingface_hub.errors.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    httpx2.TimeoutException,
    httpx2.NetworkError,
    httpx2.RemoteProtocolError,
    ConnectionError,
    TimeoutError,
)
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (httpx2.TransportError, ConnectionError, TimeoutError)

_active_timeouts: list[float] = []  # one entry per zoo operation running now, in any thread
_active_lock = threading.Lock()  # held only to add or remove an entry
_factory_installed = False


def check_timeout(timeout: float | None) -> float:
    """``timeout`` (seconds, > 0 and finite), or :data:`DEFAULT_TIMEOUT_S` when None."""
    value = DEFAULT_TIMEOUT_S if timeout is None else timeout
    if not (is_number(value) and value > 0):
        raise ZooError(TIMEOUT, f" must be a number of seconds > 0, got {shown(timeout)}")
    return float(value)


def _apply_timeout(request: httpx2.Request) -> None:
    """Request hook of the zoo's client: while zoo operations run, each request waits at most the longest of their
    timeouts (huggingface_hub sends some requests from worker threads, so the limit cannot follow one thread);
    otherwise the request keeps the timeout huggingface_hub gave it."""
    with _active_lock:
        seconds = max(_active_timeouts, default=None)
    if seconds is not None:
        request.extensions["timeout"] = httpx2.Timeout(seconds).as_dict()


def client_factory() -> httpx2.Client:
    """The HTTP client huggingface_hub shares between its calls once the zoo ran an operation: its default client
    (offline mode, request ids, redirects) with :func:`_apply_timeout` added before anyone uses it."""
    # huggingface_hub 2.x has no public way to build its default client: set_client_factory replaces the whole
    # factory, and the default one (whose request hook enforces HF_HUB_OFFLINE and adds request ids) lives in a
    # private module. Building a client by hand would lose that hook in silence, so the private factory is used,
    # here only; tests/hub/test_client.py checks that the client it gives still refuses requests when offline.
    from huggingface_hub.utils._http import default_client_factory

    client = default_client_factory()
    hooks = client.event_hooks
    client.event_hooks = {**hooks, "request": [*hooks.get("request", []), _apply_timeout]}
    return client


def _install_client_factory() -> None:
    """Give huggingface_hub :func:`client_factory`, once per process (it closes the session it had)."""
    global _factory_installed
    with _active_lock:
        if _factory_installed:
            return
        _factory_installed = True
    set_client_factory(client_factory)


@contextlib.contextmanager
def request_timeout(seconds: float) -> Iterator[None]:
    """Every request huggingface_hub sends while this runs waits at most ``seconds`` for the Hub (to connect, read
    or write); operations in other threads are not held up (each request gets the longest limit of those running)."""
    _install_client_factory()
    with _active_lock:
        _active_timeouts.append(seconds)
    try:
        yield
    finally:
        with _active_lock:
            _active_timeouts.remove(seconds)


def _timed_out(error: BaseException | None) -> bool:
    """Whether ``error`` or one of its causes is a timeout of the HTTP client."""
    for _ in range(20):
        if error is None:
            return False
        if isinstance(error, (httpx2.TimeoutException, TimeoutError)):
            return True
        error = error.__cause__ or error.__context__
    return False


def endpoint(explicit: str | None = None) -> str:
    """The Hub to talk to: ``explicit``, else huggingface_hub's (``HF_ENDPOINT``)."""
    return (explicit or constants.ENDPOINT).rstrip("/")


def check_repo_id(repo_id: str) -> None:
    """``repo_id`` must be ORG/NAME as huggingface_hub validates it."""
    try:
        if repo_id.count("/") != 1:
            raise HFValidationError("no namespace")
        validate_repo_id(repo_id)
    except HFValidationError:
        raise ZooError(
            f"invalid repo id {shown(repo_id)}: expected ORG/NAME (letters, digits, '.', '_', '-')"
        ) from None


# --------------------------------------------------------------------------------------------------------- errors


def _is_transient(error: BaseException) -> bool:
    if isinstance(error, OfflineModeIsEnabled):
        return False
    if isinstance(error, HfHubHTTPError):
        response = getattr(error, "response", None)
        return response is not None and response.status_code in TRANSIENT_STATUS
    if isinstance(error, (LocalEntryNotFoundError, RevisionResolutionError)):
        # snapshot_download and resolve_revision report "Hub unreachable and nothing cached" this way, the network
        # error as cause.
        return error.__cause__ is not None and _is_transient(error.__cause__)
    return isinstance(error, TRANSIENT_ERRORS)


def retrying(action: Callable[[], T], what: str) -> T:
    """``action()``, retried with exponential backoff on transient network errors (the last one propagates)."""
    delay = RETRY_BACKOFF_S
    for attempt in range(1, RETRY_ATTEMPTS + 1):
        try:
            return action()
        except Exception as error:
            if attempt == RETRY_ATTEMPTS or not _is_transient(error):
                raise
            logger.warning(
                "%s: %s (attempt %d of %d); retrying in %.2g s", what, first_line(error), attempt, RETRY_ATTEMPTS, delay
            )
            time.sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")


def _rejected_token(what: str, hub: str) -> ZooError:
    return ZooError(
        f"{what}: the Hub at {hub} rejected the token (401 Unauthorized); set a valid HF_TOKEN or run `hf auth login`"
    )


@contextlib.contextmanager
def hub_errors(
    what: str,
    *,
    repo_id: str,
    hub: str,
    timeout: float,
    revision: str | None = None,
    cache_dir: str | None = None,
) -> Iterator[None]:
    """Turn huggingface_hub's and the network's exceptions into one-line ZooErrors; every request waits at most
    ``timeout`` seconds."""
    try:
        try:
            with request_timeout(timeout):
                yield
        except Exception as error:
            if _timed_out(error) and not isinstance(error, (ZooError, OfflineModeIsEnabled)):
                late = f"{what}: the Hub at {hub} did not answer within {timeout:g} s, {RETRY_ATTEMPTS} times"
                raise ZooError(late, "; try again later, or allow more time (a larger ", TIMEOUT, ")") from None
            raise
    except ZooError:
        raise
    except GatedRepoError:
        raise ZooError(f"{what}: {repo_id} is gated and this token has not been granted access") from None
    except RepositoryNotFoundError:
        raise ZooError(
            f"{what}: repository {repo_id} not found on {hub} (or it is private and the token cannot read it)"
        ) from None
    except RevisionNotFoundError:
        raise ZooError(f"{what}: revision {shown(revision)} not found in {repo_id}") from None
    except RemoteEntryNotFoundError as error:
        raise ZooError(f"{what}: file not found in {repo_id}: {first_line(error)}") from None
    except (OfflineModeIsEnabled, LocalEntryNotFoundError, RevisionResolutionError) as error:
        if constants.is_offline_mode() or isinstance(error, OfflineModeIsEnabled):
            raise ZooError(
                f"{what}: {repo_id}@{revision or 'main'} is not (completely) in the local cache {cache_dir} and "
                "HF_HUB_OFFLINE is set; download it once online"
            ) from None
        cause = error.__cause__ or error
        raise ZooError(
            f"{what}: could not reach the Hub at {hub} after {RETRY_ATTEMPTS} attempts and "
            f"{repo_id} is not in the local cache ({first_line(cause)})"
        ) from None
    except HfHubHTTPError as error:
        status = error.response.status_code if getattr(error, "response", None) is not None else None
        if status == 401:
            raise _rejected_token(what, hub) from None
        if status == 403:
            raise ZooError(
                f"{what}: the token may not write to {repo_id} (403 Forbidden); use a token with write "
                "access to that namespace"
            ) from None
        if status in TRANSIENT_STATUS:
            raise ZooError(
                f"{what}: the Hub at {hub} kept failing ({status}) after {RETRY_ATTEMPTS} attempts; try again later"
            ) from None
        raise ZooError(f"{what}: the Hub answered HTTP {status}: {first_line(error)}") from None
    except ValueError as error:  # huggingface_hub's checks: repo id syntax, README metadata the Hub refused...
        raise ZooError(f"{what}: {first_line(error)}") from None
    except TRANSPORT_ERRORS as error:
        raise ZooError(
            f"{what}: could not reach the Hub at {hub} after {RETRY_ATTEMPTS} attempts ({first_line(error)})"
        ) from None
    except OSError as error:  # the local side: the cache or a staged file cannot be read or written
        raise ZooError(f"{what}: {first_line(error)}") from None


# ----------------------------------------------------------------------------------------------------------- token


def login(token: str | None, hub: str, what: str, timeout: float = DEFAULT_TIMEOUT_S) -> str:
    """The token to write with (``token``, else HF_TOKEN or the stored login), checked before a long evaluation.

    Only a 401 fails here; any other problem is left to the upload (with its retries), since /whoami-v2 is strictly
    rate limited and a refusal there says nothing about the push.
    """
    token = token or get_token()
    if not token:
        raise ZooError("no Hugging Face token: set HF_TOKEN or run `hf auth login` (a token with write access)")
    try:
        with request_timeout(timeout):
            HfApi(endpoint=hub, token=token).whoami()
    except HfHubHTTPError as error:
        if getattr(error, "response", None) is not None and error.response.status_code == 401:
            raise _rejected_token(what, hub) from None
        logger.debug("token check skipped: %s", first_line(error))
    except Exception as error:  # network trouble: reported, after retries, by the upload itself
        logger.debug("token check skipped: %s", first_line(error))
    return token


# ----------------------------------------------------------------------------------------------- commit, download


def _owned_files(api: HfApi, repo_id: str, revision: str, existing: list[str]) -> set[str] | None:
    """The files an earlier push recorded in the repository's manifest.json (and the manifest itself), or None
    when the repository has no manifest this zoo can read."""
    if MANIFEST_FILE not in existing:
        return None
    with tempfile.TemporaryDirectory(prefix="zoo-manifest-") as scratch:
        path = hf_hub_download(
            repo_id, MANIFEST_FILE, revision=revision, cache_dir=scratch, token=api.token, endpoint=api.endpoint
        )
        try:
            return {*parse_manifest(read_json(Path(path)), f"{repo_id}/{MANIFEST_FILE}"), MANIFEST_FILE}
        except ZooError as error:
            logger.warning("%s; no file of the earlier push is deleted", error)
            return None


def commit_folder(
    folder: Path,
    repo_id: str,
    *,
    token: str,
    private: bool,
    commit_message: str,
    hub: str,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> tuple[str, list[str], list[str]]:
    """Upload the files of ``folder`` as one commit that also deletes the files an earlier push recorded in the
    repository's manifest.json and ``folder`` no longer has; return (commit sha, deleted, warnings).

    Nothing else in the repository is deleted: without a manifest (a repository this zoo never pushed to), the
    files the new push does not replace are left in place, with a warning naming them.
    """
    api = HfApi(endpoint=hub, token=token)
    names = sorted(p.name for p in folder.iterdir() if p.is_file())
    warnings: list[str] = []

    def attempt() -> tuple[str, list[str]]:
        api.create_repo(repo_id, private=private, exist_ok=True)
        info = api.model_info(repo_id)
        assert info.sha is not None
        existing = [sibling.rfilename for sibling in info.siblings or []]
        if private and info.private is False and not any("public" in w for w in warnings):
            kept = " does not change an existing repo"
            warnings.append(Message(f"{repo_id} already exists and is public; ", PRIVATE, kept))
        owned = _owned_files(api, repo_id, info.sha, existing)
        others = sorted(path for path in existing if path not in names and path != ".gitattributes")
        if owned is None and others and not any("left in place" in w for w in warnings):
            warnings.append(
                f"{repo_id} has no {MANIFEST_FILE} of an earlier push; its other files are left in place: "
                f"{', '.join(others[:10])}"
            )
        deleted = sorted(path for path in others if owned is not None and path in owned)
        operations: list[CommitOperationAdd | CommitOperationDelete] = [
            CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(folder / name)) for name in names
        ]
        operations += [CommitOperationDelete(path_in_repo=path) for path in deleted]
        # parent_commit: if someone else committed since model_info, the Hub refuses instead of mixing pushes.
        commit = api.create_commit(repo_id, operations, commit_message=commit_message, parent_commit=info.sha)
        return str(commit.oid), deleted

    with hub_errors(f"push to {repo_id}", repo_id=repo_id, hub=hub, timeout=timeout):
        sha, deleted = retrying(attempt, f"push to {repo_id}")
    return sha, deleted, warnings


def snapshot_info(
    repo_id: str,
    revision: str | None,
    *,
    cache_dir: str | Path | None,
    token: str | None,
    hub: str,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> tuple[ResolvedRevision, dict[str, int | None] | None]:
    """``revision`` (None: the default branch) of ``repo_id`` resolved to its commit, the mapping kept in the cache
    so that every later download comes from that commit, and the size in bytes the Hub reports for each file of
    that commit (None where it reports none). Offline, or with the Hub out of reach after the retries: the commit
    the cache has for ``revision``, and no sizes (None), so that only the cache answers."""
    cache = str(cache_dir or constants.HF_HUB_CACHE)
    what = f"download {repo_id}"
    api = HfApi(endpoint=hub, token=token)

    def info(at: str | None) -> ModelInfo:
        return retrying(lambda: api.model_info(repo_id, revision=at, files_metadata=True), what)

    with hub_errors(what, repo_id=repo_id, hub=hub, timeout=timeout, revision=revision, cache_dir=cache):
        try:
            found = info(revision)
        except Exception as error:
            if not (isinstance(error, OfflineModeIsEnabled) or _is_transient(error)):
                raise
            try:
                resolved = api.resolve_revision(repo_id, revision=revision, cache_dir=cache, local_files_only=True)
            except RevisionResolutionError as missing:
                raise missing from error  # reported as the Hub out of reach, with nothing cached
            return resolved, None
        resolved = retrying(lambda: api.resolve_revision(repo_id, revision=revision, cache_dir=cache), what)
        if resolved.resolved != found.sha:  # a push in between: the sizes must be those of the files downloaded
            found = info(resolved.resolved)
    return resolved, {sibling.rfilename: sibling.size for sibling in found.siblings or []}


def download(
    repo_id: str,
    revision: ResolvedRevision,
    names: list[str],
    *,
    cache_dir: str | Path | None,
    token: str | None,
    hub: str,
    timeout: float = DEFAULT_TIMEOUT_S,
    local_only: bool = False,
) -> Path:
    """The snapshot folder of ``repo_id`` at ``revision`` (from :func:`snapshot_info`) holding those of ``names`` (file
    names or patterns) that the repository has, through the HF cache; ``local_only``: from the cache alone."""
    cache = str(cache_dir or constants.HF_HUB_CACHE)
    what = f"download {repo_id}"
    with hub_errors(what, repo_id=repo_id, hub=hub, timeout=timeout, revision=str(revision), cache_dir=cache):
        return Path(
            retrying(
                lambda: snapshot_download(
                    repo_id,
                    revision=revision,
                    allow_patterns=names,
                    cache_dir=cache,
                    token=token,
                    endpoint=hub,
                    etag_timeout=timeout,
                    local_files_only=local_only,
                ),
                what,
            )
        )
