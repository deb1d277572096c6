"""The files of a packaged agent, as a push uploads them and a pull downloads them.

==========================  ==========================================================================
``<algo>-<env>.zip``        the Stable-Baselines3 model (``model.save``): a pickle, for trusted use only
``model.safetensors``       the policy's state_dict
``config.json``             everything needed to rebuild the model around those weights without pickle
``vec_normalize.json``      VecNormalize statistics, when the agent normalizes (also without pickle)
``vec_normalize.pkl``       the same statistics as SB3's ``VecNormalize.save`` writes them: a pickle, for SB3
                            and rl_zoo3 users who choose to unpickle; the zoo never reads it
``results.json``            the evaluation: mean/std reward, episodes, every episode's return and length; what
                            the replay shows; the ``zoo benchmark`` seeds the agent is one of, when it is
``config.yml``              the run's resolved configuration (``RunConfig.to_data``)
``replay.mp4``              one deterministic episode (left out, with a warning, if recording fails)
``README.md``               the model card
``manifest.json``           every other file's size and sha256, written last
==========================  ==========================================================================

The manifest is what a pull trusts (every file it reads must be in it, with that size and hash) and what a push
owns: a push deletes the files an earlier push recorded there and the new one lacks, never anything else in the
repository (a user's own zip, notes, .gitattributes, subfolders).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from zoo.agent_format import write_json
from zoo.bounds import MAX_SEEDS
from zoo.checks import (
    FILE_NAME,
    check_digest,
    check_format,
    file_record,
    is_integer,
    is_number,
    sha256_file,
    shown,
)
from zoo.errors import ZooError
from zoo.runs import env_slug

RESULTS_FILE = "results.json"
VIDEO_FILE = "replay.mp4"
CARD_FILE = "README.md"
MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = "sb3-reinforce-agent/manifest"
MANIFEST_VERSION = 1
MAX_MANIFEST_FILES = 256
MAX_BENCHMARK_SEEDS = MAX_SEEDS
MAX_STEPS = 2**40
MAX_MACHINE_FIELDS = 16
MAX_MACHINE_TEXT = 200


def write_manifest(folder: Path) -> dict[str, dict[str, Any]]:
    """Write ``manifest.json``: the size and sha256 of every other file of ``folder``; return its entries."""
    files = {
        path.name: {"size": path.stat().st_size, "sha256": sha256_file(path)}
        for path in sorted(folder.iterdir())
        if path.is_file() and path.name != MANIFEST_FILE
    }
    write_json(folder / MANIFEST_FILE, {"format": MANIFEST_FORMAT, "format_version": MANIFEST_VERSION, "files": files})
    return files


def parse_manifest(data: Any, source: str = MANIFEST_FILE) -> dict[str, dict[str, Any]]:
    """The entries of a manifest (file name -> size and sha256), every field checked; one ZooError otherwise."""
    data = check_format(data, source, MANIFEST_FORMAT, MANIFEST_VERSION)
    files = data.get("files")
    if not (isinstance(files, Mapping) and len(files) <= MAX_MANIFEST_FILES):
        raise ZooError(f"{source}: files must be a mapping of at most {MAX_MANIFEST_FILES} file names")
    for name, entry in files.items():
        if not (isinstance(name, str) and FILE_NAME.match(name) and name != MANIFEST_FILE):
            raise ZooError(f"{source}: {shown(name)} is not a plain file name of the agent's folder")
        file_record(entry, f"{source}: files[{shown(name)}]")
    return {name: dict(entry) for name, entry in files.items()}


def verify_file(folder: Path, name: str, manifest: Mapping[str, Mapping[str, Any]]) -> Path:
    """``folder / name``, after checking that the manifest lists it and that its size and sha256 are those."""
    entry = manifest.get(name)
    if entry is None:
        raise ZooError(f"{name} is not in {MANIFEST_FILE}: it was not written by the push that wrote the manifest")
    path = folder / name
    if not path.is_file():
        raise ZooError(f"{name} is missing, though {MANIFEST_FILE} lists it")
    return check_digest(path, entry["size"], entry["sha256"], MANIFEST_FILE)


def repo_name(algo: str, env_id: str) -> str:
    """The repository name, and the SB3 zip's stem, of an agent: ``reinforce-CartPole-v1``."""
    return f"{algo}-{env_slug(env_id)}"


def check_results(results: Any, env_id: str) -> dict[str, Any]:
    """``results.json`` as the package wrote it (see :mod:`zoo.hub.package`), or one ZooError saying what is wrong:
    a mapping for ``env_id`` whose every episode has a finite return and a length >= 1, and whose mean and std are
    those of its episodes (a card cannot show a score its own episodes do not give)."""

    def bad(what: str) -> ZooError:
        return ZooError(f"{RESULTS_FILE} is not an evaluation this zoo wrote: {what}")

    if not isinstance(results, dict):
        raise bad(f"a {type(results).__name__}, not a mapping")
    if results.get("env_id") != env_id:
        raise bad(f"env_id {shown(results.get('env_id'))}, the agent's is {shown(env_id)}")
    rewards, lengths, n = results.get("episode_rewards"), results.get("episode_lengths"), results.get("n_eval_episodes")
    if not is_integer(n) or n < 1:
        raise bad(f"n_eval_episodes {shown(n)}")
    if not isinstance(rewards, list) or len(rewards) != n or not all(map(is_number, rewards)):
        raise bad(f"episode_rewards is not {n} finite numbers")
    if (
        not isinstance(lengths, list)
        or len(lengths) != n
        or not all(is_integer(length) and length >= 1 for length in lengths)
    ):
        raise bad(f"episode_lengths is not {n} integers >= 1")
    try:
        stats = (("mean_reward", statistics.fmean(rewards)), ("std_reward", statistics.pstdev(rewards)))
    except OverflowError:
        raise bad("episode_rewards are finite but too large to average as floats") from None
    for key, expected in stats:
        value: Any = results.get(key)
        if not is_number(value) or not math.isclose(value, expected, rel_tol=1e-6, abs_tol=1e-6):
            raise bad(f"{key} {shown(value)}, its episodes give {shown(expected)}")
    if not isinstance(results.get("deterministic"), bool):
        raise bad(f"deterministic {shown(results.get('deterministic'))}")
    truncated = results.get("episode_truncated", [False] * n)
    if not (isinstance(truncated, list) and len(truncated) == n and all(isinstance(t, bool) for t in truncated)):
        raise bad(f"episode_truncated is not {n} booleans")
    if "eval_seeds" in results:
        _check_eval_seeds(results["eval_seeds"], n, bad)
    machine = results.get("machine", {})
    if not (
        isinstance(machine, dict)
        and len(machine) <= MAX_MACHINE_FIELDS
        and all(isinstance(v, str) and len(v) <= MAX_MACHINE_TEXT for v in machine.values())
    ):
        raise bad(f"machine is not a mapping of at most {MAX_MACHINE_FIELDS} short texts (the CPU, versions)")
    if "replay" in results:
        _check_replay(results["replay"], bad)
    if "benchmark" in results:
        _check_benchmark(results["benchmark"], bad)
    return results


def _check_eval_seeds(eval_seeds: Any, n_episodes: int, bad: Callable[[str], ZooError]) -> None:
    """``eval_seeds``: each seed and how many of the episodes, in order, it played; together all of them."""
    if not (
        isinstance(eval_seeds, list)
        and eval_seeds
        and all(
            isinstance(entry, dict)
            and is_integer(entry.get("seed"))
            and entry["seed"] >= 0
            and is_integer(entry.get("episodes"))
            and entry["episodes"] >= 1
            for entry in eval_seeds
        )
        and sum(entry["episodes"] for entry in eval_seeds) == n_episodes
    ):
        raise bad(f"eval_seeds is not a list of seeds and their episodes, {n_episodes} in all")


def _check_replay(replay: Any, bad: Callable[[str], ZooError]) -> None:
    """``replay``: the frames of replay.mp4, one a step from the episode's start, and the episode's length."""
    frames, length = (replay.get(key) if isinstance(replay, dict) else None for key in ("frames", "episode_length"))
    if not (is_integer(frames) and is_integer(length) and 1 <= frames <= length <= MAX_STEPS):
        raise bad(f"replay {shown(replay)} is not frames and episode_length, 1 <= frames <= episode_length")


def _check_benchmark(benchmark: Any, bad: Callable[[str], ZooError]) -> None:
    """``benchmark``: the agent's ``zoo benchmark`` seed, and every seed's final score (the agent's among them)."""
    scores = benchmark.get("scores") if isinstance(benchmark, dict) else None
    if not (isinstance(scores, list) and 1 <= len(scores) <= MAX_BENCHMARK_SEEDS):
        raise bad(f"benchmark.scores is not a list of 1 to {MAX_BENCHMARK_SEEDS} seeds' scores")
    seeds = []
    for entry in scores:
        if not (
            isinstance(entry, dict)
            and is_integer(entry.get("seed"))
            and entry["seed"] >= 0
            and is_number(entry.get("mean_reward"))
        ):
            raise bad(f"benchmark.scores holds {shown(entry)}, not a seed and its finite mean_reward")
        seeds.append(entry["seed"])
    if len(set(seeds)) != len(seeds):
        raise bad(f"benchmark.scores lists a seed twice: {shown(seeds)}")
    seed = benchmark.get("seed")
    if not (is_integer(seed) and seed in seeds):
        raise bad(f"benchmark.seed {shown(seed)} is not one of the seeds it scores")
