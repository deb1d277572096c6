"""Search spaces as data: ``hyperparams/search_space.yml`` loaded, validated, sampled by a trial, and applied.

The file is keyed by algorithm, then ``default:`` and env ids; its header says what a parameter may be. It is
read with ``yaml.safe_load`` and checked as strictly as the hyperparameter files (:mod:`zoo.config`): every
mistake is one :class:`~zoo.errors.ZooError` naming the file, the entry and the parameter.

A trial's configuration is built in three layers, each validated by :mod:`zoo.config`:

1. the study's base: the env's entry in ``<algo>.yml`` with ``--hyperparams`` and ``--n-timesteps`` on top;
2. the overrides of an enqueued trial (``--enqueue``), in the same syntax as ``--hyperparams``;
3. the sampled parameters. A parameter whose ``when:`` does not hold is taken out of the configuration (the
   constructor's default applies), unless the enqueued overrides set it.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import optuna

from zoo.algos import ALGOS, NAMED_CLASSES, SCHEDULABLE, SCHEDULE_PREFIX, constructor_keys
from zoo.checks import is_real, shown
from zoo.config import RunConfig, get_config
from zoo.errors import ZooError
from zoo.yaml_data import read_yaml_file, safe_yaml

SPACE_FILE = "search_space.yml"
NO_SPACE = "none"  # --space none: no search, only the base configuration and the enqueued trials
DISTRIBUTIONS = ("log_uniform", "uniform", "int", "categorical")
OPTIONS = ("schedule", "when", "log")
SCHEDULES = ("constant", "linear")
POLICY_KWARGS = "policy_kwargs."
SEARCHABLE_ZOO_KEYS = ("n_envs", "normalize")  # the budget is --n-timesteps, the same for every trial
SCHEDULE_SUFFIX = "_schedule"


@dataclass(frozen=True)
class Param:
    """One searched parameter: its distribution, and the conditions under which it is sampled."""

    name: str  # a constructor argument, "policy_kwargs.<name>" or a searchable zoo key
    kind: str  # one of DISTRIBUTIONS
    low: float = 0.0
    high: float = 0.0
    choices: tuple[Any, ...] = ()
    log: bool = False
    schedules: tuple[str, ...] = ()
    when: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    @property
    def labels(self) -> list[Any]:
        """Optuna's categorical choices: scalars as they are, lists and mappings as JSON text."""
        return [label(choice) for choice in self.choices]

    def distribution(self) -> optuna.distributions.BaseDistribution:
        if self.kind == "categorical":
            return optuna.distributions.CategoricalDistribution(self.labels)
        if self.kind == "int":
            return optuna.distributions.IntDistribution(int(self.low), int(self.high), log=self.log)
        return optuna.distributions.FloatDistribution(self.low, self.high, log=self.kind == "log_uniform")

    def applies(self, sampled: dict[str, Any]) -> bool:
        return all(name in sampled and sampled[name] in values for name, values in self.when)

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {self.kind: list(self.choices) if self.kind == "categorical" else [self.low, self.high]}
        if self.log:
            data["log"] = True
        if self.schedules:
            data["schedule"] = list(self.schedules)
        if self.when:
            data["when"] = {name: list(values) for name, values in self.when}
        return data


@dataclass(frozen=True)
class SearchSpace:
    """The parameters searched for one (algorithm, env), in sampling order, and where they were read."""

    params: tuple[Param, ...]
    source: str

    def to_data(self) -> dict[str, Any]:
        return {param.name: param.to_data() for param in self.params}


@dataclass
class Sample:
    """What a trial drew: overrides in ``--hyperparams`` syntax, and the keys whose ``when:`` did not hold."""

    overrides: dict[str, Any] = field(default_factory=dict)
    unset: list[str] = field(default_factory=list)


def label(choice: Any) -> Any:
    return choice if choice is None or isinstance(choice, (bool, int, float, str)) else json.dumps(choice)


# ------------------------------------------------------------------------------------------------- loading


def load_space(algo: str, env_id: str, path: str | None = None) -> SearchSpace:
    """The search space of ``algo`` on ``env_id``: the file's ``default:`` with the env's entry on top.

    ``path`` is a YAML file of the same shape (default: the zoo's ``hyperparams/search_space.yml``), or ``"none"``
    for no search at all.
    """
    if path == NO_SPACE:
        return SearchSpace((), NO_SPACE)
    if path is None:
        name = SPACE_FILE
        data = safe_yaml((resources.files("zoo") / "hyperparams" / SPACE_FILE).read_text(encoding="utf-8"), name)
    else:
        name, data = path, read_yaml_file(path, f"search space {path}")
    if not isinstance(data, dict):
        raise ZooError(f"{name} must be a mapping of algorithms to search spaces")
    if algo not in data:
        raise ZooError(f"{name} has no search space for {algo}; it has: {', '.join(map(str, data)) or 'none'}")
    table = data[algo]
    if not isinstance(table, dict) or not all(isinstance(entry, dict) or entry is None for entry in table.values()):
        raise ZooError(f"{name}: {algo} must be a mapping of default and env ids to mappings of parameters")
    merged: dict[str, Any] = dict(table.get("default") or {})
    for key, spec in (table.get(env_id) or {}).items():
        if spec is None and key not in merged:
            raise ZooError(f"{name}: {algo}.{env_id}.{key}: null removes a parameter, but default has no {key}")
        if spec is None:
            del merged[key]
        else:
            merged[key] = spec
    source = f"{name}[{algo}][{env_id if env_id in table else 'default'}]"
    base = get_config(algo, env_id)
    params: list[Param] = []
    for key, spec in merged.items():
        params.append(_param(base, str(key), spec, params, source))
    return SearchSpace(tuple(params), source)


def _param(base: RunConfig, name: str, spec: Any, earlier: list[Param], source: str) -> Param:
    where, algo = f"{source}: {name}", base.algo
    allowed = [key for key in constructor_keys(ALGOS[algo]) if key != "policy_kwargs"] + list(SEARCHABLE_ZOO_KEYS)
    if name not in allowed and not (name.startswith(POLICY_KWARGS) and name[len(POLICY_KWARGS) :].isidentifier()):
        raise ZooError(
            f"{source}: unknown parameter {shown(name)} for {algo}; allowed: {', '.join(allowed)}, policy_kwargs.<name>"
        )
    if not isinstance(spec, dict):
        raise ZooError(f"{where} must be a mapping with one of {', '.join(DISTRIBUTIONS)}, got {shown(spec)}")
    kinds = [key for key in spec if key in DISTRIBUTIONS]
    unknown = [key for key in spec if key not in DISTRIBUTIONS and key not in OPTIONS]
    if unknown or len(kinds) != 1:
        problem = f"unknown key {shown(unknown[0])}" if unknown else f"{len(kinds)} distributions"
        raise ZooError(
            f"{where}: {problem}; give exactly one of {', '.join(DISTRIBUTIONS)}, optionally {', '.join(OPTIONS)}"
        )
    kind = kinds[0]
    values = spec[kind]
    param: dict[str, Any] = {"name": name, "kind": kind}
    if kind == "categorical":
        if not isinstance(values, list) or not values:
            raise ZooError(f"{where}: categorical needs a non-empty list of choices, got {shown(values)}")
        labels = [label(choice) for choice in values]
        if len(set(map(json.dumps, labels))) != len(labels):
            raise ZooError(f"{where}: categorical choices repeat: {shown(values)}")
        param["choices"] = tuple(values)
    else:
        param["low"], param["high"] = _bounds(where, kind, values)
    if "log" in spec:
        if kind != "int" or not isinstance(spec["log"], bool):
            raise ZooError(f"{where}: log is true or false, for int only (log_uniform is already on a log scale)")
        param["log"] = spec["log"]
        if spec["log"] and param["low"] <= 0:
            raise ZooError(f"{where}: int with log: true needs low >= 1, got {param['low']}")
    if "schedule" in spec:
        param["schedules"] = _schedules(where, name, kind, spec["schedule"])
    if "when" in spec:
        param["when"] = _when(where, spec["when"], earlier)
    result = Param(**param)
    _check_values(base, result, where)
    return result


def _bounds(where: str, kind: str, values: Any) -> tuple[float, float]:
    numbers = isinstance(values, list) and len(values) == 2
    numbers = numbers and all(is_real(v) for v in values)
    if not numbers:
        hint = (
            " (YAML reads 1e-4 as text: write 1.0e-4)"
            if isinstance(values, list) and any(isinstance(v, str) for v in values)
            else ""
        )
        raise ZooError(f"{where}: {kind} needs [low, high] as two numbers, got {shown(values)}{hint}")
    low, high = values
    if kind == "int" and not (isinstance(low, int) and isinstance(high, int)):
        raise ZooError(f"{where}: int needs integer bounds, got {shown(values)}")
    if not low < high:
        raise ZooError(f"{where}: {kind} needs low < high, got {shown(values)}")
    if kind == "log_uniform" and low <= 0:
        raise ZooError(f"{where}: log_uniform needs 0 < low, got {shown(values)}")
    return low, high


def _schedules(where: str, name: str, kind: str, value: Any) -> tuple[str, ...]:
    if name not in SCHEDULABLE or kind not in ("log_uniform", "uniform"):
        raise ZooError(f"{where}: schedule applies to the float parameters {', '.join(sorted(SCHEDULABLE))} only")
    schedules = [value] if isinstance(value, str) else value
    if not isinstance(schedules, list) or not schedules or any(item not in SCHEDULES for item in schedules):
        raise ZooError(f"{where}: schedule must be one or a list of {', '.join(SCHEDULES)}, got {shown(value)}")
    return tuple(dict.fromkeys(schedules))


def _when(where: str, value: Any, earlier: list[Param]) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    if not isinstance(value, dict) or not value:
        raise ZooError(f"{where}: when must be a mapping of earlier parameters to lists of their choices")
    by_name = {param.name: param for param in earlier}
    conditions = []
    for name, choices in value.items():
        if name not in by_name or by_name[name].kind != "categorical":
            known = ", ".join(param.name for param in earlier if param.kind == "categorical") or "none"
            raise ZooError(
                f"{where}: when refers to {shown(name)}, which is not a categorical parameter sampled before it; "
                f"those are: {known}"
            )
        choices = choices if isinstance(choices, list) else [choices]
        outside = [choice for choice in choices if label(choice) not in by_name[name].labels]
        if outside or not choices:
            raise ZooError(
                f"{where}: when {name}: {shown(outside or choices)} must be among {name}'s choices "
                f"{by_name[name].labels}"
            )
        conditions.append((name, tuple(choices)))
    return tuple(conditions)


def _check_values(base: RunConfig, param: Param, where: str) -> None:
    """Each choice and bound goes through zoo.config's checks of a hyperparameter file entry."""
    values = list(param.choices) if param.kind == "categorical" else [param.low, param.high]
    for value in values:
        value = f"{SCHEDULE_PREFIX}{value}" if param.schedules == ("linear",) else value
        try:
            apply(base, Sample({param.name: value}))
        except ZooError as error:
            raise ZooError(f"{where}: {shown(value)} is not a valid value: {str(error).split(': ', 1)[-1]}") from None


# ------------------------------------------------------------------------------------- sampling and applying


def suggest(trial: optuna.Trial, space: SearchSpace) -> Sample:
    """Draw the trial's parameters, in order, skipping those whose ``when:`` does not hold."""
    sample = Sample()
    drawn: dict[str, Any] = {}
    for param in space.params:
        if not param.applies(drawn):
            sample.unset.append(param.name)
            continue
        if param.kind == "categorical":
            index = param.labels.index(trial.suggest_categorical(param.name, param.labels))
            value: Any = param.choices[index]
        elif param.kind == "int":
            value = trial.suggest_int(param.name, int(param.low), int(param.high), log=param.log)
        else:
            value = trial.suggest_float(param.name, param.low, param.high, log=param.kind == "log_uniform")
        drawn[param.name] = value
        schedule = param.schedules[0] if len(param.schedules) == 1 else None
        if len(param.schedules) > 1:
            schedule = str(trial.suggest_categorical(param.name + SCHEDULE_SUFFIX, list(param.schedules)))
        sample.overrides[param.name] = f"{SCHEDULE_PREFIX}{value!r}" if schedule == "linear" else value
    return sample


def apply(config: RunConfig, sample: Sample, keep: set[str] | None = None) -> RunConfig:
    """``config`` with the sample on top (``policy_kwargs.<name>`` merged into policy_kwargs), validated once.

    Unset keys are taken out, except those in ``keep`` (what an enqueued trial asked for explicitly).
    """
    unset = [name for name in sample.unset if name not in (keep or set())]
    policy_kwargs = {
        key: value
        for key, value in config.entry().get("policy_kwargs", {}).items()
        if f"{POLICY_KWARGS}{key}" not in unset
    }
    overrides: dict[str, Any] = {}
    for name, value in sample.overrides.items():
        if name.startswith(POLICY_KWARGS):
            policy_kwargs[name[len(POLICY_KWARGS) :]] = value
        else:
            overrides[name] = value
    names = [name for name in unset if not name.startswith(POLICY_KWARGS)]
    if policy_kwargs:
        overrides["policy_kwargs"] = policy_kwargs
    else:  # nothing left in it: the key goes too, as in an entry that never set it
        names.append("policy_kwargs")
    return config.without(names).with_overrides(overrides)


# ------------------------------------------------------------------------------------------------ enqueueing


def fixed_params(space: SearchSpace, config: RunConfig) -> dict[str, Any]:
    """The parameters that make a trial of ``space`` run exactly ``config``, for ``study.enqueue_trial``.

    A parameter that ``config`` does not set takes the constructor's (or the policy's) default. A value outside
    the space is a ZooError: Optuna cannot record it, and the sampler would learn from a point it cannot draw.
    """
    entry = config.entry()
    params: dict[str, Any] = {}
    drawn: dict[str, Any] = {}
    for param in space.params:
        if not param.applies(drawn):
            continue
        value = _current_value(config, entry, param.name)
        schedule = "constant"
        if isinstance(value, str) and value.startswith(SCHEDULE_PREFIX) and param.schedules:
            value, schedule = float(value[len(SCHEDULE_PREFIX) :]), "linear"
        where = f"--enqueue: {param.name}={shown(value)}"
        if param.schedules and schedule not in param.schedules:
            raise ZooError(f"{where} is a {schedule} schedule; the search space allows {', '.join(param.schedules)}")
        if param.kind == "categorical":
            if label(value) not in param.labels:
                raise ZooError(f"{where} is not one of its choices {shown(param.choices)} in the search space")
            params[param.name] = label(value)
            value = param.choices[param.labels.index(label(value))]
        else:
            inside = is_real(value)
            inside = inside and param.low <= value <= param.high and (param.kind != "int" or float(value).is_integer())
            if not inside:
                raise ZooError(f"{where} is outside the search space ({param.kind} [{param.low}, {param.high}])")
            params[param.name] = int(value) if param.kind == "int" else float(value)
        drawn[param.name] = value
        if len(param.schedules) > 1:
            params[param.name + SCHEDULE_SUFFIX] = schedule
    return params


def _current_value(config: RunConfig, entry: dict[str, Any], name: str) -> Any:
    if name in entry:
        return entry[name]
    if name.startswith(POLICY_KWARGS):
        key = name[len(POLICY_KWARGS) :]
        if key in config.hyperparams.get("policy_kwargs", {}):
            return config.hyperparams["policy_kwargs"][key]
        policy_class = ALGOS[config.algo].policy_aliases[config.policy]
        default = inspect.signature(policy_class).parameters.get(key)
        if default is None or default.default is inspect.Parameter.empty:
            raise ZooError(f"--enqueue: {name} is not set and the policy has no default for it; give it explicitly")
        names = {cls: named for named, cls in NAMED_CLASSES.get(key, {}).items()}
        return names.get(default.default, default.default)
    return inspect.signature(ALGOS[config.algo].__init__).parameters[name].default
