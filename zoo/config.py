"""Hyperparameters as data: loading, validating and resolving the zoo's YAML files, and what a run is built from.

Each ``hyperparams/<algo>.yml`` is keyed by env id, with a ``default:`` fallback, in rl-baselines3-zoo's shape.
An entry holds constructor keyword arguments plus the zoo's own keys (:data:`ZOO_KEYS`). Values are plain YAML
read with ``yaml.safe_load``; the few values that are not numbers or strings go through a small explicit name
table (:data:`zoo.algos.NAMED_CLASSES`) or are linear schedules written ``lin_<initial value>``. Nothing is
evaluated. An entry with ``variant: NAME`` starts from ``sb3_reinforce.VARIANTS[NAME]``, its own keys on top.

:func:`run_vec_env` and :func:`make_model` build a run's VecEnv and algorithm from a :class:`RunConfig`.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import gymnasium as gym
import yaml
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from sb3_reinforce.common.episodic import MAX_EPISODES
from sb3_reinforce.variants import VARIANTS
from zoo.algos import (
    ALGOS,
    NAMED_CLASSES,
    REINFORCE_ONLY_SCHEDULES,
    SCHEDULABLE,
    SCHEDULE_PREFIX,
    constructor_keys,
    parse_schedule,
    resolve,
    unresolve,
)
from zoo.checks import clipped, integer, is_integer, is_number, shown
from zoo.errors import ZooError, first_line
from zoo.normalization import check_settings

# Keys that configure the zoo's harness rather than the algorithm's constructor.
ZOO_KEYS = {
    "n_timesteps": (int, float),
    "n_envs": (int,),
    "policy": (str,),
    "normalize": (bool, dict),
    "env_kwargs": (dict,),
    "variant": (str,),
}

# Seeds of numpy and gymnasium are 32-bit and not negative.
MAX_SEED = 2**32 - 1

# gymnasium's id form, [namespace/]name[-v<version>], without the "module:" prefix that makes gym.make import a
# module: an id is only ever looked up in the registry, never imported.
ENV_ID_FORM = re.compile(r"^(?:[\w.-]+/)?[\w.-]+?(?:-v\d+)?$")


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
    def from_data(cls, data: Any, source: str = "config.yml") -> RunConfig:
        """Rebuild from a ``config.yml`` mapping (as written by :meth:`to_data`), validating it again."""
        if not isinstance(data, dict):
            raise ZooError(f"{source} must be a mapping, got {type(data).__name__}")
        missing = [key for key in ("algo", "env_id", "hyperparams") if key not in data]
        if missing:
            raise ZooError(f"{source} is missing {shown(missing[0])}; expected keys algo, env_id, hyperparams")
        algo, env_id, hyperparams = data["algo"], data["env_id"], data["hyperparams"]
        if not isinstance(algo, str) or not isinstance(env_id, str) or not ENV_ID_FORM.match(env_id):
            raise ZooError(f"{source}: algo and env_id must be names, got {shown(algo)} and {shown(env_id)}")
        if not isinstance(hyperparams, dict):
            raise ZooError(f"{source}: hyperparams must be a mapping, got {shown(hyperparams)}")
        entry = {key: data[key] for key in ZOO_KEYS if key in data and key != "variant"}
        return _build(algo, env_id, {**entry, **hyperparams}, source=source)


def load_file(algo: str) -> dict[str, Any]:
    if algo not in ALGOS:
        raise ZooError(f"unknown algorithm {shown(algo)}; known: {', '.join(ALGOS)}")
    text = (resources.files("zoo") / "hyperparams" / f"{algo}.yml").read_text()
    return parse_table(text, f"hyperparams/{algo}.yml")


def parse_table(text: str, source: str) -> dict[str, Any]:
    """A hyperparameter file's text as a mapping of env ids to entries (each entry validated by :func:`get_config`).

    Read with ``yaml.safe_load``: a YAML tag that names Python code, broken syntax or nesting too deep to read is
    one ZooError naming ``source``.
    """
    data = safe_yaml(text, source)
    if not isinstance(data, dict) or not all(isinstance(key, str) for key in data):
        raise ZooError(f"{source} must be a mapping of env ids to entries")
    return data


# Bounds on YAML data given to the zoo (hyperparameters, search spaces, --enqueue, run configs): far above any
# real file (the zoo's largest is a few kB and a few hundred values), low enough that a hostile one costs
# milliseconds. Aliases are what need the count: ``&a [*b, *b, ...]`` nests shared lists whose walk grows
# exponentially, though the text stays short.
MAX_YAML_CHARS = 1_000_000
MAX_YAML_VALUES = 100_000
MAX_YAML_DEPTH = 32


def safe_yaml(text: str, source: str) -> Any:
    """``yaml.safe_load(text)`` within the bounds above, or one ZooError naming ``source``."""
    if len(text) > MAX_YAML_CHARS:
        raise ZooError(f"{source} is {len(text):,} characters; YAML data here is at most {MAX_YAML_CHARS:,}")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ZooError(f"{source} is not valid YAML data: {clipped(str(error))}") from None
    except (RecursionError, ValueError, OverflowError) as error:  # deep nesting; dates or numbers out of range
        raise ZooError(f"{source} cannot be read: {type(error).__name__}: {clipped(str(error))}") from None
    check_yaml_bounds(data, source)
    return data


# What the zoo keeps of YAML data: what JSON holds too (a study's attributes, result records and config.yml are
# written as JSON or plain YAML). ``yaml.safe_load`` also makes dates (``2001-01-01``), binary values and sets;
# they are refused with their key rather than read as text, which would hide a typo in a number.
PLAIN_SCALARS = (str, bool, int, float, type(None))
NOT_PLAIN = {"date": "a date", "datetime": "a date and time", "bytes": "a binary value", "set": "a set"}
PLAIN_VALUES = "only numbers, strings, booleans, null, lists and mappings are allowed"


def check_yaml_bounds(data: Any, source: str) -> None:
    """ZooError if ``data`` nests deeper than MAX_YAML_DEPTH, holds more than MAX_YAML_VALUES values (counting a
    value shared through an alias once per place it appears, as every later walk of it will), or holds a value
    or key that is not plain data (a date, say), named by its place in ``data``."""
    stack: list[tuple[Any, int, str]] = [(data, 0, "")]
    values = 0
    while stack:
        value, depth, where = stack.pop()
        values += 1
        if values > MAX_YAML_VALUES:
            raise ZooError(f"{source} holds more than {MAX_YAML_VALUES:,} values (YAML aliases expand to them)")
        if depth > MAX_YAML_DEPTH:
            raise ZooError(f"{source} nests deeper than {MAX_YAML_DEPTH} levels")
        if isinstance(value, dict):
            for key, item in value.items():
                place = f"{where}.{key}" if where else str(key)
                _check_plain(key, f"{place} (a key)", source)
                stack.append((item, depth + 1, place))
        elif isinstance(value, list):
            stack.extend((item, depth + 1, f"{where}[{i}]") for i, item in enumerate(value))
        else:
            _check_plain(value, where, source)


def _check_plain(value: Any, where: str, source: str) -> None:
    if not isinstance(value, PLAIN_SCALARS):
        kind = NOT_PLAIN.get(type(value).__name__, f"a {type(value).__name__}")
        found = shown(str(value) if isinstance(value, (date, datetime)) else value)
        name = f"{source}: {where}" if where else source
        raise ZooError(f"{name} is {kind} ({found}); {PLAIN_VALUES} (quote text)")


def read_yaml_file(path: str | Path, source: str | None = None) -> Any:
    """The YAML data of a UTF-8 file, through :func:`safe_yaml`; one ZooError naming the file otherwise."""
    source = source or str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ZooError(f"{source} is not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise ZooError(f"cannot read {source}: {error.strerror or error}") from None
    return safe_yaml(text, source)


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
        raise ZooError(
            f"no variant {shown(variant)} for {env_id} in {algo}.yml; available: {', '.join(variants) or 'none'}"
        )
    if key in table:
        entry = table[key]
    elif "default" in table:
        key, entry = "default", table["default"]
    else:
        raise ZooError(f"{env_id} has no entry in {algo}.yml and there is no default; known: {', '.join(table)}")
    if not isinstance(entry, dict):
        raise ZooError(f"{algo}.yml[{key}] must be a mapping of hyperparameters, got {shown(entry)}")
    entry = {**entry, **(overrides or {})}
    return _build(algo, env_id, entry, source=f"{algo}.yml[{key}]")


def _build(algo: str, env_id: str, entry: dict[str, Any], source: str) -> RunConfig:
    if not isinstance(algo, str) or algo not in ALGOS:
        raise ZooError(f"unknown algorithm {shown(algo)}; known: {', '.join(ALGOS)}")
    allowed = set(constructor_keys(ALGOS[algo]))
    if isinstance(entry.get("variant"), str):
        entry = {**_variant(algo, entry["variant"], source), **entry}
    zoo_part: dict[str, Any] = {}
    hyperparams: dict[str, Any] = {}
    for key, value in entry.items():
        if key in ZOO_KEYS:
            if not isinstance(value, ZOO_KEYS[key]) or (isinstance(value, bool) and bool not in ZOO_KEYS[key]):
                names = " or ".join(t.__name__ for t in ZOO_KEYS[key])
                raise ZooError(f"{source}: {key} must be {names}, got {shown(value)}")
            zoo_part[key] = value
        elif key in allowed:
            if isinstance(value, str) and key in REINFORCE_ONLY_SCHEDULES and algo != "reinforce":
                raise ZooError(
                    f"{source}: {key} must be a number for {algo} (a schedule is Reinforce's), got {shown(value)}"
                )
            check_value(key, value, source)
            hyperparams[key] = value
        else:
            raise ZooError(
                f"{source}: unknown key {shown(key)} for {algo}; allowed: {', '.join(sorted(allowed | set(ZOO_KEYS)))}"
            )
    if "n_timesteps" not in zoo_part:
        raise ZooError(f"{source}: n_timesteps is required")
    if not (is_number(zoo_part["n_timesteps"]) and zoo_part["n_timesteps"] < 2**63):
        raise ZooError(f"{source}: n_timesteps must be a finite number, got {shown(zoo_part['n_timesteps'])}")
    n_timesteps = int(zoo_part["n_timesteps"])
    if n_timesteps < 1:
        raise ZooError(f"{source}: n_timesteps must be >= 1")
    check_bounded("n_envs", zoo_part.get("n_envs", 1), source)
    if isinstance(zoo_part.get("normalize"), dict):
        check_settings(zoo_part["normalize"], f"{source}: normalize")
    check_env_kwargs(zoo_part.get("env_kwargs", {}), f"{source}: env_kwargs")
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
        raise ZooError(f"{source}: unknown variant {shown(name)} for {algo}; known: {known}")
    return unresolve(copy.deepcopy(VARIANTS[name]))


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


def check_budget_flag(n_timesteps: int | None) -> None:
    """``--n-timesteps`` as the commands take it: None (the entry's budget) or >= 1 (0 is not "the default")."""
    if n_timesteps is not None and n_timesteps < 1:
        raise ZooError(f"--n-timesteps must be >= 1 (leave it out for the entry's budget), got {n_timesteps}")


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


# ------------------------------------------------------------------------------------------ building a run


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


def yaml_numbers(value: Any) -> Any:
    """``value`` with every string that reads as a number turned into one: YAML 1.1 reads ``1e-3`` and ``3e5`` as
    text, and a user who types them on the command line means numbers."""
    if isinstance(value, dict):
        return {key: yaml_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [yaml_numbers(item) for item in value]
    if isinstance(value, str):
        for number in (int, float):
            try:
                return number(value)
            except ValueError:
                continue
    return value


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``key=value`` pairs; values are YAML, with numbers as :func:`yaml_numbers` reads them."""
    overrides: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ZooError(f"--hyperparams takes key=value pairs, got {shown(item)}")
        overrides[key] = yaml_numbers(safe_yaml(text, f"--hyperparams {key}"))
    return overrides


def config_difference(stored: Any, expected: dict[str, Any]) -> str:
    """The first field where a run's stored configuration (its config.yml, a checkpoint's) differs from the
    configuration asked for, in words."""
    if not isinstance(stored, dict):
        return "no readable config.yml"
    for key in sorted(expected.keys() | stored.keys()):
        if key == "hyperparams" and isinstance(stored.get(key), dict):
            inner = config_difference(stored[key], expected.get(key) or {})
            if inner:
                return inner
        elif not same_value(stored.get(key), expected.get(key)):
            return f"{key} {stored.get(key)!r}, now {expected.get(key)!r}"
    return ""


def same_value(stored: Any, expected: Any) -> bool:
    """Equal values, a schedule spelled two ways included: ``lin_5e-3`` and ``lin_0.005`` are one schedule."""
    if stored == expected:
        return True
    schedules = [value for value in (stored, expected) if isinstance(value, str) and value.startswith(SCHEDULE_PREFIX)]
    if len(schedules) < 2:
        return False
    try:
        return float(stored.removeprefix(SCHEDULE_PREFIX)) == float(expected.removeprefix(SCHEDULE_PREFIX))
    except ValueError:
        return False
