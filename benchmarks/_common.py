"""What the benchmark scripts share: one JSON record per run, saved atomically and reused when rerun, and the
solve clock (training time to a target score, evaluations excluded).

The scripts import it as ``_common`` (their own folder is on ``sys.path`` when run as ``python benchmarks/X.py``).
The CPU a result was measured on is ``zoo.machine.cpu_model()``, shared with ``python -m zoo benchmark``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import StopTrainingOnRewardThreshold
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv

from sb3_reinforce import Reinforce
from zoo.timed_eval import TimedEvalCallback

# The constructor's defaults are measured on a DummyVecEnv of this many envs, as throughput.py measures them.
DEFAULTS_N_ENVS = 8


def defaults_model(env_id: str, seed: int, n_envs: int = DEFAULTS_N_ENVS, **hyperparams: Any) -> Reinforce:
    """``Reinforce("MlpPolicy", env)`` with only ``hyperparams`` changed, on a seeded DummyVecEnv of ``n_envs``."""
    return Reinforce("MlpPolicy", make_vec_env(env_id, n_envs, seed=seed), seed=seed, device="cpu", **hyperparams)


def save_record(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` to ``path`` atomically: an interrupted run leaves no result and is redone."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(path.name + ".tmp")
    staging.write_text(json.dumps(record, indent=1))
    staging.replace(path)


def read_record(path: Path) -> dict[str, Any] | None:
    """The record saved at ``path``, or None when there is none; a corrupt or half-written one is reported on
    stderr and counts as none, so the run is done again rather than crashing the table."""
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        print(f"warning: {path} is corrupt ({type(error).__name__}: {error}); it is measured again", file=sys.stderr)
        return None
    if not isinstance(record, dict):
        print(f"warning: {path} is corrupt (not a mapping); it is measured again", file=sys.stderr)
        return None
    return record


def resumable(path: Path, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The record saved at ``path``; when there is none yet (or a corrupt one), ``run()``'s, saved there first."""
    record = read_record(path)
    if record is None:
        record = run()
        save_record(path, record)
    return record


class SolveClock(TimedEvalCallback):
    """Evaluates every ``every`` env steps on ``episodes`` deterministic episodes and stops training once the mean
    reaches ``threshold``. ``eval_seconds`` (from :class:`zoo.timed_eval.TimedEvalCallback`) is the time spent
    evaluating, to leave out of the training time; ``history`` holds every (env steps, mean return)."""

    def __init__(self, eval_env: VecEnv, *, n_envs: int, threshold: float, every: int, episodes: int) -> None:
        super().__init__(
            eval_env,
            callback_on_new_best=StopTrainingOnRewardThreshold(reward_threshold=threshold, verbose=0),
            n_eval_episodes=episodes,
            eval_freq=max(every // n_envs, 1),
            deterministic=True,
            verbose=0,
        )
        self.solved_at: int | None = None
        self.history: list[tuple[int, float]] = []

    def _on_step(self) -> bool:
        continue_training = super()._on_step()
        if self.n_calls % self.eval_freq == 0:
            self.history.append((self.num_timesteps, self.last_mean_reward))
            if not continue_training:
                self.solved_at = self.num_timesteps
        return continue_training
