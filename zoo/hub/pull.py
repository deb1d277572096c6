"""Loading an agent back: :func:`load_from_hub` downloads it through the Hugging Face cache and rebuilds it.

The cache makes it work offline (``HF_HUB_OFFLINE=1``) once an agent was downloaded. The model is rebuilt from
``config.json`` + ``model.safetensors``; nothing from the download is unpickled unless the caller passes
``allow_pickle=True``, and then only the zip that config.json names, a file of the snapshot itself.

Nothing downloaded is trusted: every file read (config.json, the weights, vec_normalize.json, results.json,
config.yml, the zip) must be listed in the push's manifest.json with its size and sha256, which are checked
before it is parsed (a file edited in the cache is caught too); every value is then validated
(:func:`zoo.agent_format.check_config`, :meth:`VecNormalizeStats.from_json`). The env id is only looked up in
gymnasium's registry, and the ``env_kwargs`` the agent was trained with are applied only when asked for.
"""

from __future__ import annotations

import logging
import os
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
from zoo.checks import read_json
from zoo.config import safe_yaml
from zoo.errors import ZooError, first_line
from zoo.evaluate import DEFAULT_EVAL_SEED, evaluate_episodes, make_eval_env
from zoo.hub import client
from zoo.hub.layout import (
    DOWNLOAD_PATTERNS,
    MANIFEST_FILE,
    RESULTS_FILE,
    check_results,
    parse_manifest,
    verify_file,
)
from zoo.hub.package import sb3_zip
from zoo.normalization import VecNormalizeStats
from zoo.runs import CONFIG_YML

logger = logging.getLogger(__name__)


@dataclass
class HubAgent:
    """An agent downloaded by :func:`load_from_hub`."""

    repo_id: str
    revision: str  # the commit sha actually loaded
    model: BaseAlgorithm
    config: dict[str, Any]  # config.json
    results: dict[str, Any] | None  # results.json
    run_config: dict[str, Any] | None  # config.yml
    vec_normalize_stats: VecNormalizeStats | None
    local_dir: Path

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
        return agent.env_kwargs, f"applying the env_kwargs {agent.env_kwargs} that {agent.repo_id} was trained with"
    return {}, f"{agent.repo_id} was trained with env_kwargs {agent.env_kwargs}; they are not applied"


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
    patterns = DOWNLOAD_PATTERNS + (["*.zip"] if allow_pickle else [])
    folder = client.download(
        repo_id,
        revision,
        patterns,
        cache_dir=cache_dir,
        token=token,
        hub=client.endpoint(endpoint),
        timeout=seconds,
    )
    sha = folder.name
    label = f"{repo_id}@{sha[:12]}"
    for name in (CONFIG_JSON, WEIGHTS_FILE):
        if not (folder / name).is_file():
            raise ZooError(f"{label} has no {name}: it is not an agent pushed by `python -m zoo push`")
    try:
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
    except ZooError as error:
        # Paths inside the cache say nothing to the user: name the repository and the file instead.
        raise ZooError(f"{label}: {str(error).replace(f'{folder}{os.sep}', '')}") from None
    return HubAgent(
        repo_id=repo_id,
        revision=sha,
        model=model,
        config=config,
        results=results,
        run_config=run_config,
        vec_normalize_stats=stats,
        local_dir=folder,
    )


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
