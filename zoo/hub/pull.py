"""Loading an agent back: :func:`load_from_hub` downloads it through the Hugging Face cache and rebuilds it;
:func:`load_from_folder` rebuilds one from a local folder of the same files (a dry run's, ``hub_cards/<env>/``),
with the same checks.

The cache makes it work offline (``HF_HUB_OFFLINE=1``) once an agent was downloaded. The model is rebuilt from
``config.json`` + ``model.safetensors``; nothing from the download is unpickled unless the caller passes
``allow_pickle=True``, and then only the zip that config.json names, a file of the snapshot itself.

Nothing downloaded is trusted: every file read (config.json, the weights, vec_normalize.json, results.json,
config.yml, the zip) must be listed in the push's manifest.json with its size and sha256, which are checked
before it is parsed (a file edited in the cache is caught too), and its size on the Hub is checked before it is
downloaded (:func:`_download`); every value is then validated
(:func:`zoo.agent_format.check_config`, :meth:`VecNormalizeStats.from_json`). The env id is only looked up in
gymnasium's registry, and the ``env_kwargs`` the agent was trained with are applied only when asked for.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from zoo.agent_format import (
    CONFIG_JSON,
    VEC_NORMALIZE_JSON,
    WEIGHTS_FILE,
    load_agent,
    load_stats,
    read_config,
    space_from_json,
)
from zoo.algos import ALGOS
from zoo.checks import MAX_JSON_BYTES, read_json, shown
from zoo.episodes import evaluate_episodes
from zoo.errors import Parameter, ZooError, first_line
from zoo.factories import make_eval_env
from zoo.hub import client
from zoo.hub.layout import (
    MANIFEST_FILE,
    RESULTS_FILE,
    check_results,
    parse_manifest,
    verify_file,
)
from zoo.hub.package import sb3_zip
from zoo.normalization import VecNormalizeStats
from zoo.parsers import DEFAULT_EVAL_SEED
from zoo.runs import CONFIG_YML
from zoo.yaml_data import MAX_YAML_CHARS, safe_yaml

logger = logging.getLogger(__name__)

# What a load reads besides manifest.json and config.json (and the zip that config.json names, with allow_pickle).
AGENT_FILES = (WEIGHTS_FILE, VEC_NORMALIZE_JSON, RESULTS_FILE, CONFIG_YML)
# The most bytes each file may take on the Hub before it is downloaded: what its reader accepts (a YAML character
# takes at most 4 bytes in UTF-8). The other files must have exactly the size that manifest.json records.
SIZE_LIMITS = {MANIFEST_FILE: MAX_JSON_BYTES, CONFIG_JSON: MAX_JSON_BYTES, CONFIG_YML: 4 * MAX_YAML_CHARS}
# A safetensors file is an 8-byte length, a JSON header and the tensors' bytes. The header holds, per tensor, its
# name, dtype, shape and offsets, and a few fields of metadata: these bound it well above what it takes.
HEADER_BYTES = 8 + 4096
TENSOR_HEADER_BYTES = 128
DIMENSION_HEADER_BYTES = 16
# Bytes per element of a dtype torch does not know: the widest it has (complex128). Such weights are refused when
# loaded; the bound only keeps the download of them small.
WIDEST_ELEMENT_BYTES = 16
WEIGHTS_LIMIT = f"a safetensors file of the tensors {CONFIG_JSON} describes takes"


@dataclass
class HubAgent:
    """An agent downloaded by :func:`load_from_hub`, or read from a local folder by :func:`load_from_folder`."""

    repo_id: str | None  # None: loaded from a local folder (load_from_folder)
    revision: str | None  # the commit sha actually loaded; None for a local folder
    model: BaseAlgorithm
    config: dict[str, Any]  # config.json
    results: dict[str, Any] | None  # results.json
    run_config: dict[str, Any] | None  # config.yml
    vec_normalize_stats: VecNormalizeStats | None
    local_dir: Path

    @property
    def name(self) -> str:
        """The agent as messages name it: its repository, or its local folder."""
        return self.repo_id if self.repo_id is not None else str(self.local_dir)

    @property
    def env_id(self) -> str:
        return str(self.config["env_id"])

    @property
    def env_kwargs(self) -> dict[str, Any]:
        """The ``env_kwargs`` the agent was trained with (validated data), applied only when passed explicitly."""
        return dict(self.config.get("env_kwargs") or {})

    def make_env(
        self,
        env_id: str | None = None,
        *,
        n_envs: int = 1,
        seed: int | None = None,
        render_mode: str | None = None,
        env_kwargs: dict[str, Any] | None = None,
    ) -> VecEnv:
        """The agent's env (or ``env_id``) wrapped in its frozen VecNormalize statistics when it has them.

        ``env_kwargs``: exactly the ones to make the env with (``{}``: the env as registered); None leaves the choice
        to :func:`choose_env_kwargs`, which applies none and logs a warning when the agent was trained with some.
        """
        env_id = env_id or self.env_id
        if env_kwargs is None:
            env_kwargs, note = choose_env_kwargs(self, env_id)
            if note is not None:
                logger.warning("%s (pass env_kwargs=agent.env_kwargs)", note)
        return make_eval_env(
            self.model, env_id, env_kwargs, self.vec_normalize_stats, n_envs=n_envs, seed=seed, render_mode=render_mode
        )

    def evaluate(
        self,
        n_episodes: int = 10,
        *,
        deterministic: bool = True,
        env_id: str | None = None,
        seed: int = DEFAULT_EVAL_SEED,
        render: bool = False,
        env_kwargs: dict[str, Any] | None = None,
    ) -> tuple[float, float]:
        """Mean and std of the episode return over ``n_episodes`` (``env_kwargs`` as in :meth:`make_env`)."""
        env = self.make_env(env_id, seed=seed, render_mode="human" if render else None, env_kwargs=env_kwargs)
        try:
            rewards, _ = evaluate_episodes(self.model, env, n_episodes, deterministic)
        finally:
            env.close()
        return float(np.mean(rewards)), float(np.std(rewards))


def choose_env_kwargs(
    agent: HubAgent, env_id: str | None = None, *, apply: bool = False
) -> tuple[dict[str, Any], str | None]:
    """The one rule for the ``env_kwargs`` a downloaded agent was trained with: they are applied only when asked
    (``apply``), since they can change what a score means (``max_episode_steps``), and only to the agent's own env
    (``env_id`` None or its id). Returns the env_kwargs to make the env with (``{}``: the env as registered) and,
    when the agent has env_kwargs and ``env_id`` is its env, one sentence saying whether they are applied."""
    if not agent.env_kwargs or (env_id is not None and env_id != agent.env_id):
        return {}, None
    if apply:
        return agent.env_kwargs, f"applying the env_kwargs {agent.env_kwargs} that {agent.name} was trained with"
    return {}, f"{agent.name} was trained with env_kwargs {agent.env_kwargs}; they are not applied"


def check_device(device: th.device | str) -> th.device | str:
    """``device`` if torch (or SB3, for "auto") knows it; one ZooError otherwise, before anything is read."""
    if isinstance(device, th.device) or device == "auto":
        return device
    try:
        th.device(device)
    except (RuntimeError, TypeError):
        raise ZooError(
            Parameter("device"),
            f" must be 'auto', 'cpu', 'cuda', 'cuda:N' or another torch device type, got {shown(device)}",
        ) from None
    return device


def load_from_hub(
    repo_id: str,
    revision: str | None = None,
    *,
    allow_pickle: bool = False,
    device: th.device | str = "auto",
    cache_dir: str | Path | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    timeout: float | None = None,
) -> HubAgent:
    """Download an agent pushed by ``zoo push`` and rebuild it.

    The model is rebuilt from ``config.json`` + ``model.safetensors`` after checking them; with
    ``allow_pickle=True`` the SB3 zip is loaded instead (``cls.load``, which unpickles: trusted repos only).
    Works offline (``HF_HUB_OFFLINE=1``) for a revision already in the cache. ``timeout``: seconds each request
    may wait for the Hub (:data:`zoo.hub.client.DEFAULT_TIMEOUT_S`).
    """
    client.check_repo_id(repo_id)
    seconds = client.check_timeout(timeout)
    device = check_device(device)
    hub = client.endpoint(endpoint)
    resolved, sizes = client.snapshot_info(
        repo_id, revision, cache_dir=cache_dir, token=token, hub=hub, timeout=seconds
    )
    label = f"{repo_id}@{resolved.resolved[:12]}"
    options: dict[str, Any] = {"cache_dir": cache_dir, "token": token, "hub": hub, "timeout": seconds}
    folder = _download(repo_id, resolved, sizes, label, allow_pickle=allow_pickle, options=options)
    return _read_agent(
        folder, label, repo_id=repo_id, revision=resolved.resolved, allow_pickle=allow_pickle, device=device
    )


def _download(
    repo_id: str,
    revision: client.ResolvedRevision,
    sizes: dict[str, int | None] | None,
    label: str,
    *,
    allow_pickle: bool,
    options: dict[str, Any],
) -> Path:
    """The snapshot folder of the agent at ``revision`` with the files a load reads, each checked against the size
    the Hub reports (``sizes``) before a byte of it is downloaded: manifest.json and config.json (downloaded first)
    against what their readers accept, every other file against the size manifest.json records, and the weights
    against what config.json records and its tensors take. A file the manifest does not list is not downloaded, as
    nothing reads it. ``sizes`` None (offline, or the Hub out of reach): the cache answers alone."""
    if sizes is None:
        cached = [MANIFEST_FILE, CONFIG_JSON, *AGENT_FILES, *(["*.zip"] if allow_pickle else [])]
        return client.download(repo_id, revision, cached, local_only=True, **options)
    with _named(label):
        first = [name for name in (MANIFEST_FILE, CONFIG_JSON) if name in sizes]
        for name in first:
            _check_limit(name, sizes[name], SIZE_LIMITS[name], "its reader accepts")
    folder = client.download(repo_id, revision, first, **options)
    if len(first) < 2:
        return folder  # _read_agent says which of the two is missing
    with _named(label, folder):
        manifest = parse_manifest(read_json(folder / MANIFEST_FILE))
        verify_file(folder, CONFIG_JSON, manifest)
        config = read_config(folder)
        zip_name = (config.get("sb3_zip") or {}).get("file") if allow_pickle else None
        wanted = [*AGENT_FILES, *([zip_name] if zip_name else [])]
        rest = [name for name in wanted if name in manifest and name in sizes]
        for name in rest:
            _check_exact(name, sizes[name], manifest[name]["size"], MANIFEST_FILE)
            if name in SIZE_LIMITS:
                _check_limit(name, sizes[name], SIZE_LIMITS[name], "its reader accepts")
        if WEIGHTS_FILE in rest:
            weights, size = config["weights"], sizes[WEIGHTS_FILE]
            _check_exact(WEIGHTS_FILE, size, weights["size"], CONFIG_JSON)
            _check_limit(WEIGHTS_FILE, size, _weights_bound(weights["tensors"]), WEIGHTS_LIMIT)
    return client.download(repo_id, revision, rest, **options) if rest else folder


def _check_exact(name: str, size: int | None, expected: int, record: str) -> None:
    """One ZooError, before ``name`` is downloaded, unless the Hub reports the size ``record`` lists for it."""
    if size != expected:
        found = "no size" if size is None else f"{size:,} bytes"
        raise ZooError(
            f"{name} is corrupt or was modified: {found} on the Hub, but {record} records {expected:,} "
            "(refused before downloading it)"
        )


def _check_limit(name: str, size: int | None, limit: int, of: str) -> None:
    """One ZooError, before ``name`` is downloaded, unless the Hub reports a size of at most ``limit`` bytes."""
    if size is None:
        raise ZooError(f"{name}: the Hub reports no size for it (refused before downloading it)")
    if size > limit:
        raise ZooError(
            f"{name} is {size:,} bytes on the Hub, more than the {limit:,} bytes {of} (refused before downloading it)"
        )


def _weights_bound(tensors: dict[str, Any]) -> int:
    """The most bytes a safetensors file of ``tensors`` (config.json's record: name -> shape and dtype) takes."""
    total = HEADER_BYTES
    for name, tensor in tensors.items():
        dtype = getattr(th, tensor["dtype"], None)
        element = dtype.itemsize if isinstance(dtype, th.dtype) else WIDEST_ELEMENT_BYTES
        header = len(json.dumps(name)) + TENSOR_HEADER_BYTES + DIMENSION_HEADER_BYTES * len(tensor["shape"])
        total += math.prod(tensor["shape"]) * element + header
    return total


def load_from_folder(folder: str | Path, *, allow_pickle: bool = False, device: th.device | str = "auto") -> HubAgent:
    """Rebuild an agent from a local folder of the files a push uploads (a dry run's folder, ``hub_cards/<env>/``),
    checked exactly as a download is: every file against its manifest.json, then every value."""
    device = check_device(device)
    folder = Path(folder)
    if not folder.is_dir():
        raise ZooError(f"{folder} is not a folder")
    return _read_agent(folder, str(folder), repo_id=None, revision=None, allow_pickle=allow_pickle, device=device)


def _read_agent(
    folder: Path,
    label: str,
    *,
    repo_id: str | None,
    revision: str | None,
    allow_pickle: bool,
    device: th.device | str,
) -> HubAgent:
    """The agent in ``folder``, each file checked against manifest.json before it is read; errors name ``label``."""
    if not (folder / CONFIG_JSON).is_file():
        raise ZooError(f"{label} has no {CONFIG_JSON}: it is not an agent pushed by `python -m zoo push`")
    with _named(label, folder):
        if not (folder / MANIFEST_FILE).is_file():
            raise ZooError(
                f"it has no {MANIFEST_FILE}, so its files cannot be verified: it was not pushed by `python -m zoo push`"
            )
        manifest = parse_manifest(read_json(folder / MANIFEST_FILE))
        verify_file(folder, CONFIG_JSON, manifest)
        config = read_config(folder)
        verify_file(folder, WEIGHTS_FILE, manifest)
        if config.get("normalize"):
            verify_file(folder, VEC_NORMALIZE_JSON, manifest)
        if allow_pickle:
            zip_name = str((config.get("sb3_zip") or {}).get("file", ""))
            if zip_name:
                verify_file(folder, zip_name, manifest)
            model, stats = _load_pickled(folder, config, device), load_stats(folder, config)
        else:
            model, config, stats = load_agent(folder, device=device, config=config)
        results = None
        if RESULTS_FILE in manifest:
            results = check_results(read_json(verify_file(folder, RESULTS_FILE, manifest)), str(config.get("env_id")))
        run_config = None
        if CONFIG_YML in manifest:
            path = verify_file(folder, CONFIG_YML, manifest)
            run_config = safe_yaml(path.read_text(encoding="utf-8", errors="replace"), CONFIG_YML)
    return HubAgent(
        repo_id=repo_id,
        revision=revision,
        model=model,
        config=config,
        results=results,
        run_config=run_config,
        vec_normalize_stats=stats,
        local_dir=folder,
    )


@contextlib.contextmanager
def _named(label: str, folder: Path | None = None) -> Iterator[None]:
    """A ZooError raised inside, prefixed with ``label`` (the repository or folder) and without ``folder``'s path:
    paths inside the cache say nothing to the user, the repository and the file name do."""
    try:
        yield
    except ZooError as error:
        message = str(error) if folder is None else str(error).replace(f"{folder}{os.sep}", "")
        raise ZooError(f"{label}: {message}") from None


def _load_pickled(folder: Path, config: dict[str, Any], device: th.device | str) -> BaseAlgorithm:
    """The SB3 zip that config.json names: a plain file name (checked), so only a file of the snapshot is opened."""
    path = sb3_zip(folder, config, "no SB3 zip ({file!r}) to load with allow_pickle")
    try:
        model = ALGOS[config["algo"]].load(path, device=device)
    except Exception as error:
        raise ZooError(f"cannot load {path.name}: {first_line(error)}") from None
    observation_space, action_space = (
        space_from_json(config["observation_space"], "observation_space"),
        space_from_json(config["action_space"], "action_space"),
    )
    if model.observation_space != observation_space or model.action_space != action_space:
        raise ZooError(f"the spaces of {path.name} do not match {CONFIG_JSON}")
    return model
