"""The one episode loop of the zoo: SB3's ``evaluate_policy`` with how each episode ended, and :func:`play`, the one
evaluation of a trained agent on a fresh env from an eval seed, which ``zoo train``'s final score, ``zoo
evaluate``, ``zoo enjoy`` and every eval seed of a card go through."""

from __future__ import annotations

import os
import sys
from typing import Any, NamedTuple

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecEnv

from zoo.errors import ZooError
from zoo.factories import make_eval_env
from zoo.normalization import VecNormalizeStats
from zoo.parsers import DEFAULT_EVAL_SEED


def episodes(n: int) -> str:
    """``n`` episodes in words: "1 episode", "20 episodes"."""
    return f"{n:,} episode{'' if n == 1 else 's'}"


class Episodes(NamedTuple):
    """Every episode of an evaluation, in the order they ended."""

    rewards: list[float]
    lengths: list[int]
    truncated: list[bool]  # ended by the time limit, not by the env itself (a fall, a crash, a landing)


def run_episodes(
    model: BaseAlgorithm, env: VecEnv, n_episodes: int, deterministic: bool = True, render: bool = False
) -> Episodes:
    """``n_episodes`` episodes of ``env`` with SB3's ``evaluate_policy``, and how each ended."""
    truncated: list[bool] = []

    def record_end(local: dict[str, Any], _: dict[str, Any]) -> None:
        # evaluate_policy calls this just before it counts a step, in its order: an episode it counts is one that
        # ends here, and with a Monitor only the step whose info holds "episode" ends one.
        if local["done"] and (not local["is_monitor_wrapped"] or "episode" in local["info"]):
            truncated.append(bool(local["info"].get("TimeLimit.truncated", False)))

    rewards, lengths = evaluate_policy(
        model,
        env,
        n_eval_episodes=n_episodes,
        deterministic=deterministic,
        render=render,
        return_episode_rewards=True,
        warn=False,
        callback=record_end,
    )
    return Episodes([float(r) for r in rewards], [int(n) for n in lengths], truncated)  # type: ignore[union-attr]


def evaluate_episodes(
    model: BaseAlgorithm, env: VecEnv, n_episodes: int, deterministic: bool = True, render: bool = False
) -> tuple[list[float], list[int]]:
    """Every episode's return and length over ``n_episodes`` episodes of ``env``."""
    played = run_episodes(model, env, n_episodes, deterministic, render)
    return played.rewards, played.lengths


def play(
    model: BaseAlgorithm,
    env_id: str,
    env_kwargs: dict[str, Any],
    stats: VecNormalizeStats | None,
    episodes: int,
    *,
    seed: int = DEFAULT_EVAL_SEED,
    deterministic: bool = True,
    render: bool = False,
) -> Episodes:
    """``episodes`` episodes of a fresh ``env_id`` seeded ``seed``, as a trained agent sees it: the one evaluation
    of ``zoo train``'s final score, ``zoo evaluate`` and every eval seed of a card, so that the same model, episodes
    and seed give the same score in each."""
    env = make_eval_env(model, env_id, env_kwargs, stats, seed=seed, render_mode="human" if render else None)
    try:
        return run_episodes(model, env, episodes, deterministic)
    finally:
        env.close()


def check_can_render() -> None:
    """``--render`` opens a window: refuse it in one line where there is no display to open it on (gymnasium's
    classic control would print an XDG error and go on; MuJoCo's GLFW aborts the process)."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise ZooError(
            "--render needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set: leave --render out, or "
            "record a replay video with `python -m zoo push --dry-run DIR`"
        )
