"""The zoo's algorithms by name, and their constructor arguments as data, both ways.

Data is what YAML and JSON hold: numbers, strings, lists and mappings. Two kinds of constructor argument are not
data and are written as names instead:

- classes in ``policy_kwargs`` (``activation_fn``, ``optimizer_class``): a key of :data:`NAMED_CLASSES`;
- linear schedules of a :data:`SCHEDULABLE` argument: ``lin_<initial value>``, exactly
  ``LinearSchedule(start, 0, 1)``.

:func:`resolve` turns data into constructor objects; :func:`unresolve` names them again, and
:func:`hyperparams_from_model` reads them back from a built model. Nothing here knows about files.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import numpy as np
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.utils import ConstantSchedule, FloatSchedule, LinearSchedule
from torch import nn, optim

from sb3_reinforce import Reinforce
from zoo.checks import shown
from zoo.errors import ZooError

ALGOS: dict[str, type[BaseAlgorithm]] = {"reinforce": Reinforce, "a2c": A2C, "ppo": PPO}

# Constructor arguments that are not hyperparameters: neither a YAML entry nor a saved agent may set them.
NOT_HYPERPARAMS = {"self", "policy", "env", "_init_setup_model", "device", "seed", "verbose", "tensorboard_log"}
# Constructor arguments that only shape training-time containers: dropped when they cannot be written as data,
# since inference never uses them (SB3 replaces None by its default buffer class in ``_setup_model``).
TRAINING_ONLY = {"rollout_buffer_class", "rollout_buffer_kwargs", "replay_buffer_class", "replay_buffer_kwargs"}

NAMED_CLASSES: dict[str, dict[str, type]] = {
    "activation_fn": {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "leaky_relu": nn.LeakyReLU},
    "optimizer_class": {"adam": optim.Adam, "sgd": optim.SGD, "rmsprop": optim.RMSprop},
}
SCHEDULABLE = {"learning_rate", "vf_learning_rate", "clip_range", "ent_coef"}
# SB3's A2C and PPO multiply their loss by ent_coef as a number; only Reinforce also takes a schedule of it.
REINFORCE_ONLY_SCHEDULES = {"ent_coef"}
SCHEDULE_PREFIX = "lin_"


def constructor_keys(algo_class: type[BaseAlgorithm]) -> list[str]:
    """The hyperparameters ``algo_class`` takes, in the order of its signature."""
    parameters = inspect.signature(algo_class.__init__).parameters
    variadic = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    return [name for name, p in parameters.items() if name not in NOT_HYPERPARAMS and p.kind not in variadic]


def algo_name(model: BaseAlgorithm) -> str:
    for name, cls in ALGOS.items():
        if type(model) is cls:
            return name
    for name, cls in ALGOS.items():
        if isinstance(model, cls):
            return name
    raise ZooError(f"{type(model).__name__} is not one of the zoo's algorithms ({', '.join(ALGOS)})")


def policy_alias(model: BaseAlgorithm) -> str:
    for alias, cls in model.policy_aliases.items():
        if type(model.policy) is cls:
            return alias
    raise ZooError(
        f"policy class {type(model.policy).__name__} has no alias in {type(model).__name__}.policy_aliases "
        f"({', '.join(model.policy_aliases)}); it cannot be rebuilt without pickle"
    )


# --------------------------------------------------------------------------------------------- data -> objects


def parse_schedule(key: str, value: str, source: str) -> LinearSchedule:
    """``lin_<initial value>`` as a LinearSchedule to 0; ZooError naming ``source`` and ``key`` otherwise."""
    try:
        start = float(value.removeprefix(SCHEDULE_PREFIX)) if value.startswith(SCHEDULE_PREFIX) else None
    except ValueError:
        start = None
    if start is None:
        raise ZooError(f"{source}: {key} must be a number or '{SCHEDULE_PREFIX}<initial value>', got {shown(value)}")
    return LinearSchedule(start, 0.0, 1.0)


def resolve(hyperparams: dict[str, Any]) -> dict[str, Any]:
    """Data -> constructor objects: class names in policy_kwargs, ``lin_`` schedules."""
    kwargs = dict(hyperparams)
    for key in SCHEDULABLE & kwargs.keys():
        if isinstance(kwargs[key], str):
            kwargs[key] = parse_schedule(key, kwargs[key], "hyperparams")
    if "policy_kwargs" in kwargs:
        policy_kwargs = dict(kwargs["policy_kwargs"])
        for name, table in NAMED_CLASSES.items():
            if name in policy_kwargs:
                policy_kwargs[name] = table[policy_kwargs[name]]
        kwargs["policy_kwargs"] = policy_kwargs
    return kwargs


# --------------------------------------------------------------------------------------------- objects -> data


def unresolve(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Constructor objects -> data, the inverse of :func:`resolve` for the classes it can name."""
    data = dict(kwargs)
    if "policy_kwargs" in data:
        policy_kwargs = dict(data["policy_kwargs"])
        for name, table in NAMED_CLASSES.items():
            if name in policy_kwargs:
                names = {cls: key for key, cls in table.items()}
                if policy_kwargs[name] not in names:
                    raise ZooError(f"policy_kwargs.{name}={shown(policy_kwargs[name])} has no name in the zoo's table")
                policy_kwargs[name] = names[policy_kwargs[name]]
        data["policy_kwargs"] = policy_kwargs
    return data


def plain(name: str, value: Any) -> Any:
    """A constructor argument as JSON data, or ZooError if it has no data form."""
    if isinstance(value, FloatSchedule):
        value = value.value_schedule
    if isinstance(value, ConstantSchedule):
        value = value.val
    if isinstance(value, LinearSchedule) and value.end == 0.0 and value.end_fraction == 1.0:
        # The zoo's "lin_<start>" is exactly LinearSchedule(start, 0, 1).
        return f"{SCHEDULE_PREFIX}{float(value.start)!r}"
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(name, item) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: plain(f"{name}.{key}", item) for key, item in value.items()}
    raise ZooError(f"{name}={shown(value)} cannot be stored as data")


def hyperparams_from_model(model: BaseAlgorithm, fallback: dict[str, Any] | None = None) -> dict[str, Any]:
    """The constructor arguments the model was built with, as data (``policy_kwargs`` included).

    Read back from the model's attributes, which SB3 stores under the argument's name (or with a leading
    underscore), so they describe the weights even when no config is at hand. A value with no data form falls
    back to ``fallback[name]`` (the run's config.yml hyperparams) when present.
    """
    fallback = fallback or {}
    data: dict[str, Any] = {}
    for name in constructor_keys(type(model)):
        value = getattr(model, name, getattr(model, f"_{name}", inspect.Parameter.empty))
        if value is inspect.Parameter.empty:
            if name in fallback:
                data[name] = fallback[name]
            continue
        if name == "policy_kwargs":
            value = unresolve({"policy_kwargs": value or {}})["policy_kwargs"]
        try:
            data[name] = plain(name, value)
        except ZooError:
            if name in fallback:
                data[name] = fallback[name]
            elif name not in TRAINING_ONLY:
                raise
    json.dumps(data, allow_nan=False)  # a last guard: config.json must be strict JSON
    return data
