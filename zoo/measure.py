"""One run measured as the zoo benchmark reports it: a learning curve and a final score.

Each run trains with the zoo's hyperparameters, evaluates every ``n_timesteps / CURVE_POINTS`` steps on
``CURVE_EVAL_EPISODES`` deterministic episodes (the learning curve) and at the end on ``FINAL_EVAL_EPISODES``
deterministic episodes (the final score). ``python -m zoo benchmark`` and ``python -m zoo tune`` both measure
through :func:`measured_run`, so their numbers compare.

A benchmark run is a :class:`Task`: :func:`train_to_staging` measures it into a folder of the files it keeps, its
record (result.json) among them, and :func:`run_task` writes that folder in place for a local worker;
:func:`read_record` reads a record back, and :func:`check_task_result` what a remote task sent back. The local
workers (:mod:`zoo.benchmark`) and the Ray backend (:mod:`zoo.ray_backend`) both run tasks through this module, so
neither imports the other.
"""

from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

from zoo.checkpoints import default_interval, exclusive, find_resumable
from zoo.checks import FILE_NAME, is_number, read_bounded, shown
from zoo.config import RunConfig, get_config
from zoo.errors import ZooError, first_line
from zoo.folders import make_folder, move_into_place
from zoo.machine import cpu_model
from zoo.parsers import DEFAULT_EVAL_EPISODES
from zoo.runs import CONFIG_YML, RESULT_FILE, VEC_NORMALIZE_JSON
from zoo.train import TrainResult, train

FINAL_EVAL_EPISODES = DEFAULT_EVAL_EPISODES
CURVE_EVAL_EPISODES = 5
CURVE_POINTS = 20
# The most files a task may send back: train_to_staging keeps four (model, config.yml, statistics, result.json).
MAX_TASK_FILES = 16
# A record is a few kB (its curve has CURVE_POINTS points): a larger result.json is not one.
MAX_RECORD_BYTES = 1 << 20

# A run's record (a benchmark run's result.json): what measured_run measures, with the run's algorithm, env and
# seed. The writer checks it as the readers do, so a record that would be refused is never written.
RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "algo": (str,),
    "env_id": (str,),
    "seed": (int,),
    "n_timesteps": (int,),
    "mean_reward": (int, float),
    "std_reward": (int, float),
    "train_seconds": (int, float),
    "train_cpu_seconds": (int, float),
    "curve_timesteps": (list,),
    "curve_mean_reward": (list,),
}


def check_record(record: Any) -> dict[str, Any]:
    """``record`` if it has every field of :data:`RECORD_FIELDS`, finite, with one curve point per evaluation;
    otherwise a ZooError naming the first field that is wrong."""
    if not isinstance(record, dict):
        raise ZooError("not a mapping")
    for key, types in RECORD_FIELDS.items():
        value = record.get(key)
        if not isinstance(value, types) or isinstance(value, bool):
            raise ZooError(f"{key} is {shown(value)}")
        if isinstance(value, (int, float)) and not is_number(value):
            raise ZooError(f"{key} is {shown(value)}")
    for key in ("train_seconds", "train_cpu_seconds"):
        if record[key] < 0:
            raise ZooError(f"{key} is {shown(record[key])}: a duration is not negative")
    curve = record["curve_mean_reward"]
    points = [*curve, *record["curve_timesteps"]]
    if len(curve) != len(record["curve_timesteps"]) or not all(map(is_number, points)):
        raise ZooError("its learning curve is not one finite number per evaluation")
    return record


def measured_run(
    config: RunConfig,
    seed: int,
    log_folder: str,
    command: str,
    after_eval: BaseCallback | None = None,
    checkpoint_freq: int | None = None,
    resume: Path | None = None,
) -> tuple[TrainResult, dict[str, Any]]:
    """Train ``config`` as the benchmark measures it; ``after_eval`` sees each curve point, ``checkpoint_freq`` and
    ``resume`` checkpoint it and go on from a checkpoint (see :func:`train`).

    :return: the training result and the scores to record (final score, budget, wall-clock, curve, CPU, and the
        steps at which the run was resumed, if it was).
    """
    result = train(
        config,
        seed=seed,
        log_folder=log_folder,
        eval_freq=max(config.n_timesteps // CURVE_POINTS, 1),
        eval_episodes=CURVE_EVAL_EPISODES,
        final_eval_episodes=FINAL_EVAL_EPISODES,
        progress_bar=False,
        verbose=0,
        command=command,
        after_eval=after_eval,
        checkpoint_freq=checkpoint_freq,
        resume=resume,
    )
    return result, {
        "n_timesteps": result.n_timesteps,
        "mean_reward": result.mean_reward,
        "std_reward": result.std_reward,
        "eval_episodes": FINAL_EVAL_EPISODES,
        "train_seconds": result.train_seconds,
        "train_cpu_seconds": result.train_cpu_seconds,
        "curve_timesteps": result.curve_timesteps,
        "curve_mean_reward": result.curve_mean_reward,
        "cpu": cpu_model(),
        "resumed_at": result.resumed_at,
    }


@dataclass(frozen=True)
class Task:
    """One benchmark run, (algorithm, env, seed) at a budget, and the folder it is kept in under ``out``."""

    algo: str
    env_id: str
    seed: int
    n_timesteps: int | None
    out: str
    # --hyperparams, as (key, value) pairs: an ablation of the entry, recorded in config.yml like the rest.
    hyperparams: tuple[tuple[str, Any], ...] = ()

    @property
    def folder(self) -> Path:
        return Path(self.out) / "runs" / self.algo / self.env_id / f"seed{self.seed}"

    @property
    def partial(self) -> Path:
        """Where the run trains, checkpoints included, until it is finished and moved to :attr:`folder`."""
        return self.folder.with_name(f"{self.folder.name}.partial")

    def overrides(self) -> dict[str, Any]:
        budget = {} if self.n_timesteps is None else {"n_timesteps": self.n_timesteps}
        return {**dict(self.hyperparams), **budget}

    def config_data(self) -> dict[str, Any]:
        """The config.yml this run writes: everything that defines it."""
        return get_config(self.algo, self.env_id, self.overrides()).with_seed(self.seed).to_data()


def train_to_staging(task: Task, folder: Path) -> tuple[dict[str, Any], Path]:
    """Train and evaluate one (algo, env, seed) in ``folder``, checkpointed (:mod:`zoo.checkpoints`); return its
    record and the folder of its files.

    A run that was cut off left its checkpoint in ``folder``: the run goes on from there. A checkpoint that cannot
    be read is reported in one line (:func:`zoo.checkpoints.find_resumable`) and the run starts over, ``folder``
    emptied first; one of another configuration is refused by :func:`zoo.benchmark.plan` before any run starts.
    """
    import torch as th

    th.set_num_threads(1)
    config = get_config(task.algo, task.env_id, task.overrides()).with_seed(task.seed)
    command = f"python -m zoo benchmark --envs {task.env_id}" + hyperparams_flag(task.hyperparams)
    resume = find_resumable(folder, task.algo, task.env_id, config.to_data())
    if resume is None:
        for stale in folder.iterdir():
            if stale.is_dir():
                shutil.rmtree(stale)
            else:
                stale.unlink()
    every = default_interval(config.n_timesteps)
    result, scores = measured_run(config, task.seed, str(folder), command, checkpoint_freq=every, resume=resume)
    record = check_record({"algo": task.algo, "env_id": task.env_id, "seed": task.seed, **scores})
    staging = folder / "staging"
    staging.mkdir()
    for name in (result.model_path.name, CONFIG_YML, VEC_NORMALIZE_JSON):
        if (result.run_dir / name).exists():
            shutil.copy2(result.run_dir / name, staging / name)
    (staging / RESULT_FILE).write_text(json.dumps(record, indent=1))
    return record, staging


def run_task(task: Task) -> dict[str, Any]:
    """One run in a local worker process: trained in ``task.partial``, which keeps its checkpoints across a cut, and
    held there by this process alone; its folder is then written atomically and the partial one removed."""
    partial = make_folder(task.partial, "a run's folder")
    with exclusive(partial):
        record, staging = train_to_staging(task, partial)
        # Moved into place only when complete, so an interrupted run is resumed rather than half-counted.
        move_into_place(staging, task.folder)
    shutil.rmtree(partial, ignore_errors=True)
    return record


def hyperparams_flag(hyperparams: tuple[tuple[str, Any], ...]) -> str:
    """`` --hyperparams k=v ...`` as typed, or nothing."""
    if not hyperparams:
        return ""
    # JSON is YAML, so each value reads back as it was parsed; strings such as lin_3e-3 stay bare.
    pairs = (f"{key}={value if isinstance(value, str) else json.dumps(value)}" for key, value in hyperparams)
    return " --hyperparams " + " ".join(shlex.quote(pair) for pair in pairs)


def read_record(folder: Path) -> dict[str, Any]:
    """The result.json of a finished run, or a ZooError saying why it is corrupt."""
    path = folder / RESULT_FILE
    try:
        data = json.loads(read_bounded(path, MAX_RECORD_BYTES).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError, ZooError) as error:
        raise ZooError(f"{path} is corrupt ({first_line(error)})") from None
    try:
        record = check_record(data)
    except ZooError as error:
        raise ZooError(f"{path} is corrupt ({error})") from None
    filed_under = (folder.parent.parent.name, folder.parent.name, folder.name)
    if (record["algo"], record["env_id"], f"seed{record['seed']}") != filed_under:
        raise ZooError(
            f"{path} is corrupt (it records {record['algo']} {record['env_id']} seed {record['seed']}, "
            f"filed under {'/'.join(filed_under)})"
        )
    return record


def check_task_result(task: Task, result: Any) -> tuple[dict[str, Any], dict[str, bytes], str]:
    """What a remote task sent back for ``task`` (:func:`zoo.ray_backend.train_remotely`: the record, the bytes of
    the run's files by name, and the node's name), checked before any of it is written: at most
    :data:`MAX_TASK_FILES` files with plain names, result.json among them, holding a record of ``task`` that
    :func:`read_record` accepts. That record is the one returned, so the table counts what the results folder
    will hold. Otherwise one ZooError: a node running another version of the zoo, say, fails its run rather than
    the benchmark, and nothing is written."""
    where = f"the Ray task of {task.algo} {task.env_id} seed {task.seed}"
    if not (isinstance(result, (tuple, list)) and len(result) == 3):
        raise ZooError(f"{where} sent back {shown(result)}, not (record, files, node)")
    _, files, node = result
    if not (isinstance(files, dict) and 0 < len(files) <= MAX_TASK_FILES):
        raise ZooError(f"{where} sent back files {shown(files)}, not a mapping of 1 to {MAX_TASK_FILES} files")
    for name, data in files.items():
        if not (isinstance(name, str) and FILE_NAME.match(name)) or not isinstance(data, bytes):
            raise ZooError(f"{where} sent back a file {shown(name)} that is not a plain file name with bytes")
    if RESULT_FILE not in files:
        raise ZooError(f"{where} sent back no {RESULT_FILE}")
    try:
        written = check_record(json.loads(files[RESULT_FILE].decode("utf-8")))
    except (UnicodeDecodeError, ValueError, RecursionError, ZooError) as error:  # json's and the record's errors
        raise ZooError(f"{where} sent back a corrupt {RESULT_FILE} ({first_line(error)})") from None
    if (written["algo"], written["env_id"], written["seed"]) != (task.algo, task.env_id, task.seed):
        raise ZooError(f"{where} sent back the record of {written['algo']} {written['env_id']} seed {written['seed']}")
    if not isinstance(node, str):
        raise ZooError(f"{where} sent back a node name {shown(node)}, not a string")
    return written, files, node
