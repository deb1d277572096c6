"""Hyperparameters as data: the zoo's hyperparameter tables read and validated, and :class:`RunConfig`, what one
run is built from.

Each ``hyperparams/<algo>.yml`` is keyed by env id, with a ``default:`` fallback, in rl-baselines3-zoo's shape.
An entry holds constructor keyword arguments plus the zoo's own keys (:data:`ZOO_KEYS`). Values are plain YAML
read with :func:`zoo.yaml_data.safe_yaml` and checked by :mod:`zoo.bounds`; the few values that are not numbers
or strings go through a small explicit name table (:data:`zoo.algos.NAMED_CLASSES`) or are linear schedules
written ``lin_<initial value>``. Nothing is evaluated. An entry with ``variant: NAME`` starts from
``sb3_reinforce.variants.VARIANTS[NAME]``, its own keys on top.

:mod:`zoo.factories` builds a run's envs and algorithm from a :class:`RunConfig`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from sb3_reinforce.variants import VARIANTS
from zoo.algos import ALGOS, REINFORCE_ONLY_SCHEDULES, SCHEDULE_PREFIX, constructor_keys, resolve, unresolve
from zoo.bounds import ENV_ID_FORM, check_bounded, check_env_kwargs, check_seed, check_value
from zoo.checks import is_number, shown
from zoo.errors import ZooError
from zoo.normalization import check_settings
from zoo.yaml_data import read_yaml_file, safe_yaml

# Keys that configure the zoo's harness rather than the algorithm's constructor.
ZOO_KEYS = {
    "n_timesteps": (int, float),
    "n_envs": (int,),
    "policy": (str,),
    "normalize": (bool, dict),
    "env_kwargs": (dict,),
    "variant": (str,),
}


@dataclass(frozen=True)
class RunConfig:
    """What one training run needs: the resolved YAML entry, still as data (as written to ``config.yml``), and the
    run's seed once it has one.

    Validated once, when built (:func:`get_config`, :meth:`from_data`, :meth:`with_overrides`), and frozen after:
    a changed configuration is a new one, from :meth:`with_overrides`, :meth:`without` or :meth:`with_seed`.
    """

    algo: str
    env_id: str
    n_timesteps: int
    n_envs: int = 1
    policy: str = "MlpPolicy"
    normalize: bool | dict[str, Any] = False
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    hyperparams: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None

    def to_data(self) -> dict[str, Any]:
        """The ``config.yml`` mapping of this run (its seed left out when it has none), a copy of its own."""
        data: dict[str, Any] = {"algo": self.algo, "env_id": self.env_id}
        if self.seed is not None:
            data["seed"] = self.seed
        data.update(
            n_timesteps=self.n_timesteps,
            n_envs=self.n_envs,
            policy=self.policy,
            normalize=copy.deepcopy(self.normalize),
            env_kwargs=copy.deepcopy(self.env_kwargs),
            hyperparams=copy.deepcopy(self.hyperparams),
        )
        return data

    def entry(self) -> dict[str, Any]:
        """This configuration as a hyperparameter file's entry, a copy: its zoo keys and hyperparameters in one
        mapping (a variant already expanded), in which a key of ``--hyperparams`` replaces its value."""
        return _entry_of(self.to_data())

    def with_seed(self, seed: int) -> RunConfig:
        """This configuration run with ``seed`` (checked by :func:`zoo.bounds.check_seed`)."""
        return replace(self, seed=check_seed(seed))

    def with_overrides(self, overrides: Mapping[str, Any], source: str = "overrides") -> RunConfig:
        """This configuration with ``overrides`` (``--hyperparams`` syntax: each key replaces the entry's) on top,
        validated; an error names ``source``, where the overrides came from. The seed is kept."""
        if not overrides:
            return self  # validated when it was built: nothing new to check
        config = _build(self.algo, self.env_id, {**self.entry(), **overrides}, source)
        return replace(config, seed=self.seed)

    def without(self, names: Iterable[str]) -> RunConfig:
        """This configuration with the hyperparameters ``names`` taken out, so that the constructor's defaults
        apply; a zoo key among them stays. Nothing is validated again: each value was checked on its own."""
        taken = set(names)
        return replace(self, hyperparams={key: value for key, value in self.hyperparams.items() if key not in taken})

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
        """Rebuild from a ``config.yml`` mapping (as written by :meth:`to_data`, its seed optional), validating it
        again."""
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
        seed = None if data.get("seed") is None else check_seed(data["seed"], f"{source}: seed")
        return replace(_build(algo, env_id, _entry_of(data), source=source), seed=seed)


def _entry_of(data: dict[str, Any]) -> dict[str, Any]:
    """A ``config.yml`` mapping as the entry it was resolved from: its zoo keys and hyperparameters in one mapping.
    Its variant was expanded into the hyperparameters when the run was configured: a ``variant`` key is not read."""
    return {key: data[key] for key in ZOO_KEYS if key in data and key != "variant"} | data["hyperparams"]


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


def config_from_file(path: str | Path, algo: str, env_id: str, overrides: dict[str, Any] | None = None) -> RunConfig:
    """The entry for ``env_id`` of a hyperparameter file of the zoo's shape that is not the zoo's own (rl_zoo3's
    ``--conf-file``): one the user wrote, or the ``best.yml`` of ``zoo tune export``; ``overrides`` on top."""
    table = read_yaml_file(path)
    if not isinstance(table, dict) or not all(isinstance(key, str) for key in table):
        raise ZooError(f"{path} must be a mapping of env ids to entries, as hyperparams/{algo}.yml is")
    if env_id not in table:
        raise ZooError(f"{path} has no entry for {env_id}; its entries: {', '.join(table) or 'none'}")
    if not isinstance(table[env_id], dict):
        raise ZooError(f"{path}[{env_id}] must be a mapping of hyperparameters, got {shown(table[env_id])}")
    return _build(algo, env_id, {**table[env_id], **(overrides or {})}, source=f"{path}[{env_id}]")


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
            return f"{key} {shown(stored.get(key))}, now {shown(expected.get(key))}"
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


def entry_of(
    algo: str,
    env_id: str,
    overrides: dict[str, Any],
    *,
    variant: str | None = None,
    conf_file: str | None = None,
    defaults: bool = False,
) -> RunConfig:
    """The configuration ``zoo train``'s flags name: the env's entry in ``conf_file`` (``--conf-file``) or the zoo's
    file (or its ``--variant``), with ``overrides`` (``--hyperparams``) on top. An env without an entry is refused,
    as rl_zoo3 refuses it, unless ``overrides`` or ``defaults`` (``--defaults``) asks for the file's ``default:``
    entry."""
    if conf_file is not None:
        if variant is not None:
            raise ZooError("--variant names an entry of the zoo's file; with --conf-file, the file's entry is taken")
        return config_from_file(conf_file, algo, env_id, overrides)
    if variant is None and env_id not in known_env_ids(algo) and not (overrides or defaults):
        raise ZooError(
            f"{env_id} has no entry in {algo}.yml: give its hyperparameters with --conf-file FILE or "
            "--hyperparams KEY=VALUE, or train the file's default: entry with --defaults"
        )
    return get_config(algo, env_id, overrides, variant=variant)


def schedule_warning(config: RunConfig, n_timesteps: int) -> str | None:
    """The warning due when ``--n-timesteps`` shortens an entry whose linear schedules were tuned for its own
    budget: they then decay over the new budget, far faster (Acrobot's entry at 5e4 steps ends at -500)."""
    schedules = [
        f"{key} {value}"
        for key, value in config.hyperparams.items()
        if isinstance(value, str) and value.startswith(SCHEDULE_PREFIX)
    ]
    if not schedules or n_timesteps >= config.n_timesteps:
        return None
    return (
        f"warning: the entry's schedules ({', '.join(schedules)}) were tuned for {config.n_timesteps:,} steps; "
        f"over --n-timesteps {n_timesteps:,} they decay {config.n_timesteps / n_timesteps:.3g}x faster"
    )
