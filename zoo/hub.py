"""Hugging Face Hub: publish a trained agent (``zoo push``, ``zoo push-all``) and load one back (``zoo enjoy``).

A push evaluates the agent, records a replay, renders the model card from ``hub_cards/template.md`` and uploads
one folder in ONE commit (files of an earlier push that this one no longer has are deleted in the same commit):

==========================  ==========================================================================
``<algo>-<env>.zip``        the Stable-Baselines3 model (``model.save``): a pickle, for trusted use only
``model.safetensors``       the policy's state_dict
``config.json``             everything needed to rebuild the model around those weights without pickle
``vec_normalize.json``      VecNormalize statistics, when the agent normalizes (also without pickle)
``results.json``            the evaluation: mean/std reward, episodes, every episode's return and length
``config.yml``              the run's resolved configuration (``RunConfig.to_data``)
``replay.mp4``              one deterministic episode (left out, with a warning, if recording fails)
``README.md``               the model card
==========================  ==========================================================================

:func:`load_from_hub` downloads through the Hugging Face cache (so it works offline with ``HF_HUB_OFFLINE=1``
once an agent was downloaded) and rebuilds the model from ``config.json`` + ``model.safetensors``; nothing from
the download is unpickled unless the caller passes ``allow_pickle=True``. Files are checked against the sha256
recorded in ``config.json`` and the weights against the architecture it describes.

Errors a user can cause (unknown repo, revision or file, no or rejected token, the Hub out of reach after a few
retries, a corrupt or mismatched file, an env that does not fit the agent) raise :class:`zoo.config.ZooError`
with one line. Local folders are written into a temporary folder first and moved into place when complete.

The Hub endpoint is ``HF_ENDPOINT`` (read when a function is called, not only when huggingface_hub is imported);
the cache is ``cache_dir``, else ``HF_HUB_CACHE``, else huggingface_hub's default.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import fnmatch
import json
import logging
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch as th
import yaml
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    EvalResult,
    HfApi,
    ModelCard,
    ModelCardData,
    constants,
    get_token,
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
)
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from zoo.config import ALGOS, RunConfig, ZooError
from zoo.serialization import (
    CONFIG_FILE,
    VEC_NORMALIZE_FILE,
    WEIGHTS_FILE,
    VecNormalizeStats,
    algo_name,
    hyperparams_from_model,
    load_agent,
    policy_alias,
    read_config,
    read_json,
    save_agent,
    sha256_file,
    space_from_json,
    write_json,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

RESULTS_FILE = "results.json"
RUN_CONFIG_FILE = "config.yml"
VIDEO_FILE = "replay.mp4"
CARD_FILE = "README.md"
# What `zoo train` leaves in a run folder (zoo/train.py).
RUN_VEC_NORMALIZE_FILE = "vecnormalize.pkl"
RUN_COMMAND_FILE = "command.txt"
BEST_MODEL_FILE = "best_model.zip"

# hub_cards/template.md, reached through the package: zoo/model_card_template.md links to it in the repository,
# and a wheel carries it as a plain copy, so installed users render the same card.
TEMPLATE_PATH = Path(__file__).resolve().parent / "model_card_template.md"
HUB_CARDS_DIR = Path("hub_cards")
TAGS = ["reinforcement-learning", "stable-baselines3", "deep-reinforcement-learning", "sb3-reinforce"]
MIN_EVAL_EPISODES = 10
DEFAULT_EVAL_SEED = 12_345
DEFAULT_VIDEO_LENGTH = 1000
PLACEHOLDER_ORG = "ORG"
# Files a push owns: those of an earlier push that the new one lacks are deleted in its commit. Anything else in
# the repository (.gitattributes, a user's notes, subfolders) is left alone.
MANAGED_PATTERNS = (
    CARD_FILE,
    CONFIG_FILE,
    RUN_CONFIG_FILE,
    RESULTS_FILE,
    WEIGHTS_FILE,
    VEC_NORMALIZE_FILE,
    VIDEO_FILE,
    "*.zip",
)
DOWNLOAD_PATTERNS = [CONFIG_FILE, WEIGHTS_FILE, VEC_NORMALIZE_FILE, RESULTS_FILE, RUN_CONFIG_FILE]

# Network retries: attempts in all, and the first wait (doubled after each failure). Tests make them fast.
RETRY_ATTEMPTS = 4
RETRY_BACKOFF_S = 1.0
TRANSIENT_STATUS = {408, 429, 500, 502, 503, 504}


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Connection, timeout and protocol errors of the HTTP client huggingface_hub uses (httpx2 in 2.x, httpx in
    1.x, requests before): already imported by huggingface_hub, so looked up rather than imported."""
    names = {
        "httpx2": ("TimeoutException", "NetworkError", "RemoteProtocolError"),
        "httpx": ("TimeoutException", "NetworkError", "RemoteProtocolError"),
        "requests": ("ConnectionError", "Timeout"),
    }
    errors: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for module_name, classes in names.items():
        module = sys.modules.get(module_name)
        errors += [getattr(module, name) for name in classes if module is not None and hasattr(module, name)]
    return tuple(errors)


TRANSPORT_ERRORS = _transport_errors()
REPO_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


# ---------------------------------------------------------------------------------------------------- environment


def _endpoint(endpoint: str | None = None) -> str:
    return (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def _cache_dir(cache_dir: str | Path | None = None) -> str:
    return str(cache_dir or os.environ.get("HF_HUB_CACHE") or constants.HF_HUB_CACHE)


def _check_repo_id(repo_id: str) -> None:
    if not REPO_ID_RE.match(repo_id) or "--" in repo_id or ".." in repo_id:
        raise ZooError(f"invalid repo id {repo_id!r}: expected ORG/NAME (letters, digits, '.', '_', '-')")


def env_slug(env_id: str) -> str:
    """An env id as a file or repository name ("ALE/Pong-v5" -> "ALE-Pong-v5")."""
    return env_id.replace("/", "-")


# --------------------------------------------------------------------------------------------------------- errors


def _is_transient(error: BaseException) -> bool:
    if isinstance(error, OfflineModeIsEnabled):
        return False
    if isinstance(error, HfHubHTTPError):
        response = getattr(error, "response", None)
        return response is not None and response.status_code in TRANSIENT_STATUS
    if isinstance(error, LocalEntryNotFoundError):
        # snapshot_download reports "Hub unreachable and nothing cached" this way, the network error as cause.
        return error.__cause__ is not None and _is_transient(error.__cause__)
    return isinstance(error, TRANSPORT_ERRORS)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0] if lines else text}"


def _retrying(action: Callable[[], T], what: str) -> T:
    """``action()``, retried with exponential backoff on transient network errors (the last one propagates)."""
    delay = RETRY_BACKOFF_S
    for attempt in range(1, RETRY_ATTEMPTS + 1):
        try:
            return action()
        except Exception as error:
            if attempt == RETRY_ATTEMPTS or not _is_transient(error):
                raise
            logger.warning(
                "%s: %s (attempt %d of %d); retrying in %.2g s",
                what,
                _first_line(error),
                attempt,
                RETRY_ATTEMPTS,
                delay,
            )
            time.sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")


@contextlib.contextmanager
def _hub_errors(
    what: str, *, repo_id: str, endpoint: str, revision: str | None = None, cache_dir: str | None = None
) -> Iterator[None]:
    """Turn huggingface_hub's and the network's exceptions into one-line ZooErrors."""
    try:
        yield
    except ZooError:
        raise
    except GatedRepoError:
        raise ZooError(f"{what}: {repo_id} is gated and this token has not been granted access") from None
    except RepositoryNotFoundError:
        raise ZooError(
            f"{what}: repository {repo_id} not found on {endpoint} (or it is private and the token cannot read it)"
        ) from None
    except RevisionNotFoundError:
        raise ZooError(f"{what}: revision {revision!r} not found in {repo_id}") from None
    except RemoteEntryNotFoundError as error:
        raise ZooError(f"{what}: file not found in {repo_id}: {_first_line(error)}") from None
    except (OfflineModeIsEnabled, LocalEntryNotFoundError) as error:
        if constants.is_offline_mode() or isinstance(error, OfflineModeIsEnabled):
            raise ZooError(
                f"{what}: {repo_id}@{revision or 'main'} is not (completely) in the local cache {cache_dir} and "
                "HF_HUB_OFFLINE is set; download it once online"
            ) from None
        cause = error.__cause__ or error
        raise ZooError(
            f"{what}: could not reach the Hub at {endpoint} after {RETRY_ATTEMPTS} attempts and "
            f"{repo_id} is not in the local cache ({_first_line(cause)})"
        ) from None
    except HfHubHTTPError as error:
        status = error.response.status_code if getattr(error, "response", None) is not None else None
        if status == 401:
            raise ZooError(
                f"{what}: the Hub at {endpoint} rejected the token (401 Unauthorized); set a valid "
                "HF_TOKEN or run `hf auth login`"
            ) from None
        if status == 403:
            raise ZooError(
                f"{what}: the token may not write to {repo_id} (403 Forbidden); use a token with write "
                "access to that namespace"
            ) from None
        if status in TRANSIENT_STATUS:
            raise ZooError(
                f"{what}: the Hub at {endpoint} kept failing ({status}) after {RETRY_ATTEMPTS} attempts; "
                "try again later"
            ) from None
        raise ZooError(f"{what}: the Hub answered HTTP {status}: {_first_line(error)}") from None
    except ValueError as error:  # huggingface_hub's checks: repo id syntax, README metadata the Hub refused...
        raise ZooError(f"{what}: {_first_line(error)}") from None
    except TRANSPORT_ERRORS as error:
        raise ZooError(
            f"{what}: could not reach the Hub at {endpoint} after {RETRY_ATTEMPTS} attempts ({_first_line(error)})"
        ) from None


# ----------------------------------------------------------------------------------------------- local folders


@contextlib.contextmanager
def _staging() -> Iterator[Path]:
    """A temporary folder, removed on exit."""
    path = Path(tempfile.mkdtemp(prefix="zoo-hub-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _move_into_place(staging: Path, target: Path) -> None:
    """Make ``target`` a folder holding exactly the files of ``staging``; a reader never sees a half-written one.

    The files are gathered in a temporary folder beside ``target`` (same filesystem), which is then renamed.
    """
    if target.exists() and not target.is_dir():
        raise ZooError(f"{target} exists and is not a folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    sibling = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    old: Path | None = None
    try:
        for path in staging.iterdir():
            moved = Path(shutil.move(str(path), str(sibling / path.name)))
            moved.chmod(0o644)  # some writers (safetensors, mkdtemp) use owner-only modes: this is for sharing
        sibling.chmod(0o755)
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}-{time.monotonic_ns()}")
            target.rename(old)
        sibling.rename(target)
    except BaseException:
        if old is not None and not target.exists():
            old.rename(target)
        shutil.rmtree(sibling, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# --------------------------------------------------------------------------------------------- env and evaluation


def make_agent_env(
    model: BaseAlgorithm,
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    stats: VecNormalizeStats | None = None,
    *,
    n_envs: int = 1,
    seed: int | None = None,
    render_mode: str | None = None,
) -> VecEnv:
    """``env_id`` as the agent sees it (frozen VecNormalize statistics when it has them), after checking that its
    spaces are the agent's."""
    kwargs = dict(env_kwargs or {})
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    try:
        env = make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs=kwargs)
    except Exception as error:  # gymnasium raises NameNotFound, DependencyNotInstalled, TypeError for kwargs...
        raise ZooError(f"cannot make env {env_id!r}: {_first_line(error)}") from None
    try:
        if stats is not None:
            env = stats.wrap(env)
        if model.observation_space != env.observation_space or model.action_space != env.action_space:
            raise ZooError(
                f"the agent does not fit {env_id}: it acts on observations {model.observation_space} and actions "
                f"{model.action_space}, the env has {env.observation_space} and {env.action_space}"
            )
    except BaseException:
        env.close()
        raise
    return env


def evaluate_agent(
    model: BaseAlgorithm, env: VecEnv, n_episodes: int, deterministic: bool = True, render: bool = False
) -> tuple[list[float], list[int]]:
    rewards, lengths = evaluate_policy(
        model,
        env,
        n_eval_episodes=n_episodes,
        deterministic=deterministic,
        render=render,
        return_episode_rewards=True,
        warn=False,
    )
    return [float(r) for r in rewards], [int(n) for n in lengths]  # type: ignore[union-attr]


def format_metric(mean: float, std: float) -> str:
    """The model-index value: "500.00 +/- 0.00"."""
    return f"{mean:.2f} +/- {std:.2f}"


# ------------------------------------------------------------------------------------------------------- replay


def _write_video(frames: Iterable[np.ndarray], path: Path, fps: float) -> int:
    """Encode ``frames`` (consumed one at a time, never all in memory) as H.264 MP4; return how many."""
    import imageio.v2 as imageio

    writer: Any = None
    count = 0
    try:
        for frame in frames:
            if writer is None:
                # H.264 in yuv420p wants even sizes and ffmpeg would rescale to a multiple of 16: repeat the edge
                # pixels instead.
                height, width = frame.shape[:2]
                pad = ((0, -height % 16), (0, -width % 16), (0, 0))
                writer = imageio.get_writer(
                    str(path),
                    format="FFMPEG",
                    mode="I",
                    fps=fps,
                    codec="libx264",
                    pixelformat="yuv420p",
                    macro_block_size=16,
                    ffmpeg_log_level="error",
                )
            writer.append_data(np.pad(np.asarray(frame, dtype=np.uint8)[..., :3], pad, mode="edge"))
            count += 1
    finally:
        if writer is not None:
            writer.close()
    if count == 0:
        raise RuntimeError("the episode produced no frame")
    return count


def _episode_frames(model: BaseAlgorithm, env: VecEnv, env_id: str, max_frames: int) -> Iterator[np.ndarray]:
    observation = env.reset()
    for _ in range(max_frames):
        frame = env.get_images()[0]
        if frame is None or np.asarray(frame).ndim != 3:
            raise RuntimeError(f"{env_id} rendered {type(frame).__name__} instead of an RGB frame")
        yield np.asarray(frame, dtype=np.uint8)
        action, _ = model.predict(observation, deterministic=True)  # type: ignore[arg-type]
        observation, _, dones, _ = env.step(action)
        if dones[0]:
            return


def record_replay(
    model: BaseAlgorithm,
    env_id: str,
    env_kwargs: dict[str, Any],
    stats: VecNormalizeStats | None,
    path: Path,
    *,
    max_frames: int = DEFAULT_VIDEO_LENGTH,
    seed: int = DEFAULT_EVAL_SEED,
) -> int:
    """Write one deterministic episode (at most ``max_frames`` frames) to ``path`` as H.264 MP4; return the frame
    count. Raises on any failure, leaving no file at ``path``."""
    partial = path.with_name(f".{path.name}.partial.mp4")
    # Off-screen frames need no display; without this, pygame-based envs probe for one and print an "error" line.
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    env = make_agent_env(model, env_id, env_kwargs, stats, seed=seed, render_mode="rgb_array")
    try:
        metadata: dict[str, Any] = dict(env.metadata)
        count = _write_video(
            _episode_frames(model, env, env_id, max_frames), partial, float(metadata.get("render_fps") or 30)
        )
        with partial.open("rb") as file:
            header = file.read(12)
        if header[4:8] != b"ftyp":
            raise RuntimeError(f"the encoder wrote no MP4 (header {header!r})")
        partial.rename(path)
    finally:
        env.close()
        partial.unlink(missing_ok=True)
    return count


# ---------------------------------------------------------------------------------------------------------- card


def _human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def render_card(folder: Path, repo_id: str, template_path: Path | None = None) -> str:
    """The model card of a packaged folder, from the very files that are uploaded with it."""
    config = read_config(folder)
    results = read_json(folder / RESULTS_FILE)
    env_id, algo = config["env_id"], config["algo"]
    metric = format_metric(results["mean_reward"], results["std_reward"])
    card_data = ModelCardData(
        library_name="stable-baselines3",
        tags=[*TAGS, env_id],
        model_name=f"{algo}-{env_slug(env_id)}",
        eval_results=[
            EvalResult(
                task_type="reinforcement-learning",
                task_name="reinforcement-learning",
                dataset_type=env_id,
                dataset_name=env_id,
                metric_type="mean_reward",
                metric_name="mean_reward",
                metric_value=metric,
            )
        ],
    )
    files = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != CARD_FILE)
    versions = config.get("versions", {})
    normalize = config.get("normalize") or False
    card = ModelCard.from_template(
        card_data,
        template_path=str(template_path or TEMPLATE_PATH),
        repo_id=repo_id,
        env_id=env_id,
        algo=algo,
        algo_class_name=ALGOS[algo].__name__ if algo in ALGOS else algo,
        metric_value=metric,
        n_eval_episodes=results["n_eval_episodes"],
        deterministic=results.get("deterministic", True),
        eval_seed=results.get("eval_seed"),
        eval_date=results.get("date"),
        num_timesteps=config.get("num_timesteps"),
        has_video=VIDEO_FILE in files,
        train_command=config.get("train_command") or "",
        zip_name=config.get("sb3_zip", {}).get("file", ""),
        policy=config.get("policy"),
        policy_kwargs=json.dumps(config.get("policy_kwargs") or {}, sort_keys=True),
        env_kwargs=json.dumps(config.get("env_kwargs") or {}, sort_keys=True),
        normalize=json.dumps(normalize, sort_keys=True) if normalize else "",
        n_envs=config.get("n_envs"),
        hyperparams=[(name, json.dumps(value)) for name, value in sorted(config.get("hyperparams", {}).items())],
        files=[(name, _human_size((folder / name).stat().st_size)) for name in files],
        versions=sorted(versions.items()),
        versions_map=versions,
    )
    return str(card)


# ------------------------------------------------------------------------------------------------------ packaging


@dataclass
class PushResult:
    """What a push (or a dry run, or :func:`package_agent`) produced."""

    repo_id: str
    files: dict[str, int]
    sha256: dict[str, str]
    results: dict[str, Any]
    commit: str | None = None
    url: str | None = None
    folder: Path | None = None
    deleted: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _run_data(
    config: RunConfig | dict[str, Any] | None, model: BaseAlgorithm, env_id: str, stats: VecNormalizeStats | None
) -> dict[str, Any]:
    """The run's configuration as config.yml data; synthesized from the model when no config is given."""
    if isinstance(config, RunConfig):
        data = config.to_data(model.seed)
    elif isinstance(config, dict):
        RunConfig.from_data(config)  # validates, raising ZooError on a bad config
        data = dict(config)
    elif config is None:
        data = {
            "algo": algo_name(model),
            "env_id": env_id,
            **({"seed": model.seed} if model.seed is not None else {}),
            "n_timesteps": int(model.num_timesteps) or 1,
            "n_envs": int(model.n_envs or 1),
            "policy": policy_alias(model),
            "normalize": stats.settings() if stats is not None else False,
            "env_kwargs": {},
            "hyperparams": hyperparams_from_model(model),
        }
    else:
        raise ZooError(f"config must be a RunConfig, a config.yml mapping or None, got {type(config).__name__}")
    if data.get("env_id") != env_id:
        raise ZooError(f"the agent's config is for {data.get('env_id')!r}, not {env_id!r}")
    if data.get("algo") != algo_name(model):
        raise ZooError(f"the agent's config is for {data.get('algo')!r}, the model is {algo_name(model)!r}")
    return data


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
            "this is a bug in zoo.serialization, please report it"
        )


def _build_package(
    folder: Path,
    model: BaseAlgorithm,
    env_id: str,
    repo_id: str,
    *,
    config: RunConfig | dict[str, Any] | None,
    vec_normalize: VecNormalize | VecNormalizeStats | None,
    env_kwargs: dict[str, Any] | None,
    n_eval_episodes: int,
    eval_seed: int,
    train_command: str | None,
    record_video: bool,
    video_length: int,
    template_path: Path | None,
) -> list[str]:
    """Write every file of a push into the empty ``folder``; return warnings (a replay that failed)."""
    if n_eval_episodes < MIN_EVAL_EPISODES:
        raise ZooError(f"n_eval_episodes must be >= {MIN_EVAL_EPISODES} for a published result, got {n_eval_episodes}")
    stats = (
        VecNormalizeStats.from_vec_normalize(vec_normalize)
        if isinstance(vec_normalize, VecNormalize)
        else vec_normalize
    )
    run = _run_data(config, model, env_id, stats)
    if run.get("normalize") and stats is None:
        raise ZooError(
            f"{env_id}: the config normalizes observations/rewards (normalize: {run['normalize']!r}) but "
            f"no VecNormalize statistics were given ({RUN_VEC_NORMALIZE_FILE} beside the model)"
        )
    env_kwargs = dict(env_kwargs if env_kwargs is not None else run.get("env_kwargs") or {})
    algo = algo_name(model)
    seed = run.get("seed")
    command = (train_command or "").strip() or shlex.join(
        [
            "python",
            "-m",
            "zoo",
            "train",
            "--algo",
            algo,
            "--env",
            env_id,
            *(["--seed", str(seed)] if seed is not None else []),
        ]
    )

    # Evaluation comes first: an agent that does not fit the env fails before anything is written or sent.
    env = make_agent_env(model, env_id, env_kwargs, stats, seed=eval_seed)
    try:
        rewards, lengths = evaluate_agent(model, env, n_eval_episodes)
    finally:
        env.close()
    results = {
        "env_id": env_id,
        "mean_reward": float(np.mean(rewards)),
        "std_reward": float(np.std(rewards)),
        "n_eval_episodes": n_eval_episodes,
        "deterministic": True,
        "eval_seed": eval_seed,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "episode_rewards": rewards,
        "episode_lengths": lengths,
    }

    zip_path = folder / f"{algo}-{env_slug(env_id)}.zip"
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
        hyperparams_fallback=run.get("hyperparams"),
        extra=extra,
    )
    _check_round_trip(folder, model)
    write_json(folder / RESULTS_FILE, results)
    (folder / RUN_CONFIG_FILE).write_text(yaml.safe_dump(run, sort_keys=False), encoding="utf-8")

    warnings: list[str] = []
    if record_video:
        try:
            record_replay(
                model, env_id, env_kwargs, stats, folder / VIDEO_FILE, max_frames=video_length, seed=eval_seed
            )
        except Exception as error:  # the video is a nicety: any failure costs it, never the push
            message = f"no {VIDEO_FILE}: recording the replay failed ({_first_line(error)})"
            logger.warning(message)
            warnings.append(message)
    (folder / CARD_FILE).write_text(render_card(folder, repo_id, template_path), encoding="utf-8")
    return warnings


def _inventory(folder: Path) -> tuple[dict[str, int], dict[str, str]]:
    files = sorted(p for p in folder.iterdir() if p.is_file())
    return {p.name: p.stat().st_size for p in files}, {p.name: sha256_file(p) for p in files}


def _managed(path: str) -> bool:
    return "/" not in path and any(fnmatch.fnmatchcase(path, pattern) for pattern in MANAGED_PATTERNS)


def _commit_folder(
    folder: Path, repo_id: str, *, token: str, private: bool, commit_message: str, endpoint: str
) -> tuple[str, list[str], list[str]]:
    """Upload ``folder`` as one commit that also deletes stale managed files; return (sha, deleted, warnings)."""
    api = HfApi(endpoint=endpoint, token=token)
    names = sorted(p.name for p in folder.iterdir() if p.is_file())
    warnings: list[str] = []

    def attempt() -> tuple[str, list[str]]:
        api.create_repo(repo_id, private=private, exist_ok=True)
        info = api.model_info(repo_id)
        existing = [sibling.rfilename for sibling in info.siblings or []]
        if private and info.private is False and not warnings:
            warnings.append(f"{repo_id} already exists and is public; --private does not change an existing repo")
        stale = sorted(path for path in existing if path not in names and _managed(path))
        operations: list[CommitOperationAdd | CommitOperationDelete] = [
            CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(folder / name)) for name in names
        ]
        operations += [CommitOperationDelete(path_in_repo=path) for path in stale]
        # parent_commit: if someone else committed since model_info, the Hub refuses instead of mixing pushes.
        commit = api.create_commit(repo_id, operations, commit_message=commit_message, parent_commit=info.sha)
        return str(commit.oid), stale

    with _hub_errors(f"push to {repo_id}", repo_id=repo_id, endpoint=endpoint):
        sha, stale = _retrying(attempt, f"push to {repo_id}")
    return sha, stale, warnings


def _resolve_token(token: str | None) -> str:
    token = token or get_token()
    if not token:
        raise ZooError("no Hugging Face token: set HF_TOKEN or run `hf auth login` (a token with write access)")
    return token


def _check_token(token: str, endpoint: str, what: str) -> None:
    """Fail before a long evaluation if the Hub rejects the token; any other problem is left to the upload (with its
    retries), since /whoami-v2 is strictly rate limited and a refusal there says nothing about the push."""
    try:
        HfApi(endpoint=endpoint, token=token).whoami()
    except HfHubHTTPError as error:
        if getattr(error, "response", None) is not None and error.response.status_code == 401:
            raise ZooError(
                f"{what}: the Hub at {endpoint} rejected the token (401 Unauthorized); set a valid "
                "HF_TOKEN or run `hf auth login`"
            ) from None
        logger.debug("token check skipped: %s", _first_line(error))
    except Exception as error:  # network trouble: reported, after retries, by the upload itself
        logger.debug("token check skipped: %s", _first_line(error))


def push_to_hub(
    model: BaseAlgorithm,
    env_id: str,
    repo_id: str,
    *,
    config: RunConfig | dict[str, Any] | None = None,
    vec_normalize: VecNormalize | VecNormalizeStats | None = None,
    private: bool = False,
    commit_message: str | None = None,
    dry_run_dir: str | Path | None = None,
    n_eval_episodes: int = MIN_EVAL_EPISODES,
    token: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    train_command: str | None = None,
    record_video: bool = True,
    video_length: int = DEFAULT_VIDEO_LENGTH,
    eval_seed: int = DEFAULT_EVAL_SEED,
    endpoint: str | None = None,
    template_path: Path | None = None,
) -> PushResult:
    """Evaluate ``model`` on ``env_id``, package it (see the module docstring) and upload it to ``repo_id`` in one
    commit; with ``dry_run_dir``, write the folder that would be uploaded there instead and touch no network.

    :param config: the run's configuration (a :class:`RunConfig` or config.yml data), written as config.yml and
        used for env_kwargs, the seed and the normalization check; synthesized from the model when None.
    :param vec_normalize: the training VecNormalize (or its statistics) when the agent normalizes.
    :param train_command: the exact ``python -m zoo train ...`` command (command.txt); rebuilt when None.
    :param record_video: record ``replay.mp4`` (a failure only costs the video, with a warning).
    """
    _check_repo_id(repo_id)
    target = Path(dry_run_dir) if dry_run_dir is not None else None
    hub = _endpoint(endpoint)
    hub_token = None
    if target is None:
        hub_token = _resolve_token(token)
        _check_token(hub_token, hub, f"push to {repo_id}")
    with _staging() as folder:
        warnings = _build_package(
            folder,
            model,
            env_id,
            repo_id,
            config=config,
            vec_normalize=vec_normalize,
            env_kwargs=env_kwargs,
            n_eval_episodes=n_eval_episodes,
            eval_seed=eval_seed,
            train_command=train_command,
            record_video=record_video,
            video_length=video_length,
            template_path=template_path,
        )
        files, digests = _inventory(folder)
        results = read_json(folder / RESULTS_FILE)
        result = PushResult(repo_id=repo_id, files=files, sha256=digests, results=results, warnings=warnings)
        if target is not None:
            _move_into_place(folder, target)
            result.folder = target
            return result
        assert hub_token is not None
        metric = format_metric(results["mean_reward"], results["std_reward"])
        message = commit_message or f"Push {algo_name(model)} agent for {env_id}: mean_reward {metric}"
        result.commit, result.deleted, more = _commit_folder(
            folder, repo_id, token=hub_token, private=private, commit_message=message, endpoint=hub
        )
        result.warnings += more
        result.url = f"{hub}/{repo_id}"
        return result


def verify_package(folder: Path) -> dict[str, Any]:
    """Check a packaged folder (files present, hashes, weights loadable); return its config.json."""
    config = read_config(folder)
    for name in (WEIGHTS_FILE, RESULTS_FILE, RUN_CONFIG_FILE):
        if not (folder / name).is_file():
            raise ZooError(f"{folder} is not a complete agent package: {name} is missing")
    zip_info = config.get("sb3_zip") or {}
    zip_path = folder / str(zip_info.get("file", ""))
    if not zip_info or not zip_path.is_file():
        raise ZooError(f"{folder} is not a complete agent package: the SB3 zip {zip_info.get('file')!r} is missing")
    if sha256_file(zip_path) != zip_info.get("sha256"):
        raise ZooError(f"{zip_path} does not match the sha256 in {CONFIG_FILE}: corrupt or modified")
    load_agent(folder, device="cpu", config=config)
    return config


def push_folder(
    folder: str | Path,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool = False,
    commit_message: str | None = None,
    endpoint: str | None = None,
    template_path: Path | None = None,
) -> PushResult:
    """Upload a packaged folder (from :func:`package_agent` or a dry run) as is, its card rendered for ``repo_id``."""
    _check_repo_id(repo_id)
    source = Path(folder)
    config = verify_package(source)
    hub, hub_token = _endpoint(endpoint), _resolve_token(token)
    _check_token(hub_token, hub, f"push to {repo_id}")
    with _staging() as staging:
        for path in source.iterdir():
            if path.is_file() and path.name != CARD_FILE:
                shutil.copy2(path, staging / path.name)
        (staging / CARD_FILE).write_text(render_card(staging, repo_id, template_path), encoding="utf-8")
        files, digests = _inventory(staging)
        results = read_json(staging / RESULTS_FILE)
        metric = format_metric(results["mean_reward"], results["std_reward"])
        message = commit_message or f"Push {config['algo']} agent for {config['env_id']}: mean_reward {metric}"
        sha, deleted, warnings = _commit_folder(
            staging, repo_id, token=hub_token, private=private, commit_message=message, endpoint=hub
        )
    return PushResult(
        repo_id=repo_id,
        files=files,
        sha256=digests,
        results=results,
        commit=sha,
        url=f"{hub}/{repo_id}",
        deleted=deleted,
        warnings=warnings,
    )


def load_run(
    path: str | Path, env_id: str
) -> tuple[BaseAlgorithm, dict[str, Any] | None, VecNormalize | None, str | None]:
    """A model written by ``zoo train`` with what its run folder holds: (model, config.yml data, VecNormalize,
    command). ``path`` is the model zip or the run folder (its ``<env_id>.zip``, else ``best_model.zip``).

    These are local files the user made, so unpickling the zip and vecnormalize.pkl here is their own choice.
    """
    path = Path(path)
    if path.is_dir():
        candidates = [path / f"{env_id}.zip", path / f"{env_slug(env_id)}.zip", path / BEST_MODEL_FILE]
        found = next((p for p in candidates if p.is_file()), None)
        if found is None:
            raise ZooError(f"no model in {path}: expected {env_id}.zip or {BEST_MODEL_FILE}")
        path = found
    if not path.is_file():
        raise ZooError(f"model file not found: {path}")
    run_dir = path.parent
    data: dict[str, Any] | None = None
    if (run_dir / RUN_CONFIG_FILE).is_file():
        try:
            data = yaml.safe_load((run_dir / RUN_CONFIG_FILE).read_text(encoding="utf-8"))
        except yaml.YAMLError as error:
            raise ZooError(f"{run_dir / RUN_CONFIG_FILE} is not valid YAML: {error}") from None
        if not isinstance(data, dict):
            raise ZooError(f"{run_dir / RUN_CONFIG_FILE} is not a mapping")
        RunConfig.from_data(data)
    names = [data["algo"]] if data and data.get("algo") in ALGOS else list(ALGOS)
    errors: list[str] = []
    model: BaseAlgorithm | None = None
    for name in names:
        try:
            model = ALGOS[name].load(path, device="cpu")
            break
        except Exception as error:  # SB3 raises many kinds for a zip of another algorithm or no zip at all
            errors.append(f"{name}: {_first_line(error)}")
    if model is None:
        raise ZooError(f"{path} is not a model this zoo can load ({'; '.join(errors)[:300]})")
    vec_normalize = None
    if (run_dir / RUN_VEC_NORMALIZE_FILE).is_file():
        env_kwargs = (data or {}).get("env_kwargs") or {}
        try:
            venv = make_vec_env(env_id, n_envs=1, env_kwargs=env_kwargs)
        except Exception as error:
            raise ZooError(f"cannot make env {env_id!r}: {_first_line(error)}") from None
        try:
            vec_normalize = VecNormalize.load(str(run_dir / RUN_VEC_NORMALIZE_FILE), venv)
        except Exception as error:
            venv.close()
            raise ZooError(
                f"cannot load {run_dir / RUN_VEC_NORMALIZE_FILE} for {env_id}: {_first_line(error)}"
            ) from None
    command_path = run_dir / RUN_COMMAND_FILE
    command = command_path.read_text(encoding="utf-8").strip() if command_path.is_file() else None
    return model, data, vec_normalize, command or None


def package_agent(
    run_dir_or_model_path: str | Path,
    env_id: str,
    out_dir: str | Path,
    *,
    repo_id: str | None = None,
    n_eval_episodes: int = MIN_EVAL_EPISODES,
    record_video: bool = True,
    video_length: int = DEFAULT_VIDEO_LENGTH,
    eval_seed: int = DEFAULT_EVAL_SEED,
) -> PushResult:
    """Write a ready-to-push folder for a ``zoo train`` run (exactly a push's dry run) to ``out_dir``.

    The card names ``repo_id``, by default ``ORG/<algo>-<env>``; ``push-all`` renders it again for the real org.
    """
    model, data, vec_normalize, command = load_run(run_dir_or_model_path, env_id)
    name = repo_id or f"{PLACEHOLDER_ORG}/{algo_name(model)}-{env_slug(env_id)}"
    try:
        return push_to_hub(
            model,
            env_id,
            name,
            config=data,
            vec_normalize=vec_normalize,
            dry_run_dir=out_dir,
            n_eval_episodes=n_eval_episodes,
            train_command=command,
            record_video=record_video,
            video_length=video_length,
            eval_seed=eval_seed,
        )
    finally:
        if vec_normalize is not None:
            vec_normalize.close()


# ------------------------------------------------------------------------------------------------------------ pull


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
        return make_agent_env(
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
            rewards, _ = evaluate_agent(self.model, env, n_episodes, deterministic)
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
    _check_repo_id(repo_id)
    hub, cache = _endpoint(endpoint), _cache_dir(cache_dir)
    patterns = DOWNLOAD_PATTERNS + (["*.zip"] if allow_pickle else [])
    what = f"download {repo_id}"
    with _hub_errors(what, repo_id=repo_id, endpoint=hub, revision=revision, cache_dir=cache):
        folder = Path(
            _retrying(
                lambda: snapshot_download(
                    repo_id, revision=revision, allow_patterns=patterns, cache_dir=cache, token=token, endpoint=hub
                ),
                what,
            )
        )
    sha = folder.name
    label = f"{repo_id}@{sha[:12]}"
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        if not (folder / name).is_file():
            raise ZooError(f"{label} has no {name}: it is not an agent pushed by `python -m zoo push`")
    try:
        config = read_config(folder)
        if allow_pickle:
            model, _, stats = _load_pickled(folder, config, device)
        else:
            model, config, stats = load_agent(folder, device=device, config=config)
        results = read_json(folder / RESULTS_FILE) if (folder / RESULTS_FILE).is_file() else None
        run_config = None
        if (folder / RUN_CONFIG_FILE).is_file():
            try:
                run_config = yaml.safe_load((folder / RUN_CONFIG_FILE).read_text(encoding="utf-8"))
            except yaml.YAMLError as error:
                raise ZooError(f"{RUN_CONFIG_FILE} is not valid YAML: {error}") from None
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


def _load_pickled(
    folder: Path, config: dict[str, Any], device: th.device | str
) -> tuple[BaseAlgorithm, dict[str, Any], VecNormalizeStats | None]:
    zip_info = config.get("sb3_zip") or {}
    path = folder / str(zip_info.get("file", ""))
    if not zip_info or not path.is_file():
        raise ZooError(f"no SB3 zip ({zip_info.get('file')!r}) to load with allow_pickle")
    if sha256_file(path) != zip_info.get("sha256"):
        raise ZooError(f"{path.name} does not match the sha256 in {CONFIG_FILE}: corrupt or modified")
    algo = config.get("algo")
    if algo not in ALGOS:
        raise ZooError(f"unknown algo {algo!r} in {CONFIG_FILE}")
    try:
        model = ALGOS[algo].load(path, device=device)
    except Exception as error:
        raise ZooError(f"cannot load {path.name}: {_first_line(error)}") from None
    observation_space, action_space = (
        space_from_json(config["observation_space"]),
        space_from_json(config["action_space"]),
    )
    if model.observation_space != observation_space or model.action_space != action_space:
        raise ZooError(f"the spaces of {path.name} do not match {CONFIG_FILE}")
    stats = None
    if config.get("normalize"):
        if not (folder / VEC_NORMALIZE_FILE).is_file():
            raise ZooError(f"{CONFIG_FILE} says the agent normalizes but {VEC_NORMALIZE_FILE} is missing")
        stats = VecNormalizeStats.from_json(read_json(folder / VEC_NORMALIZE_FILE))
    return model, config, stats


# ------------------------------------------------------------------------------------------------------------- CLI


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """States every real default; required options and flags (default None/False) say theirs in words."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.required or action.default is None or action.default is False:
            return action.help or ""
        return super()._get_help_string(action) or ""


def _parser(prog: str, description: str) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=prog, description=description, formatter_class=_HelpFormatter)


def _print_warnings(warnings: list[str]) -> None:
    for message in warnings:
        print(f"warning: {message}", file=sys.stderr)


def _describe_files(files: dict[str, int]) -> str:
    return ", ".join(f"{name} ({_human_size(size)})" for name, size in sorted(files.items()))


def push_main(argv: list[str]) -> int:
    parser = _parser(
        "python -m zoo push",
        "Evaluate an agent, record a replay, render its model card and upload it "
        "to the Hugging Face Hub in one commit (token: HF_TOKEN or `hf auth login`).",
    )
    parser.add_argument(
        "--model",
        required=True,
        help="the model zip written by `zoo train` (or its run folder); "
        "config.yml, vecnormalize.pkl and command.txt are read from the same folder",
    )
    parser.add_argument("--env", required=True, help="Gymnasium env id the agent plays")
    parser.add_argument("--repo-id", required=True, help="target repository, ORG/NAME")
    parser.add_argument("--private", action="store_true", help="create the repository private (default: public)")
    parser.add_argument("--commit-message", default=None, help="commit message (default: agent and mean reward)")
    parser.add_argument(
        "--dry-run",
        metavar="DIR",
        default=None,
        help="write the folder that would be uploaded to DIR and touch no network (default: push)",
    )
    parser.add_argument(
        "--n-eval-episodes",
        type=int,
        default=MIN_EVAL_EPISODES,
        help=f"deterministic evaluation episodes (>= {MIN_EVAL_EPISODES})",
    )
    parser.add_argument("--eval-seed", type=int, default=DEFAULT_EVAL_SEED, help="seed of the evaluation env")
    parser.add_argument("--video-length", type=int, default=DEFAULT_VIDEO_LENGTH, help="most frames in replay.mp4")
    parser.add_argument("--no-video", action="store_true", help="do not record replay.mp4 (default: record it)")
    args = parser.parse_args(argv)
    model, data, vec_normalize, command = load_run(args.model, args.env)
    try:
        result = push_to_hub(
            model,
            args.env,
            args.repo_id,
            config=data,
            vec_normalize=vec_normalize,
            private=args.private,
            commit_message=args.commit_message,
            dry_run_dir=args.dry_run,
            n_eval_episodes=args.n_eval_episodes,
            train_command=command,
            record_video=not args.no_video,
            video_length=args.video_length,
            eval_seed=args.eval_seed,
        )
    finally:
        if vec_normalize is not None:
            vec_normalize.close()
    _print_warnings(result.warnings)
    metric = format_metric(result.results["mean_reward"], result.results["std_reward"])
    if result.folder is not None:
        print(
            f"dry run: wrote {result.folder} for {args.repo_id} (mean_reward {metric}): {_describe_files(result.files)}"
        )
    else:
        print(
            f"pushed {args.env} agent to {result.url} at commit {result.commit} (mean_reward {metric}): "
            f"{_describe_files(result.files)}"
        )
        if result.deleted:
            print(f"removed files of the previous push: {', '.join(result.deleted)}")
    return 0


def enjoy_main(argv: list[str]) -> int:
    parser = _parser(
        "python -m zoo enjoy",
        "Download an agent from the Hugging Face Hub (pickle-free unless "
        "--allow-pickle), evaluate it and print mean +/- std reward.",
    )
    parser.add_argument("--repo-id", required=True, help="repository, ORG/NAME")
    parser.add_argument("--revision", default=None, help="branch, tag or commit sha (default: main)")
    parser.add_argument("--episodes", type=int, default=10, help="evaluation episodes")
    parser.add_argument("--render", action="store_true", help="show the episodes in a window (default: no window)")
    parser.add_argument(
        "--allow-pickle",
        action="store_true",
        help="load the SB3 zip, which unpickles code: only for repositories you trust (default: "
        "rebuild from config.json + model.safetensors)",
    )
    parser.add_argument("--env", default=None, help="evaluate on this env id (default: the agent's own)")
    parser.add_argument("--stochastic", action="store_true", help="sample actions (default: greedy actions)")
    parser.add_argument("--seed", type=int, default=DEFAULT_EVAL_SEED, help="seed of the evaluation env")
    parser.add_argument("--device", default="auto", help="torch device")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        raise ZooError(f"--episodes must be >= 1, got {args.episodes}")
    agent = load_from_hub(args.repo_id, args.revision, allow_pickle=args.allow_pickle, device=args.device)
    mean, std = agent.evaluate(
        args.episodes, deterministic=not args.stochastic, env_id=args.env, seed=args.seed, render=args.render
    )
    mode = "stochastic" if args.stochastic else "deterministic"
    print(
        f"{args.repo_id}@{agent.revision[:12]} on {args.env or agent.env_id}: mean_reward "
        f"{format_metric(mean, std)} over {args.episodes} {mode} episodes"
    )
    return 0


def packaged_folders(root: Path) -> list[Path]:
    """The agent folders under ``root`` (each holding a config.json), sorted."""
    if not root.is_dir():
        raise ZooError(f"{root} is not a folder")
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / CONFIG_FILE).is_file())


def push_all_main(argv: list[str]) -> int:
    parser = _parser(
        "python -m zoo push-all",
        "Push every packaged agent folder under hub_cards/ (those with a "
        "config.json) to ORG/<algo>-<env id>, e.g. ORG/reinforce-CartPole-v1.",
    )
    parser.add_argument("--org", required=True, help="user or organization that receives the repositories")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="check the folders and list what would be pushed, touching no network (default: push)",
    )
    parser.add_argument("--hub-cards", default=str(HUB_CARDS_DIR), help="folder of packaged agents")
    parser.add_argument("--private", action="store_true", help="create the repositories private (default: public)")
    parser.add_argument("--commit-message", default=None, help="commit message (default: agent and mean reward)")
    args = parser.parse_args(argv)
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", args.org):
        raise ZooError(f"invalid --org {args.org!r}: a user or organization name, without '/'")
    folders = packaged_folders(Path(args.hub_cards))
    if not folders:
        raise ZooError(f"no packaged agents (folders with a {CONFIG_FILE}) under {args.hub_cards}")
    failures: list[str] = []
    for folder in folders:
        try:
            config = read_config(folder)
            repo_id = f"{args.org}/{config['algo']}-{env_slug(config['env_id'])}"
            if args.dry_run:
                verify_package(folder)
                render_card(folder, repo_id)
                files = {p.name: p.stat().st_size for p in folder.iterdir() if p.is_file()}
                print(f"would push {folder} to {repo_id}: {_describe_files(files)}")
                continue
            result = push_folder(folder, repo_id, private=args.private, commit_message=args.commit_message)
            _print_warnings(result.warnings)
            print(f"pushed {folder} to {result.url} at commit {result.commit}")
        except ZooError as error:
            print(f"error: {folder}: {error}", file=sys.stderr)
            failures.append(folder.name)
    if failures:
        raise ZooError(f"{len(failures)} of {len(folders)} agents were not pushed: {', '.join(failures)}")
    return 0
