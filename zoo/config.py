"""Hyperparameters as data: loading, validating and resolving the zoo's YAML files, and what a run is built from.

Each ``hyperparams/<algo>.yml`` is keyed by env id, with a ``default:`` fallback, in rl-baselines3-zoo's shape.
An entry holds constructor keyword arguments plus the zoo's own keys (:data:`ZOO_KEYS`). Values are plain YAML
read with ``yaml.safe_load``; the few values that are not numbers or strings go through a small explicit name
table (:data:`zoo.algos.NAMED_CLASSES`) or are linear schedules written ``lin_<initial value>``. Nothing is
evaluated. An entry with ``variant: NAME`` starts from ``sb3_reinforce.VARIANTS[NAME]``, its own keys on top.

:func:`make_env` and :func:`make_model` build a run's VecEnv and algorithm from a :class:`RunConfig`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import gymnasium as gym
import yaml
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv

from sb3_reinforce import VARIANTS
from zoo.algos import ALGOS, NAMED_CLASSES, SCHEDULABLE, constructor_keys, parse_schedule, resolve, unresolve
from zoo.errors import ZooError, first_line

# Keys that configure the zoo's harness rather than the algorithm's constructor.
ZOO_KEYS = {
    "n_timesteps": (int, float),
    "n_envs": (int,),
    "policy": (str,),
    "normalize": (bool, dict),
    "env_kwargs": (dict,),
    "variant": (str,),
}


@dataclass
class RunConfig:
    """What one training run needs: the resolved YAML entry, still as data (as written to ``config.yml``)."""

    algo: str
    env_id: str
    n_timesteps: int
    n_envs: int = 1
    policy: str = "MlpPolicy"
    normalize: bool | dict[str, Any] = False
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    hyperparams: dict[str, Any] = field(default_factory=dict)

    def to_data(self, seed: int | None = None) -> dict[str, Any]:
        """The ``config.yml`` mapping of a run with this seed (the seed left out when None)."""
        data: dict[str, Any] = {"algo": self.algo, "env_id": self.env_id}
        if seed is not None:
            data["seed"] = seed
        data.update(
            n_timesteps=self.n_timesteps,
            n_envs=self.n_envs,
            policy=self.policy,
            normalize=self.normalize,
            env_kwargs=self.env_kwargs,
            hyperparams=self.hyperparams,
        )
        return data

    def algorithm_kwargs(self) -> dict[str, Any]:
        """Constructor keyword arguments with names and schedules turned into objects."""
        return resolve(self.hyperparams)

    def normalize_kwargs(self) -> dict[str, Any] | None:
        """VecNormalize's keyword arguments, or None when the run does not normalize."""
        if self.normalize is False:
            return None
        return {} if self.normalize is True else dict(self.normalize)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> RunConfig:
        """Rebuild from a ``config.yml`` mapping (as written by :meth:`to_data`), validating it again."""
        try:
            algo, env_id, hyperparams = data["algo"], data["env_id"], dict(data["hyperparams"])
        except (KeyError, TypeError) as error:
            raise ZooError(f"config is missing {error}; expected keys algo, env_id, hyperparams") from None
        entry = {key: data[key] for key in ZOO_KEYS if key in data and key != "variant"}
        return _build(algo, env_id, {**entry, **hyperparams}, source="config.yml")


def load_file(algo: str) -> dict[str, Any]:
    if algo not in ALGOS:
        raise ZooError(f"unknown algorithm {algo!r}; known: {', '.join(ALGOS)}")
    text = (resources.files("zoo") / "hyperparams" / f"{algo}.yml").read_text()
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ZooError(f"hyperparams/{algo}.yml must be a mapping of env ids to entries")
    return data


def known_env_ids(algo: str = "reinforce") -> list[str]:
    """The env ids with an entry of their own (variants and ``default`` excluded)."""
    return [key for key in load_file(algo) if key != "default" and "/" not in key]


def get_config(
    algo: str, env_id: str, overrides: dict[str, Any] | None = None, variant: str | None = None
) -> RunConfig:
    """The entry for ``env_id`` (or ``env_id/variant``), falling back to ``default:``, with ``overrides`` on top."""
    table = load_file(algo)
    key = f"{env_id}/{variant}" if variant else env_id
    if variant and key not in table:
        variants = sorted(k.split("/", 1)[1] for k in table if k.startswith(f"{env_id}/"))
        raise ZooError(f"no variant {variant!r} for {env_id} in {algo}.yml; available: {', '.join(variants) or 'none'}")
    if key in table:
        entry = dict(table[key])
    elif "default" in table:
        entry = dict(table["default"])
    else:
        raise ZooError(f"{env_id} has no entry in {algo}.yml and there is no default; known: {', '.join(table)}")
    entry.update(overrides or {})
    return _build(algo, env_id, entry, source=f"{algo}.yml[{key}]")


def _build(algo: str, env_id: str, entry: dict[str, Any], source: str) -> RunConfig:
    if algo not in ALGOS:
        raise ZooError(f"unknown algorithm {algo!r}; known: {', '.join(ALGOS)}")
    allowed = set(constructor_keys(ALGOS[algo]))
    if isinstance(entry.get("variant"), str):
        entry = {**_variant(algo, entry["variant"], source), **entry}
    zoo_part: dict[str, Any] = {}
    hyperparams: dict[str, Any] = {}
    for key, value in entry.items():
        if key in ZOO_KEYS:
            if not isinstance(value, ZOO_KEYS[key]) or (isinstance(value, bool) and bool not in ZOO_KEYS[key]):
                names = " or ".join(t.__name__ for t in ZOO_KEYS[key])
                raise ZooError(f"{source}: {key} must be {names}, got {value!r}")
            zoo_part[key] = value
        elif key in allowed:
            _check_value(key, value, source)
            hyperparams[key] = value
        else:
            raise ZooError(
                f"{source}: unknown key {key!r} for {algo}; allowed: {', '.join(sorted(allowed | set(ZOO_KEYS)))}"
            )
    if "n_timesteps" not in zoo_part:
        raise ZooError(f"{source}: n_timesteps is required")
    n_timesteps = int(zoo_part["n_timesteps"])
    if n_timesteps < 1 or zoo_part.get("n_envs", 1) < 1:
        raise ZooError(f"{source}: n_timesteps and n_envs must be >= 1")
    return RunConfig(
        algo=algo,
        env_id=env_id,
        n_timesteps=n_timesteps,
        n_envs=zoo_part.get("n_envs", 1),
        policy=zoo_part.get("policy", "MlpPolicy"),
        normalize=zoo_part.get("normalize", False),
        env_kwargs=zoo_part.get("env_kwargs", {}),
        hyperparams=hyperparams,
    )


def _variant(algo: str, name: str, source: str) -> dict[str, Any]:
    """``sb3_reinforce.VARIANTS[name]`` as YAML data (class names instead of classes)."""
    if algo != "reinforce" or name not in VARIANTS:
        known = ", ".join(VARIANTS) if algo == "reinforce" else "none (variants are Reinforce's)"
        raise ZooError(f"{source}: unknown variant {name!r} for {algo}; known: {known}")
    return unresolve(copy.deepcopy(VARIANTS[name]))


def _check_value(key: str, value: Any, source: str) -> None:
    if key in SCHEDULABLE and isinstance(value, str):
        parse_schedule(key, value, source)
    elif key == "policy_kwargs":
        if not isinstance(value, dict):
            raise ZooError(f"{source}: policy_kwargs must be a mapping, got {value!r}")
        for name, item in value.items():
            if name in NAMED_CLASSES and item not in NAMED_CLASSES[name]:
                raise ZooError(
                    f"{source}: policy_kwargs.{name} must be one of {', '.join(NAMED_CLASSES[name])}, got {item!r}"
                )
    elif isinstance(value, (dict, list)):
        raise ZooError(f"{source}: {key} must be a scalar, got {value!r}")


# ------------------------------------------------------------------------------------------ building a run


def check_env_id(env_id: str) -> None:
    if env_id not in gym.registry:
        close = [name for name in gym.registry if name.lower().startswith(env_id.lower().split("-")[0])][:5]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ZooError(f"unknown env id {env_id!r}{hint}")


def vec_env(
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    *,
    n_envs: int = 1,
    seed: int | None = None,
    render_mode: str | None = None,
) -> VecEnv:
    """``env_id`` as a seeded VecEnv (no normalization); an env that cannot be made is one ZooError."""
    kwargs = dict(env_kwargs or {})
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    try:
        return make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs=kwargs)
    except Exception as error:  # gymnasium raises NameNotFound, DependencyNotInstalled, TypeError for kwargs...
        check_env_id(env_id)
        raise ZooError(f"cannot make env {env_id!r}: {first_line(error)}") from None


def make_env(config: RunConfig, seed: int, n_envs: int | None = None) -> VecEnv:
    """The VecEnv a run trains on (without normalization), seeded."""
    return vec_env(config.env_id, config.env_kwargs, n_envs=n_envs or config.n_envs, seed=seed)


def make_model(config: RunConfig, env: VecEnv, seed: int, verbose: int = 0) -> BaseAlgorithm:
    """The untrained algorithm of a run, on the CPU."""
    try:
        return ALGOS[config.algo](
            config.policy, env, seed=seed, verbose=verbose, device="cpu", **config.algorithm_kwargs()
        )
    except (ValueError, TypeError) as error:
        raise ZooError(f"bad hyperparameters for {config.algo} on {config.env_id}: {error}") from None
