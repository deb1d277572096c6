"""Checkpoints: a training run that is cut off (Ctrl-C, a laptop asleep, a preempted job, a reboot) resumes from its
last checkpoint instead of starting over, to the same budget.

A run folder's ``checkpoint/`` holds the run's state at one update boundary:

- ``checkpoint.json``: the run's config (config.yml's mapping, seed included), the step and update counts, the
  training time so far, the steps at which the run was resumed before, the generator states (Python's ``random``,
  numpy's global one, the algorithm's own when it has one, each evaluation env's), the VecNormalize statistics
  (the JSON of :class:`~zoo.normalization.VecNormalizeStats`), the periodic evaluations so far, and the size and
  sha256 of each file below;
- ``state-<steps>.pt``: the state dicts of the policy and of every optimizer (SB3's ``get_parameters``) and torch's
  generator state, read back with ``torch.load(weights_only=True)``: tensors and plain containers, never pickled
  objects;
- ``best_model-<steps>.zip``: a copy of the best model so far, when there is one (a later evaluation of the run
  that was cut may have replaced best_model.zip with a model the resumed run never trains).

Written file by file under new names, a checkpoint is committed by replacing checkpoint.json atomically; the files
it no longer names are removed after. A cut at any instant leaves the previous checkpoint or the new one, whole.
Reading checks the format and version, every field, and each file's size and sha256 before torch reads it (a
truncated or modified checkpoint is one ZooError); :func:`restore` then checks the tensors' names and shapes against
the model and the statistics' shapes against the env.

Its length is one job: the checkpoint format, its writer, its checking reader and the resume that finds and
locks a checkpointed run, kept together so that what is written and what is read back change together.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import glob
import io
import json
import os
import pickle
import random
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.logger import CSVOutputFormat, Logger
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from sb3_reinforce.common.episodic import EpisodicOnPolicyAlgorithm
from zoo.checks import (
    FILE_NAME,
    check_digest,
    check_format,
    file_record,
    integer,
    is_integer,
    is_number,
    read_json,
    sha256_file,
    shown,
)
from zoo.config import config_difference
from zoo.errors import ZooError, first_line
from zoo.folders import make_folder, write_atomically
from zoo.normalization import VecNormalizeStats

CHECKPOINT_DIR = "checkpoint"
MANIFEST = "checkpoint.json"
FORMAT = "sb3-reinforce-zoo/checkpoint"
FORMAT_VERSION = 1
# The most steps between two checkpoints unless told otherwise: a 1e6-step MuJoCo run on two cores takes up to half
# an hour, so a cut loses at most a few minutes.
MAX_INTERVAL = 100_000
MAX_STEPS = 2**63 - 1
# SB3's log of the run (``configure(folder, ["csv"])``) and the column it writes the step count to at every dump.
PROGRESS_CSV = "progress.csv"
STEP_COLUMN = "time/total_timesteps"
# What numpy, torch and random raise for a generator state of the wrong shape or type.
STATE_ERRORS = (TypeError, ValueError, KeyError, IndexError, OverflowError, RuntimeError)


def default_interval(n_timesteps: int) -> int:
    """Steps between checkpoints unless told: 100,000, or a tenth of a smaller budget."""
    return max(min(MAX_INTERVAL, n_timesteps // 10), 1)


# ------------------------------------------------------------------------------------------------ the state


@dataclass
class EvaluationState:
    """The periodic evaluation's record so far: SB3's EvalCallback lists (evaluations.npz), its scores, the update
    the last evaluation saw, and the evaluation envs' generator states (None before the first evaluation, when the
    envs still hold the seed they were made with)."""

    timesteps: list[int]
    results: list[list[float]]
    ep_lengths: list[list[int]]
    successes: list[list[bool]]
    best_mean_reward: float
    last_mean_reward: float
    evaluated_at_update: int | None
    generators: list[dict[str, Any]] | None

    def to_json(self) -> dict[str, Any]:
        finite = (self.best_mean_reward, self.last_mean_reward)
        best, last = (value if np.isfinite(value) else None for value in finite)  # -inf: none yet
        return {
            "timesteps": self.timesteps,
            "results": self.results,
            "ep_lengths": self.ep_lengths,
            "successes": self.successes,
            "best_mean_reward": best,
            "last_mean_reward": last,
            "evaluated_at_update": self.evaluated_at_update,
            "generators": self.generators,
        }

    @classmethod
    def from_json(cls, data: Any, source: str) -> EvaluationState:
        where = f"{source}: evaluation"
        if not isinstance(data, dict):
            raise ZooError(f"{where} must be a mapping, got {shown(data)}")
        timesteps = data.get("timesteps")
        if not (isinstance(timesteps, list) and all(is_integer(t) and 0 <= t <= MAX_STEPS for t in timesteps)):
            raise ZooError(f"{where}.timesteps must be a list of step counts, got {shown(timesteps)}")
        results = _rows(data.get("results"), len(timesteps), is_number, f"{where}.results")
        lengths = _rows(data.get("ep_lengths"), len(timesteps), is_integer, f"{where}.ep_lengths")
        if [len(row) for row in lengths] != [len(row) for row in results]:
            raise ZooError(f"{where}.ep_lengths must hold one length per episode of results")
        # SB3 records successes only at the evaluations whose episodes reported ``is_success``.
        successes = data.get("successes")
        if not (isinstance(successes, list) and len(successes) <= len(timesteps)):
            raise ZooError(
                f"{where}.successes must be a list of at most one row per evaluation, got {shown(successes)}"
            )
        successes = _rows(successes, len(successes), lambda value: isinstance(value, bool), f"{where}.successes")
        scores = [data.get(key) for key in ("best_mean_reward", "last_mean_reward")]
        if not all(score is None or is_number(score) for score in scores):
            raise ZooError(
                f"{where}: best_mean_reward and last_mean_reward must be numbers or null, got {shown(scores)}"
            )
        update = data.get("evaluated_at_update")
        if update is not None:
            integer(update, f"{where}.evaluated_at_update", 0, MAX_STEPS)
        generators = data.get("generators")
        if generators is not None:
            if not isinstance(generators, list):
                raise ZooError(
                    f"{where}.generators must be a list of generator states or null, got {shown(generators)}"
                )
            for i, state in enumerate(generators):
                check_generator_state(state, f"{where}.generators[{i}]")
        best, last = (-np.inf if score is None else float(score) for score in scores)
        return cls(timesteps, results, lengths, successes, best, last, update, generators)


def _rows(value: Any, count: int, kind: Callable[[Any], bool], where: str) -> list[list[Any]]:
    """``value`` if it is ``count`` non-empty lists of values that pass ``kind`` (numbers, say)."""
    if not (
        isinstance(value, list)
        and len(value) == count
        and all(isinstance(row, list) and row and all(kind(item) for item in row) for row in value)
    ):
        raise ZooError(f"{where} must hold {count} non-empty lists, one per evaluation, got {shown(value)}")
    return value


@dataclass
class Checkpoint:
    """A checkpoint read back and checked (:func:`read_checkpoint`), ready to :func:`restore`."""

    folder: Path
    config: dict[str, Any]
    num_timesteps: int
    n_updates: int
    train_seconds: float
    train_cpu_seconds: float
    resumed_at: list[int]
    python_rng: tuple[Any, ...]
    numpy_rng: dict[str, Any]
    algorithm_rng: dict[str, Any] | None
    vec_normalize: VecNormalizeStats | None
    evaluation: EvaluationState
    parameters: dict[str, dict[str, Any]]
    torch_rng: th.Tensor
    best_model: Path | None


def generator_states(venv: VecEnv) -> list[dict[str, Any]]:
    """The state of each env's own generator (gymnasium's ``np_random``), as JSON data."""
    return [generator.bit_generator.state for generator in venv.get_attr("np_random")]


def set_generator_states(venv: VecEnv, states: list[dict[str, Any]]) -> None:
    """Give each env of ``venv`` a generator in the given state. Its pending seed is spent first, by a reset, so that
    its next reset draws from these states rather than seeding again."""
    if len(states) != venv.num_envs:
        raise ZooError(f"the checkpoint has {len(states)} evaluation env generators; the run has {venv.num_envs} envs")
    venv.reset()
    for index, state in enumerate(states):
        generator = np.random.Generator(np.random.PCG64())
        generator.bit_generator.state = state
        venv.set_attr("np_random", generator, indices=[index])


def check_generator_state(state: Any, where: str) -> dict[str, Any]:
    """``state`` if a PCG64 generator (numpy's default, gymnasium's) takes it."""
    try:
        np.random.Generator(np.random.PCG64()).bit_generator.state = state
    except STATE_ERRORS as error:
        raise ZooError(f"{where} is not a generator state ({first_line(error)})") from None
    return dict(state)


# ------------------------------------------------------------------------------------------------- writing


def save_checkpoint(
    run_dir: Path,
    model: BaseAlgorithm,
    *,
    config: dict[str, Any],
    train_seconds: float,
    train_cpu_seconds: float,
    resumed_at: list[int],
    evaluation: EvaluationState,
    best_model: Path | None,
) -> Path:
    """Write ``run_dir/checkpoint/`` for ``model`` now (see the module doc); return the manifest's path.

    Called at an update boundary, by a process that holds ``run_dir`` (:func:`exclusive`).
    """
    folder = make_folder(run_dir / CHECKPOINT_DIR, "the checkpoint folder")
    steps = model.num_timesteps
    # Serialized in memory first: torch reports a failed write to disk (a full disk, a file size limit) as a
    # RuntimeError of its zip writer, which would read as a training failure.
    state = io.BytesIO()
    th.save({"parameters": model.get_parameters(), "torch_rng": th.get_rng_state()}, state)
    files: dict[str, dict[str, Any] | None] = {
        "state": _write(folder / f"state-{steps}.pt", lambda path: path.write_bytes(state.getvalue())),
        "best_model": None,
    }
    if best_model is not None and best_model.is_file():
        copy = folder / f"best_model-{steps}.zip"
        files["best_model"] = _write(copy, lambda path: shutil.copyfile(best_model, path))
    python_version, python_key, python_gauss = random.getstate()
    # numpy's global generator too: SB3 seeds it, and an env or a wrapper may draw from it.
    numpy_state = np.random.get_state(legacy=False)  # noqa: NPY002
    vec_normalize = model.get_vec_normalize_env()
    statistics = None if vec_normalize is None else VecNormalizeStats.from_vec_normalize(vec_normalize).to_json()
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "config": config,
        "num_timesteps": steps,
        "n_updates": model._n_updates,
        "train_seconds": train_seconds,
        "train_cpu_seconds": train_cpu_seconds,
        "resumed_at": resumed_at,
        "generators": {
            "python": [python_version, list(python_key), python_gauss],
            "numpy": {**numpy_state, "state": {**numpy_state["state"], "key": numpy_state["state"]["key"].tolist()}},
            "algorithm": model.generator_state if isinstance(model, EpisodicOnPolicyAlgorithm) else None,
        },
        "vec_normalize": statistics,
        "evaluation": evaluation.to_json(),
        "files": files,
    }
    try:
        text = json.dumps(manifest, allow_nan=False)
    except ValueError as error:  # an evaluation that scored nan or inf
        raise ZooError(f"cannot write a checkpoint at step {steps}: {first_line(error)}") from None
    path = write_atomically(folder / MANIFEST, lambda target: target.write_text(text, encoding="utf-8"), "checkpoint")
    # Committed: the files of the previous checkpoint, and any a cut left half-written, are no longer named.
    named = {MANIFEST, *(record["name"] for record in files.values() if record is not None)}
    for stale in folder.iterdir():
        if stale.name not in named:
            stale.unlink(missing_ok=True)
    return path


def _write(path: Path, write: Callable[[Path], object]) -> dict[str, Any]:
    """``write`` to ``path`` atomically; the file's record in the manifest."""
    write_atomically(path, write, "checkpoint")
    return {"name": path.name, "size": path.stat().st_size, "sha256": sha256_file(path)}


def remove_checkpoint(run_dir: Path) -> None:
    """Remove a finished run's checkpoint: its manifest first, so a cut midway leaves no checkpoint that looks whole."""
    folder = run_dir / CHECKPOINT_DIR
    (folder / MANIFEST).unlink(missing_ok=True)
    shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------------------------------------- reading


def read_checkpoint(run_dir: Path) -> Checkpoint:
    """``run_dir``'s checkpoint, every field and file checked (see the module doc), or one ZooError saying why not."""
    folder = run_dir / CHECKPOINT_DIR
    path = folder / MANIFEST
    source = str(path)
    data = check_format(
        read_json(path, f"{run_dir} has no checkpoint: it finished, or was cut before its first one"),
        source,
        FORMAT,
        FORMAT_VERSION,
    )
    config = data.get("config")
    if not isinstance(config, dict):
        raise ZooError(f"{source}: config must be a mapping, got {shown(config)}")
    steps = integer(data.get("num_timesteps"), f"{source}: num_timesteps", 1, MAX_STEPS)
    updates = integer(data.get("n_updates"), f"{source}: n_updates", 0, MAX_STEPS)
    seconds = [data.get("train_seconds"), data.get("train_cpu_seconds")]
    if not all(is_number(value) and value >= 0 for value in seconds):
        raise ZooError(f"{source}: train_seconds and train_cpu_seconds must be numbers >= 0, got {shown(seconds)}")
    train_seconds, train_cpu_seconds = (float(value) for value in seconds if is_number(value))
    resumed_at = data.get("resumed_at")
    if not (isinstance(resumed_at, list) and all(is_integer(step) and 0 < step <= steps for step in resumed_at)):
        raise ZooError(f"{source}: resumed_at must be a list of step counts up to {steps}, got {shown(resumed_at)}")
    generators = data.get("generators")
    if not isinstance(generators, dict):
        raise ZooError(f"{source}: generators must be a mapping, got {shown(generators)}")
    python_rng = _python_state(generators.get("python"), f"{source}: generators.python")
    numpy_rng = _numpy_state(generators.get("numpy"), f"{source}: generators.numpy")
    algorithm_rng = generators.get("algorithm")
    if algorithm_rng is not None:
        algorithm_rng = check_generator_state(algorithm_rng, f"{source}: generators.algorithm")
    stats = data.get("vec_normalize")
    vec_normalize = None if stats is None else _statistics(stats, source)
    evaluation = EvaluationState.from_json(data.get("evaluation"), source)
    files = data.get("files")
    if not isinstance(files, dict) or "state" not in files:
        raise ZooError(f"{source}: files must be a mapping with state and best_model, got {shown(files)}")
    state_path = _checked_file(folder, files["state"], f"{source}: files.state")
    best = files.get("best_model")
    best_model = None if best is None else _checked_file(folder, best, f"{source}: files.best_model")
    parameters, torch_rng = _read_state(state_path)
    return Checkpoint(
        folder=folder,
        config=config,
        num_timesteps=steps,
        n_updates=updates,
        train_seconds=train_seconds,
        train_cpu_seconds=train_cpu_seconds,
        resumed_at=list(resumed_at),
        python_rng=python_rng,
        numpy_rng=numpy_rng,
        algorithm_rng=algorithm_rng,
        vec_normalize=vec_normalize,
        evaluation=evaluation,
        parameters=parameters,
        torch_rng=torch_rng,
        best_model=best_model,
    )


def _python_state(value: Any, where: str) -> tuple[Any, ...]:
    if not (isinstance(value, list) and len(value) == 3 and isinstance(value[1], list)):
        raise ZooError(f"{where} must be [version, key, gauss], got {shown(value)}")
    state = (value[0], tuple(value[1]), value[2])
    try:
        random.Random().setstate(state)
    except STATE_ERRORS as error:
        raise ZooError(f"{where} is not a state of Python's random ({first_line(error)})") from None
    return state


def _numpy_state(value: Any, where: str) -> dict[str, Any]:
    try:
        np.random.RandomState().set_state(value)
    except STATE_ERRORS as error:
        raise ZooError(f"{where} is not a state of numpy's global generator ({first_line(error)})") from None
    return dict(value)


def _statistics(data: Any, source: str) -> VecNormalizeStats:
    try:
        return VecNormalizeStats.from_json(data)
    except ZooError as error:
        raise ZooError(f"{source}: vec_normalize: {error}") from None


def _checked_file(folder: Path, record: Any, where: str) -> Path:
    """The file a manifest names, if it is a plain name in the checkpoint folder with the recorded size and sha256."""
    entry = file_record(record, where)
    name = entry.get("name")
    if not (isinstance(name, str) and FILE_NAME.match(name)) or name == MANIFEST:
        raise ZooError(f"{where}.name must be a file name in the checkpoint folder, got {shown(name)}")
    path = folder / name
    if not path.is_file():
        raise ZooError(f"{path} is missing: the checkpoint is incomplete")
    return check_digest(path, entry["size"], entry["sha256"], str(folder / MANIFEST))


def _read_state(path: Path) -> tuple[dict[str, dict[str, Any]], th.Tensor]:
    """The state dicts and torch's generator state, through torch's restricted unpickler (no code, no classes)."""
    try:
        state = th.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises UnpicklingError, RuntimeError, EOFError... for a file it cannot read
        if isinstance(error, pickle.UnpicklingError) and "weights_only" in str(error):
            # torch's own message advises loading with weights_only=False, which would run the file's code.
            raise ZooError(f"{path} cannot be read as a checkpoint: it holds objects other than tensors") from None
        raise ZooError(f"{path} cannot be read as a checkpoint ({first_line(error)})") from None
    if not (isinstance(state, dict) and set(state) == {"parameters", "torch_rng"}):
        raise ZooError(f"{path} must hold exactly parameters and torch_rng")
    parameters, torch_rng = state["parameters"], state["torch_rng"]
    if not (isinstance(parameters, dict) and all(isinstance(value, dict) for value in parameters.values())):
        raise ZooError(f"{path}: parameters must map names to state dicts")
    expected = th.get_rng_state()
    if not (
        isinstance(torch_rng, th.Tensor) and (torch_rng.dtype, torch_rng.shape) == (expected.dtype, expected.shape)
    ):
        raise ZooError(f"{path}: torch_rng is not a state of torch's generator")
    return parameters, torch_rng


# ----------------------------------------------------------------------------------------------- restoring


def restore(checkpoint: Checkpoint, model: BaseAlgorithm) -> None:
    """Put the checkpoint's state into ``model``, made from the checkpoint's config and seed, and into its VecNormalize
    env: the parameters and optimizer states, the step and update counts, the statistics and the generators.

    The generators are set last: call it right before ``learn``, after whatever else draws from them.
    """
    source = str(checkpoint.folder / MANIFEST)
    expected = set(model.get_parameters())
    if set(checkpoint.parameters) != expected:
        raise ZooError(
            f"{source}: the checkpoint holds {sorted(checkpoint.parameters)}, the model {sorted(expected)}: "
            "not a checkpoint of this algorithm and configuration"
        )
    try:
        # SB3 types the state dicts as tensors; an optimizer's holds its step counts and settings too.
        model.set_parameters(checkpoint.parameters, exact_match=True, device=model.device)  # type: ignore[arg-type]
    except (RuntimeError, ValueError, KeyError, TypeError) as error:  # shapes or optimizer groups that do not fit
        raise ZooError(f"{source}: the saved parameters do not fit the model ({first_line(error)})") from None
    _check_optimizer_states(model, source)
    _restore_statistics(model.get_vec_normalize_env(), checkpoint.vec_normalize, source)
    # An episodic algorithm has a generator of its own; SB3's A2C and PPO draw from torch's alone.
    if isinstance(model, EpisodicOnPolicyAlgorithm) != (checkpoint.algorithm_rng is not None):
        raise ZooError(f"{source}: the algorithm's generator state does not fit {type(model).__name__}")
    model.num_timesteps = checkpoint.num_timesteps
    model._n_updates = checkpoint.n_updates
    random.setstate(checkpoint.python_rng)
    np.random.set_state(checkpoint.numpy_rng)  # noqa: NPY002
    th.set_rng_state(checkpoint.torch_rng)
    if isinstance(model, EpisodicOnPolicyAlgorithm) and checkpoint.algorithm_rng is not None:
        model.generator_state = checkpoint.algorithm_rng


def _check_optimizer_states(model: BaseAlgorithm, source: str) -> None:
    """Each optimizer's per-parameter tensors (Adam's moments...) have their parameter's shape: torch loads any, and
    a wrong one would fail only at the first step."""
    for name in model.get_parameters():
        optimizer: Any = model
        for part in name.split("."):  # "policy.optimizer", "vf_optimizer": the names SB3 saves them under
            optimizer = getattr(optimizer, part)
        if not isinstance(optimizer, th.optim.Optimizer):
            continue
        for group in optimizer.param_groups:
            for parameter in group["params"]:
                for key, value in optimizer.state.get(parameter, {}).items():
                    if isinstance(value, th.Tensor) and value.dim() > 0 and value.shape != parameter.shape:
                        raise ZooError(
                            f"{source}: {name} state {key} has shape {list(value.shape)}, its parameter "
                            f"{list(parameter.shape)}"
                        )


def _restore_statistics(env: VecNormalize | None, stats: VecNormalizeStats | None, source: str) -> None:
    if (env is None) != (stats is None):
        found = "missing" if stats is None else "given"
        raise ZooError(f"{source}: VecNormalize statistics {found} for this run's env")
    if env is None or stats is None:
        return
    if stats.norm_obs:
        stored: Any = stats.obs_rms
        current: Any = env.obs_rms
        shapes = (
            {key: rms.mean.shape for key, rms in stored.items()} if isinstance(stored, dict) else stored.mean.shape,
            {key: rms.mean.shape for key, rms in current.items()} if isinstance(current, dict) else current.mean.shape,
        )
        if shapes[0] != shapes[1]:
            raise ZooError(f"{source}: VecNormalize statistics of shape {shapes[0]}, the env's {shapes[1]}")
        env.obs_rms = stored
    env.ret_rms = stats.ret_rms


# ---------------------------------------------------------------------------------------- finding, holding


def checkpointed_runs(log_folder: Path, algo: str, env_id: str) -> list[Path]:
    """The run folders ``log_folder/<algo>/<env>_<k>`` (:func:`zoo.runs.claim_run_dir`) that hold a checkpoint,
    newest (highest ``k``) first."""
    found: list[tuple[int, Path]] = []
    prefix = f"{env_id}_"
    # An id with a namespace (ALE/Pong-v5) names a folder inside the algorithm's: its runs are Pong-v5_<k> there.
    name_prefix = Path(prefix).name
    for path in (log_folder / algo).glob(glob.escape(prefix) + "*"):
        index = path.name[len(name_prefix) :]
        if index.isdigit() and (path / CHECKPOINT_DIR / MANIFEST).is_file():
            found.append((int(index), path))
    return [path for _, path in sorted(found, reverse=True)]


def read_checkpoint_of(run_dir: Path, config: dict[str, Any]) -> Checkpoint:
    """``run_dir``'s checkpoint (:func:`read_checkpoint`) if it is of ``config``, seed included; else a ZooError
    naming the first difference."""
    checkpoint = read_checkpoint(run_dir)
    difference = config_difference(checkpoint.config, config)
    if difference:
        raise ZooError(f"cannot resume {run_dir}: its checkpoint is of another configuration ({difference})")
    # A checkpoint is written before a collection, which starts only below the budget: one at or past it was not
    # written by this run.
    if checkpoint.num_timesteps >= config["n_timesteps"]:
        raise ZooError(
            f"cannot resume {run_dir}: its checkpoint is at step {checkpoint.num_timesteps:,}, at or past the run's "
            f"budget of {config['n_timesteps']:,} steps, where no run writes one"
        )
    return checkpoint


def find_resumable(log_folder: Path, algo: str, env_id: str, config: dict[str, Any]) -> Path | None:
    """The newest run folder under ``log_folder`` whose checkpoint is of exactly ``config`` (seed included) and that
    no process holds, or None. A checkpoint that cannot be read is reported in one line and passed over."""
    for run_dir in checkpointed_runs(log_folder, algo, env_id):
        try:
            stored = read_checkpoint(run_dir).config
        except ZooError as error:
            print(f"warning: {error}; {run_dir} cannot be resumed", file=sys.stderr)
            continue
        if not config_difference(stored, config) and not in_use(run_dir):
            return run_dir
    return None


def _lock(folder: Path) -> int | None:
    """A descriptor of ``folder`` holding its lock, or None when another process holds it."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError as error:
        raise ZooError(f"cannot open {folder}: {first_line(error)}") from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    return descriptor


def in_use(folder: Path) -> bool:
    """Whether another process holds ``folder`` (:func:`exclusive`)."""
    descriptor = _lock(folder)
    if descriptor is not None:
        os.close(descriptor)
    return descriptor is None


class FolderInUse(ZooError):
    """The run folder another process holds (:func:`exclusive`)."""


@contextlib.contextmanager
def exclusive(folder: Path) -> Iterator[None]:
    """Hold ``folder`` for this process, or raise a ZooError if another holds it: two processes that resumed one run
    would write its files over each other. The lock is ``flock`` on the folder itself, so it goes with the process
    that holds it: a run that was killed leaves no stale lock behind."""
    descriptor = _lock(folder)
    if descriptor is None:
        raise FolderInUse(f"{folder} is in use by another process (training or resuming the run there)")
    try:
        yield
    finally:
        os.close(descriptor)


# --------------------------------------------------------------------------------------------- progress.csv


def logged_rows(path: Path, steps: int) -> tuple[list[str], list[str]]:
    """The header and the rows of SB3's ``progress.csv`` logged up to ``steps`` (a checkpoint's), as text lines.

    Rows are logged in order, so they are a prefix of the file: those of the steps a cut run trained past its last
    checkpoint, which the resumed run trains again, are left out.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    except (OSError, UnicodeDecodeError):  # none yet, or not one SB3 wrote: the resumed run starts a new one
        return [], []
    if not lines:
        return [], []
    try:
        header = next(csv.reader([lines[0]]), [])
    except csv.Error:  # a field past csv's size limit, say: not a file SB3 wrote
        return [], []
    if STEP_COLUMN not in header:
        return [], []
    column = header.index(STEP_COLUMN)
    kept: list[str] = []
    for line in lines[1:]:
        try:
            values = next(csv.reader([line]), [])
            if int(float(values[column])) > steps:
                break
        except (IndexError, ValueError, OverflowError, csv.Error):  # a torn or foreign row (an infinite step count)
            break
        kept.append(line if line.endswith("\n") else line + "\n")
    return header, kept


def continue_csv(logger: Logger, header: list[str], rows: list[str]) -> None:
    """Write ``rows`` back into the ``progress.csv`` that ``logger`` has just opened (SB3's CSV writer truncates the
    file), so that the resumed run's rows follow them under the same columns."""
    if not header:
        return
    for output in logger.output_formats:
        if isinstance(output, CSVOutputFormat):
            output.keys = list(header)
            output.file.write(",".join(header) + "\n")
            output.file.writelines(rows)
            output.file.flush()
