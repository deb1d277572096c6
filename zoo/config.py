"""Hyperparameters as data: loading, validating and resolving the zoo's YAML files.

Each ``hyperparams/<algo>.yml`` is keyed by env id, with a ``default:`` fallback, in rl-baselines3-zoo's shape.
An entry holds constructor keyword arguments plus the zoo's own keys (:data:`ZOO_KEYS`). Values are plain YAML
read with ``yaml.safe_load``; the few values that are not numbers or strings go through a small explicit name
table (:data:`NAMED_CLASSES`) or are linear schedules written ``lin_<initial value>``. Nothing is evaluated.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.utils import LinearSchedule
from torch import nn, optim

from sb3_reinforce import Reinforce


class ZooError(Exception):
    """A user error: reported as one line and a non-zero exit, without a traceback."""


ALGOS: dict[str, type[BaseAlgorithm]] = {"reinforce": Reinforce, "a2c": A2C, "ppo": PPO}

# Keys that configure the zoo's harness rather than the algorithm's constructor.
ZOO_KEYS = {
    "n_timesteps": (int, float),
    "n_envs": (int,),
    "policy": (str,),
    "normalize": (bool, dict),
    "env_kwargs": (dict,),
    "variant": (str,),
}

NAMED_CLASSES: dict[str, dict[str, type]] = {
    "activation_fn": {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "leaky_relu": nn.LeakyReLU},
    "optimizer_class": {"adam": optim.Adam, "sgd": optim.SGD, "rmsprop": optim.RMSprop},
}
SCHEDULABLE = {"learning_rate", "clip_range"}
SCHEDULE_PREFIX = "lin_"


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
    allowed = _constructor_keys(ALGOS[algo])
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


def _constructor_keys(algo_class: type[BaseAlgorithm]) -> set[str]:
    parameters = inspect.signature(algo_class.__init__).parameters
    return {
        name
        for name in parameters
        if name not in {"self", "policy", "env", "_init_setup_model", "device", "seed", "verbose", "tensorboard_log"}
    }


def _check_value(key: str, value: Any, source: str) -> None:
    if key in SCHEDULABLE and isinstance(value, str):
        _schedule(key, value, source)
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


def _schedule(key: str, value: str, source: str) -> LinearSchedule:
    try:
        start = float(value.removeprefix(SCHEDULE_PREFIX)) if value.startswith(SCHEDULE_PREFIX) else None
    except ValueError:
        start = None
    if start is None:
        raise ZooError(f"{source}: {key} must be a number or '{SCHEDULE_PREFIX}<initial value>', got {value!r}")
    return LinearSchedule(start, 0.0, 1.0)


def resolve(hyperparams: dict[str, Any]) -> dict[str, Any]:
    """Data -> constructor objects: class names in policy_kwargs, ``lin_`` schedules."""
    kwargs = dict(hyperparams)
    for key in SCHEDULABLE & kwargs.keys():
        if isinstance(kwargs[key], str):
            kwargs[key] = _schedule(key, kwargs[key], "hyperparams")
    if "policy_kwargs" in kwargs:
        policy_kwargs = dict(kwargs["policy_kwargs"])
        for name, table in NAMED_CLASSES.items():
            if name in policy_kwargs:
                policy_kwargs[name] = table[policy_kwargs[name]]
        kwargs["policy_kwargs"] = policy_kwargs
    return kwargs


def to_data(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Constructor objects -> data, the inverse of :func:`resolve` for values it can name."""
    data = dict(kwargs)
    if "policy_kwargs" in data:
        policy_kwargs = dict(data["policy_kwargs"])
        for name, table in NAMED_CLASSES.items():
            if name in policy_kwargs:
                names = {cls: key for key, cls in table.items()}
                if policy_kwargs[name] not in names:
                    raise ZooError(f"policy_kwargs.{name}={policy_kwargs[name]!r} has no name in the zoo's table")
                policy_kwargs[name] = names[policy_kwargs[name]]
        data["policy_kwargs"] = policy_kwargs
    return data
