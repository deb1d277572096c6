"""The env and model factories: a run's VecEnvs and untrained algorithm built from its
:class:`~zoo.config.RunConfig`, and the env a trained agent is evaluated, recorded and packaged on.

Every env the zoo makes comes from :func:`vec_env`: looked up in gymnasium's registry only, seeded, unrendered
unless asked, and one :class:`~zoo.errors.ZooError` when it cannot be made.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from zoo.algos import ALGOS
from zoo.bounds import ENV_ID_FORM, check_env_kwargs
from zoo.checks import shown
from zoo.config import RunConfig
from zoo.errors import ZooError, first_line
from zoo.normalization import VecNormalizeStats


def check_env_id(env_id: Any) -> None:
    """``env_id`` must have gymnasium's registry form and be registered (nothing is imported to find it)."""
    if not isinstance(env_id, str) or len(env_id) > 200 or not ENV_ID_FORM.match(env_id):
        raise ZooError(f"invalid env id {shown(env_id)}: expected [namespace/]name[-vN], without a 'module:' prefix")
    if env_id not in gym.registry:
        close = [name for name in gym.registry if name.lower().startswith(env_id.lower().split("-")[0])][:5]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ZooError(f"unknown env id {shown(env_id)}{hint}")


def vec_env(
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    *,
    n_envs: int = 1,
    seed: int | None = None,
    render_mode: str | None = None,
) -> VecEnv:
    """``env_id`` as a seeded VecEnv (no normalization); an env that cannot be made is one ZooError."""
    check_env_id(env_id)
    kwargs = dict(check_env_kwargs(env_kwargs or {}, "env_kwargs"))
    # Explicitly, None included: SB3's make_vec_env otherwise makes every env with render_mode="rgb_array". Box2D's
    # LunarLander then adds a body to its world for every engine firing, and only render() ever removes them, so
    # an unrendered episode's physics slows down as it goes: a trained lander's steps cost about 3x, for the same
    # trajectories bit for bit (the bodies collide with the ground only; benchmarks/render_mode.py).
    kwargs["render_mode"] = render_mode
    try:
        return make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs=kwargs)
    except Exception as error:  # gymnasium raises NameNotFound, DependencyNotInstalled, TypeError for kwargs...
        raise ZooError(
            f"cannot make env {shown(env_id)} with env_kwargs {env_kwargs or {}}: {first_line(error)}"
        ) from None


def run_vec_env(config: RunConfig, seed: int, n_envs: int | None = None) -> VecEnv:
    """The VecEnv a run trains on (without normalization), seeded."""
    return vec_env(config.env_id, config.env_kwargs, n_envs=n_envs or config.n_envs, seed=seed)


def training_envs(config: RunConfig, seed: int, *, eval_n_envs: int = 1) -> tuple[VecEnv, VecEnv]:
    """The VecEnv a run trains on and the one it is evaluated on (seed + 10,000), both in VecNormalize when the
    run normalizes: training updates the statistics; evaluation reads them (SB3's EvalCallback syncs them before
    each evaluation) and reports raw rewards."""
    env = run_vec_env(config, seed)
    eval_env = run_vec_env(config, seed + 10_000, n_envs=eval_n_envs)
    norm = config.normalize_kwargs()
    if norm is not None:
        env = VecNormalize(env, **{"gamma": config.hyperparams.get("gamma", 0.99), **norm})
        eval_env = VecNormalize(eval_env, training=False, **{**norm, "norm_reward": False})
    return env, eval_env


def make_model(config: RunConfig, env: VecEnv, seed: int, verbose: int = 0) -> BaseAlgorithm:
    """The untrained algorithm of a run, on the CPU."""
    try:
        return ALGOS[config.algo](
            config.policy, env, seed=seed, verbose=verbose, device="cpu", **config.algorithm_kwargs()
        )
    except Exception as error:  # constructors raise ValueError, TypeError, AssertionError, torch's RuntimeError...
        detail = str(error) if isinstance(error, (ValueError, TypeError)) else first_line(error)
        raise ZooError(f"bad hyperparameters for {config.algo} on {config.env_id}: {detail}") from None


def make_eval_env(
    model: BaseAlgorithm,
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    stats: VecNormalizeStats | None = None,
    *,
    n_envs: int = 1,
    seed: int | None = None,
    render_mode: str | None = None,
) -> VecEnv:
    """``env_id`` as a trained agent sees it (frozen VecNormalize statistics when it has them), after checking
    that its spaces are the agent's."""
    env = vec_env(env_id, env_kwargs, n_envs=n_envs, seed=seed, render_mode=render_mode)
    try:
        if stats is not None:
            env = stats.wrap(env)
        if model.observation_space != env.observation_space or model.action_space != env.action_space:
            raise ZooError(
                f"the model does not fit {env_id}: it acts on observations {model.observation_space} and actions "
                f"{model.action_space}, the env has {env.observation_space} and {env.action_space}"
            )
    except BaseException:
        env.close()
        raise
    return env
