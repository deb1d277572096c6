"""One run measured as the zoo benchmark reports it: a learning curve and a final score.

Each run trains with the zoo's hyperparameters, evaluates every ``n_timesteps / CURVE_POINTS`` steps on
``CURVE_EVAL_EPISODES`` deterministic episodes (the learning curve) and at the end on ``FINAL_EVAL_EPISODES``
deterministic episodes (the final score). ``python -m zoo benchmark`` and ``python -m zoo tune`` both measure
through :func:`measured_run`, so their numbers compare.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from zoo.checks import is_number, shown
from zoo.config import RunConfig
from zoo.errors import ZooError
from zoo.machine import cpu_model
from zoo.runs import EVALUATIONS_FILE
from zoo.train import TrainResult, train

FINAL_EVAL_EPISODES = 20
CURVE_EVAL_EPISODES = 5
CURVE_POINTS = 20

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
    curve = np.load(result.run_dir / EVALUATIONS_FILE)
    return result, {
        "n_timesteps": result.n_timesteps,
        "mean_reward": result.mean_reward,
        "std_reward": result.std_reward,
        "eval_episodes": FINAL_EVAL_EPISODES,
        "train_seconds": result.train_seconds,
        "train_cpu_seconds": result.train_cpu_seconds,
        "curve_timesteps": curve["timesteps"].tolist(),
        "curve_mean_reward": curve["results"].mean(axis=1).tolist(),
        "cpu": cpu_model(),
        "resumed_at": result.resumed_at,
    }
