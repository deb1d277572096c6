"""What a value may be: the bounds a hyperparameter file's entry, a run's ``config.yml`` and a saved agent's
``config.json`` are checked against, before anything is built from them.

Each check is one :class:`~zoo.errors.ZooError` naming where the value came from (``source``) and its key.
"""

from __future__ import annotations

import math
import re
from typing import Any

from sb3_reinforce.common.episodic import MAX_EPISODES
from zoo.algos import NAMED_CLASSES, SCHEDULABLE, parse_schedule
from zoo.checks import integer, is_integer, shown
from zoo.errors import ZooError

# Seeds of numpy and gymnasium are 32-bit and not negative.
MAX_SEED = 2**32 - 1
# What one command may be asked for, far above any real use, so that a typo (--seeds 1000000000, --episodes 10**9)
# is refused at once rather than building a billion tasks or evaluating until killed.
MAX_SEEDS = 1024
MAX_EVAL_EPISODES = 100_000

# gymnasium's id form, [namespace/]name[-v<version>], without the "module:" prefix that makes gym.make import a
# module: an id is only ever looked up in the registry, never imported.
ENV_ID_FORM = re.compile(r"^(?:[\w.-]+/)?[\w.-]+?(?:-v\d+)?$")

# Integer hyperparameters that set how much work a run does, bounded so that a typo or a search-space range up
# to 2**63 is refused when the entry is read rather than starting a run that never ends or fills the memory.
# The bounds are far above any published setting: n_episodes is the library's own bound; 1,024 envs in one
# process is beyond what a DummyVecEnv steps usefully; 10,000 passes over one batch is 100x VPG's 80.
INTEGER_BOUNDS: dict[str, tuple[int, int]] = {
    "n_envs": (1, 1024),
    "n_episodes": (2, MAX_EPISODES),
    "vf_n_epochs": (0, 10_000),
    "n_epochs": (1, 10_000),
    "n_steps": (1, 1_000_000),
    "batch_size": (1, 10_000_000),
    "vf_batch_size": (1, 10_000_000),
}


NULLABLE_BOUNDED = {"vf_batch_size"}  # None: the whole batch

# The policy's networks, bounded before any module is built: a config.json of 100,000 one-unit layers would
# otherwise cost minutes of building modules (even on torch's meta device) before its weights are compared. A
# network of 64 layers, or a layer of 65,536 units (16 GB of float32 weights to the next one), is far beyond any
# published policy.
MAX_LAYERS = 64
MAX_WIDTH = 1 << 16
NETWORKS = ("pi", "vf")


def check_net_arch(net_arch: Any, source: str) -> None:
    """ZooError unless ``net_arch`` is None, a list of layer widths or a mapping of pi and vf to such lists, each
    of at most MAX_LAYERS widths in [1, MAX_WIDTH]; the length is checked before any item is looked at."""
    if net_arch is None:
        return
    where = f"{source}: policy_kwargs.net_arch"
    if isinstance(net_arch, dict) and set(net_arch) <= set(NETWORKS):
        nets = [(f"{where}.{name}", layers) for name, layers in net_arch.items()]
    else:
        nets = [(where, net_arch)]
    for name, layers in nets:
        if not isinstance(layers, list):
            raise ZooError(
                f"{where} must be a list of layer widths or a mapping of pi and vf to such lists, got {shown(net_arch)}"
            )
        if len(layers) > MAX_LAYERS:
            raise ZooError(f"{name} has {len(layers):,} layers; at most {MAX_LAYERS} are allowed")
        for i, width in enumerate(layers):
            if not is_integer(width) or not 1 <= width <= MAX_WIDTH:
                raise ZooError(f"{name}[{i}] must be a layer width in [1, {MAX_WIDTH:,}], got {shown(width)}")


def check_bounded(key: str, value: Any, source: str) -> None:
    """ZooError if ``key`` has an entry in INTEGER_BOUNDS and ``value`` is not an integer within it."""
    if key not in INTEGER_BOUNDS or (value is None and key in NULLABLE_BOUNDED):
        return
    integer(value, f"{source}: {key}", *INTEGER_BOUNDS[key])


def check_value(key: str, value: Any, source: str) -> None:
    """ZooError naming ``source`` and ``key`` if ``value`` is not one a hyperparameter file may hold for ``key``
    (bounded integers, schedules, policy_kwargs' names); a saved agent's config.json is checked the same way."""
    check_bounded(key, value, source)
    if key in SCHEDULABLE and isinstance(value, str):
        schedule = parse_schedule(key, value, source)
        if not (math.isfinite(schedule.start) and schedule.start > 0):
            raise ZooError(f"{source}: {key} must start at a finite number > 0, got {shown(value)}")
    elif key == "policy_kwargs":
        if not isinstance(value, dict) or not all(isinstance(name, str) for name in value):
            raise ZooError(f"{source}: policy_kwargs must be a mapping of names to values, got {shown(value)}")
        check_net_arch(value.get("net_arch"), source)
        for name, item in value.items():
            if name in NAMED_CLASSES and (not isinstance(item, str) or item not in NAMED_CLASSES[name]):
                raise ZooError(
                    f"{source}: policy_kwargs.{name} must be one of {', '.join(NAMED_CLASSES[name])}, got {shown(item)}"
                )
    elif isinstance(value, (dict, list)):
        raise ZooError(f"{source}: {key} must be a scalar, got {shown(value)}")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ZooError(f"{source}: {key} must be finite, got {shown(value)}")


def check_episodes(episodes: int, flag: str = "--episodes") -> int:
    """``episodes`` if it is 1 to :data:`MAX_EVAL_EPISODES`; one ZooError naming ``flag`` otherwise."""
    if not 1 <= episodes <= MAX_EVAL_EPISODES:
        raise ZooError(f"{flag} must be between 1 and {MAX_EVAL_EPISODES:,}, got {episodes:,}")
    return episodes


def check_seed(seed: Any, name: str = "seed") -> int:
    """``seed`` as numpy and gymnasium take it: an integer in [0, 2**32 - 1]; one ZooError naming ``name``."""
    return integer(seed, name, 0, MAX_SEED)


def check_env_kwargs(env_kwargs: Any, source: str) -> dict[str, Any]:
    """``env_kwargs`` must be a mapping of names to data; ``render_mode`` is the zoo's to set, when it renders."""
    if not isinstance(env_kwargs, dict) or not all(isinstance(key, str) for key in env_kwargs):
        raise ZooError(f"{source} must be a mapping of names to values, got {shown(env_kwargs)}")
    if "render_mode" in env_kwargs:
        raise ZooError(f"{source} may not set render_mode: the zoo sets it when it renders")
    return env_kwargs
