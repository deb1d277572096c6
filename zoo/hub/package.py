"""The folder a push uploads (:mod:`zoo.hub.layout`), built the same way for a push, a dry run and ``push-all``.

Evaluation comes first, so an agent that does not fit its env fails before anything is written; then the SB3 zip,
the pickle-free files (:mod:`zoo.agent_format`, checked by rebuilding the model and comparing its actions),
results.json, config.yml, the replay, the model card and, last, the manifest of all of them.
"""

from __future__ import annotations

import copy
import logging
import shlex
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from stable_baselines3.common.base_class import BaseAlgorithm

from zoo.agent_format import (
    CONFIG_JSON,
    WEIGHTS_FILE,
    load_agent,
    read_config,
    save_agent,
    write_json,
)
from zoo.algos import algo_name, hyperparams_from_model, policy_alias
from zoo.checks import check_digest, read_json, sha256_file, shown
from zoo.config import RunConfig
from zoo.episodes import Episodes, play
from zoo.errors import Parameter, ZooError, first_line
from zoo.factories import vec_env
from zoo.hub.card import render_card
from zoo.hub.layout import (
    CARD_FILE,
    MANIFEST_FILE,
    RESULTS_FILE,
    VIDEO_FILE,
    check_results,
    parse_manifest,
    repo_name,
    verify_file,
    write_manifest,
)
from zoo.hub.video import is_mujoco, record_replay
from zoo.machine import evaluation_machine
from zoo.normalization import PICKLE_FILE, VecNormalizeStats
from zoo.runs import CONFIG_YML

logger = logging.getLogger(__name__)


def run_config_of(
    config: RunConfig | None, model: BaseAlgorithm, env_id: str, stats: VecNormalizeStats | None
) -> RunConfig:
    """The run's configuration from what a caller of ``push_to_hub`` gave: a RunConfig, or None (synthesized from
    the model); its seed is the model's (none when the model has none)."""
    run = config
    if run is None:
        run = RunConfig(
            algo=algo_name(model),
            env_id=env_id,
            n_timesteps=int(model.num_timesteps) or 1,
            n_envs=int(model.n_envs or 1),
            policy=policy_alias(model),
            normalize=stats.settings() if stats is not None else False,
            env_kwargs={},
            hyperparams=hyperparams_from_model(model),
        )
    if run.env_id != env_id:
        raise ZooError(f"the agent's config is for {shown(run.env_id)}, not {shown(env_id)}")
    if run.algo != algo_name(model):
        raise ZooError(f"the agent's config is for {shown(run.algo)}, the model is {shown(algo_name(model))}")
    # The model's seed even where config.yml gave ``config`` one: config.yml, config.json and the card's command
    # name the seed of the model pushed, or none.
    return replace(run, seed=None) if model.seed is None else run.with_seed(model.seed)


def _check_round_trip(folder: Path, model: BaseAlgorithm) -> None:
    """Rebuild the model from the pickle-free files and compare its greedy actions with the original's."""
    rebuilt, _, _ = load_agent(folder, device=model.device)
    space = copy.deepcopy(model.observation_space)  # seeding the model's own space would change its samples
    space.seed(0)
    observations = [space.sample() for _ in range(32)]
    batch: Any
    if isinstance(observations[0], dict):
        batch = {key: np.stack([obs[key] for obs in observations]) for key in observations[0]}
    else:
        batch = np.stack(observations)
    expected, _ = model.predict(batch, deterministic=True)
    actual, _ = rebuilt.predict(batch, deterministic=True)
    if not np.allclose(np.asarray(expected, dtype=np.float64), np.asarray(actual, dtype=np.float64), atol=1e-6):
        raise ZooError(
            "the pickle-free copy (config.json + model.safetensors) does not act like the model; "
            "this is a bug in zoo.agent_format, please report it"
        )


def build_package(
    folder: Path,
    model: BaseAlgorithm,
    repo_id: str,
    *,
    config: RunConfig,
    stats: VecNormalizeStats | None,
    env_kwargs: dict[str, Any] | None,
    n_eval_episodes: int,
    eval_seed: int,
    n_eval_seeds: int,
    train_command: str | None,
    record_video: bool,
    video_length: int | None,
    template_path: Path | None,
    benchmark: dict[str, Any] | None = None,
) -> list[str]:
    """Write every file of a push of ``model`` (trained as ``config`` says, with its seed) into the empty ``folder``;
    return warnings (a replay that failed). ``benchmark``: the ``zoo benchmark`` seeds the model is one of, for
    results.json and the card (:func:`zoo.hub.push.benchmark_of`)."""
    env_id, seed = config.env_id, config.seed
    if config.normalize and stats is None:
        raise ZooError(
            f"{env_id}: the config normalizes observations/rewards (normalize: {shown(config.normalize)}) but "
            "no statistics were given as vec_normalize"
        )
    env_kwargs = dict(env_kwargs if env_kwargs is not None else config.env_kwargs)
    algo = algo_name(model)
    command = (train_command or "").strip() or shlex.join(
        ["python", "-m", "zoo", "train", "--algo", algo, "--env", env_id]
        + (["--seed", str(seed)] if seed is not None else [])
    )

    # Evaluation comes first: an agent that does not fit the env fails before anything is written or sent.
    results = evaluation_results(model, env_id, env_kwargs, stats, n_eval_episodes, eval_seed, n_eval_seeds)
    if benchmark is not None:
        results["benchmark"] = benchmark

    zip_path = folder / f"{repo_name(algo, env_id)}.zip"
    model.save(zip_path)
    extra = {
        "train_command": command,
        "seed": seed,
        "sb3_zip": {"file": zip_path.name, "size": zip_path.stat().st_size, "sha256": sha256_file(zip_path)},
    }
    save_agent(
        folder,
        model,
        env_id=env_id,
        env_kwargs=env_kwargs,
        vec_normalize=stats,
        hyperparams_fallback=config.hyperparams,
        extra=extra,
    )
    _check_round_trip(folder, model)
    if stats is not None:
        venv = vec_env(env_id, env_kwargs)
        try:
            stats.save_sb3_pickle(folder / PICKLE_FILE, venv)
        finally:
            venv.close()
    (folder / CONFIG_YML).write_text(yaml.safe_dump(config.to_data(), sort_keys=False), encoding="utf-8")

    warnings: list[str] = []
    if record_video:
        try:
            replay = record_replay(
                model, env_id, env_kwargs, stats, folder / VIDEO_FILE, max_frames=video_length, seed=eval_seed
            )
            results["replay"] = replay._asdict()  # the card says which part of which episode it shows
        except Exception as error:  # the video is a nicety: any failure costs it, never the push
            message = f"no {VIDEO_FILE}: recording the replay failed ({first_line(error)})"
            logger.warning(message)
            warnings.append(message)
    write_json(folder / RESULTS_FILE, results)
    (folder / CARD_FILE).write_text(render_card(folder, repo_id, template_path), encoding="utf-8")
    write_manifest(folder)
    return warnings


def eval_seed_counts(n_eval_episodes: int, n_eval_seeds: int) -> list[int]:
    """The episodes each eval seed plays, ``n_eval_episodes`` dealt as evenly as possible over ``n_eval_seeds``."""
    return [(n_eval_episodes + k) // n_eval_seeds for k in range(n_eval_seeds)]


def evaluation_results(
    model: BaseAlgorithm,
    env_id: str,
    env_kwargs: dict[str, Any],
    stats: VecNormalizeStats | None,
    n_eval_episodes: int,
    eval_seed: int,
    n_eval_seeds: int = 1,
) -> dict[str, Any]:
    """results.json's evaluation of ``model``: ``n_eval_episodes`` deterministic episodes, dealt over the eval seeds
    ``eval_seed``, ``eval_seed + 1``, ... (``n_eval_seeds`` of them), each from a fresh env.

    Several seeds because one seed's episodes say little of what another CPU shows: on a chaotic env (MuJoCo's
    walkers) another CPU's rounding sends the same seed down other trajectories, so a user sees new draws from the
    agent's distribution of episodes, falls included, and only many episodes from several starts describe that.
    """
    seeds = []
    episodes = Episodes([], [], [])
    for k, count in enumerate(eval_seed_counts(n_eval_episodes, n_eval_seeds)):
        played = play(model, env_id, env_kwargs, stats, count, seed=eval_seed + k)
        seeds.append({"seed": eval_seed + k, "episodes": count})
        episodes.rewards.extend(played.rewards)
        episodes.lengths.extend(played.lengths)
        episodes.truncated.extend(played.truncated)
    return {
        "env_id": env_id,
        "mean_reward": float(np.mean(episodes.rewards)),
        "std_reward": float(np.std(episodes.rewards)),
        "n_eval_episodes": n_eval_episodes,
        "deterministic": True,
        "eval_seed": eval_seed,
        "eval_seeds": seeds,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": evaluation_machine(mujoco=is_mujoco(env_id)),
        "episode_rewards": episodes.rewards,
        "episode_lengths": episodes.lengths,
        "episode_truncated": episodes.truncated,
    }


def sb3_zip(folder: Path, config: dict[str, Any], missing: str) -> Path:
    """The SB3 zip that ``config`` (config.json, checked: a plain file name) names, checked against its sha256;
    ``missing`` if absent."""
    zip_info = config.get("sb3_zip") or {}
    path = folder / str(zip_info.get("file", ""))
    if not zip_info or not path.is_file():
        raise ZooError(missing.format(file=zip_info.get("file")))
    return check_digest(path, zip_info.get("size"), zip_info.get("sha256"), CONFIG_JSON)


def verify_package(folder: Path) -> tuple[dict[str, Any], list[str]]:
    """Check a packaged folder (its manifest, every file it lists with its size and hash, the weights loadable);
    return its config.json and the files of the package: the ones its manifest lists, nothing else of the folder."""
    if not (folder / MANIFEST_FILE).is_file():
        raise ZooError(
            f"{folder} is not an agent package: it has no {MANIFEST_FILE} (package it with ",
            Parameter("package_agent"),
            ")",
        )
    manifest = parse_manifest(read_json(folder / MANIFEST_FILE), str(folder / MANIFEST_FILE))
    for name in manifest:
        if (folder / name).is_symlink():
            raise ZooError(f"{folder / name} is a symbolic link; a package holds plain files only")
        verify_file(folder, name, manifest)
    config = read_config(folder)
    for name in (WEIGHTS_FILE, RESULTS_FILE, CONFIG_YML):
        if not (folder / name).is_file():
            raise ZooError(f"{folder} is not a complete agent package: {name} is missing")
    sb3_zip(folder, config, f"{folder} is not a complete agent package: the SB3 zip {{file!r}} is missing")
    # What a pull checks, checked before the push: the card shows this score, and its episodes must give it.
    check_results(read_json(folder / RESULTS_FILE), config["env_id"])
    load_agent(folder, device="cpu", config=config)
    return config, sorted(manifest)


def inventory(folder: Path) -> tuple[dict[str, int], dict[str, str]]:
    """Every file's size and sha256."""
    files = sorted(p for p in folder.iterdir() if p.is_file())
    return {p.name: p.stat().st_size for p in files}, {p.name: sha256_file(p) for p in files}
