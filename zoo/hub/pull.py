"""Loading an agent back: :func:`load_from_hub` downloads it through the Hugging Face cache and rebuilds it.

The cache makes it work offline (``HF_HUB_OFFLINE=1``) once an agent was downloaded. The model is rebuilt from
``config.json`` + ``model.safetensors``; nothing from the download is unpickled unless the caller passes
``allow_pickle=True``. Files are checked against the sha256 recorded in ``config.json`` and the weights against
the architecture it describes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
import yaml
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from zoo.agent_format import CONFIG_JSON, WEIGHTS_FILE, load_agent, load_stats, read_config, read_json, space_from_json
from zoo.algos import ALGOS
from zoo.errors import ZooError, first_line
from zoo.evaluate import DEFAULT_EVAL_SEED, evaluate_episodes, make_eval_env
from zoo.hub import client
from zoo.hub.layout import DOWNLOAD_PATTERNS, RESULTS_FILE
from zoo.hub.package import sb3_zip
from zoo.normalization import VecNormalizeStats
from zoo.runs import CONFIG_YML


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

    def make_env(
        self, env_id: str | None = None, *, n_envs: int = 1, seed: int | None = None, render_mode: str | None = None
    ) -> VecEnv:
        """The agent's env (or ``env_id``), wrapped in its frozen VecNormalize statistics when it has them."""
        env_id = env_id or self.env_id
        env_kwargs = (self.config.get("env_kwargs") or {}) if env_id == self.env_id else {}
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
    ) -> tuple[float, float]:
        """Mean and std of the episode return over ``n_episodes``."""
        env = self.make_env(env_id, seed=seed, render_mode="human" if render else None)
        try:
            rewards, _ = evaluate_episodes(self.model, env, n_episodes, deterministic)
        finally:
            env.close()
        return float(np.mean(rewards)), float(np.std(rewards))


def load_from_hub(
    repo_id: str,
    revision: str | None = None,
    *,
    allow_pickle: bool = False,
    device: th.device | str = "auto",
    cache_dir: str | Path | None = None,
    token: str | None = None,
    endpoint: str | None = None,
) -> HubAgent:
    """Download an agent pushed by ``zoo push`` and rebuild it.

    The model is rebuilt from ``config.json`` + ``model.safetensors`` after checking them; with
    ``allow_pickle=True`` the SB3 zip is loaded instead (``cls.load``, which unpickles: trusted repos only).
    Works offline (``HF_HUB_OFFLINE=1``) for a revision already in the cache.
    """
    client.check_repo_id(repo_id)
    patterns = DOWNLOAD_PATTERNS + (["*.zip"] if allow_pickle else [])
    folder = client.download(
        repo_id, revision, patterns, cache_dir=cache_dir, token=token, hub=client.endpoint(endpoint)
    )
    sha = folder.name
    label = f"{repo_id}@{sha[:12]}"
    for name in (CONFIG_JSON, WEIGHTS_FILE):
        if not (folder / name).is_file():
            raise ZooError(f"{label} has no {name}: it is not an agent pushed by `python -m zoo push`")
    try:
        config = read_config(folder)
        if allow_pickle:
            model, stats = _load_pickled(folder, config, device), load_stats(folder, config)
        else:
            model, config, stats = load_agent(folder, device=device, config=config)
        results = read_json(folder / RESULTS_FILE) if (folder / RESULTS_FILE).is_file() else None
        run_config = None
        if (folder / CONFIG_YML).is_file():
            try:
                run_config = yaml.safe_load((folder / CONFIG_YML).read_text(encoding="utf-8"))
            except yaml.YAMLError as error:
                raise ZooError(f"{CONFIG_YML} is not valid YAML: {error}") from None
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
    path = sb3_zip(folder, config, "no SB3 zip ({file!r}) to load with allow_pickle")
    algo = config.get("algo")
    if algo not in ALGOS:
        raise ZooError(f"unknown algo {algo!r} in {CONFIG_JSON}")
    try:
        model = ALGOS[algo].load(path, device=device)
    except Exception as error:
        raise ZooError(f"cannot load {path.name}: {first_line(error)}") from None
    observation_space, action_space = (
        space_from_json(config["observation_space"]),
        space_from_json(config["action_space"]),
    )
    if model.observation_space != observation_space or model.action_space != action_space:
        raise ZooError(f"the spaces of {path.name} do not match {CONFIG_JSON}")
    return model
