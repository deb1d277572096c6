"""``python -m zoo.rl_zoo3 COMMAND ...``: the RL Zoo's own commands with ``--algo reinforce``.

rl_zoo3 has no plugin mechanism: its ``ALGOS`` dict is the registry and ``HYPERPARAMS_SAMPLER`` the samplers of
``-optimize``. :func:`register` adds Reinforce to both, then COMMAND (``train``, ``enjoy`` or ``record_video``)
runs as rl_zoo3 wrote it, so every rl_zoo3 flag works::

    python -m zoo.rl_zoo3 train --algo reinforce --env CartPole-v1
    python -m zoo.rl_zoo3 train --algo reinforce --env CartPole-v1 -optimize --n-trials 20
    python -m zoo.rl_zoo3 enjoy --algo reinforce --env CartPole-v1 -f logs/ --no-render

- Hyperparameters: unless ``--conf-file`` names another, rl_zoo3 reads the zoo's ``hyperparams/reinforce.yml``
  through :data:`hyperparams` (this module's attribute, rl_zoo3's "python package" form). ``lin_`` schedules of
  ``learning_rate`` are left to rl_zoo3; the others (``ent_coef``, ``vf_learning_rate``), which rl_zoo3 does not
  convert, and the class names of ``policy_kwargs`` are turned into objects here.
- ``-optimize`` samples the zoo's ``hyperparams/search_space.yml`` for the env, the space ``zoo tune`` searches.
  ``n_envs`` and ``normalize`` stay the entry's: rl_zoo3 builds its envs once for every trial.
- A trial whose loss or gradient turns non-finite raises FloatingPointError in Reinforce; rl_zoo3 prunes only
  ValueError and AssertionError, and anything else would end the whole study, so such a trial is pruned here.

rl_zoo3's ``push_to_hub`` and ``load_from_hub`` are not offered: use ``python -m zoo push`` and ``zoo enjoy``.
rl_zoo3's runs keep its own layout, VecNormalize statistics as SB3's ``vecnormalize.pkl`` in
``logs/reinforce/<env>_<k>/<env>/``, which its ``enjoy`` reads; ``zoo evaluate`` and ``zoo push`` read the run
folders of ``zoo train`` (:mod:`zoo.runs`), so play an rl_zoo3 agent that normalizes with rl_zoo3's ``enjoy``.
"""

from __future__ import annotations

import functools
import inspect
import runpy
import sys
from collections.abc import Callable
from typing import Any

from sb3_reinforce import Reinforce
from zoo.algos import NAMED_CLASSES, SCHEDULABLE, parse_schedule, resolve
from zoo.config import ZOO_KEYS, get_config, known_env_ids
from zoo.errors import ZooError
from zoo.tune.space import SearchSpace, apply, load_space, suggest

ALGO = "reinforce"
# rl_zoo3's modules that are commands (run as their own ``__main__``, as ``python -m rl_zoo3.train`` does).
COMMANDS = ("train", "enjoy", "record_video")
# This module, as rl_zoo3's --conf-file: it reads the attribute ``hyperparams`` of a python package.
CONF_MODULE = "zoo.rl_zoo3"


def rl_zoo3_entry(env_id: str) -> dict[str, Any]:
    """The zoo's entry for ``env_id`` as rl_zoo3 reads one: learning_rate as data (rl_zoo3 converts it), the rest
    as constructor objects, and the zoo's keys that rl_zoo3 also knows (n_envs, n_timesteps, normalize, policy)."""
    config = get_config(ALGO, env_id)
    learning_rate = config.hyperparams.get("learning_rate")
    entry: dict[str, Any] = resolve(config.hyperparams)
    if learning_rate is not None:
        entry["learning_rate"] = learning_rate
    entry.update(n_envs=config.n_envs, n_timesteps=config.n_timesteps, policy=config.policy)
    if config.normalize is not False:
        entry["normalize"] = config.normalize
    if config.env_kwargs:
        entry["env_kwargs"] = dict(config.env_kwargs)
    return entry


def __getattr__(name: str) -> Any:
    # rl_zoo3 reads ``importlib.import_module(conf_file).hyperparams``: built when asked, from today's YAML.
    if name == "hyperparams":
        return {env_id: rl_zoo3_entry(env_id) for env_id in known_env_ids(ALGO)}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def rl_zoo3_space(env_id: str) -> SearchSpace:
    """The zoo's search space for ``env_id`` without the parameters rl_zoo3 fixes for a whole study."""
    space = load_space(ALGO, env_id)
    return SearchSpace(tuple(param for param in space.params if param.name not in ZOO_KEYS), space.source)


def make_sampler(env_id: str) -> Callable[..., dict[str, Any]]:
    """rl_zoo3's sampler signature, ``(trial, n_actions, n_envs, additional_args) -> kwargs``, over the zoo's space.

    The returned kwargs go on top of the entry's: a parameter whose ``when:`` does not hold is set back to
    Reinforce's default, so no value of the entry survives that the sampled configuration leaves out.
    """
    entry = get_config(ALGO, env_id)
    space = rl_zoo3_space(env_id)
    defaults = {
        name: parameter.default
        for name, parameter in inspect.signature(Reinforce.__init__).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }

    def sample(trial: Any, n_actions: int, n_envs: int, additional_args: dict[str, Any]) -> dict[str, Any]:
        drawn = suggest(trial, space)
        config = apply(entry, drawn)
        kwargs = resolve(config.hyperparams)
        for name in drawn.unset:
            if name in defaults:
                kwargs[name] = defaults[name]
        if "policy_kwargs" not in kwargs:
            kwargs["policy_kwargs"] = {}
        return kwargs

    return sample


def prune_non_finite(objective: Callable[..., float]) -> Callable[..., float]:
    """rl_zoo3's objective, with a trial that raised FloatingPointError pruned as rl_zoo3 prunes a ValueError."""
    import optuna

    @functools.wraps(objective)
    def wrapped(self: Any, trial: Any) -> float:
        try:
            return objective(self, trial)
        except FloatingPointError as error:
            print(f"trial {trial.number}: {error}: pruned")
            raise optuna.exceptions.TrialPruned(str(error)) from error

    wrapped.__zoo_prunes_non_finite__ = True  # type: ignore[attr-defined]
    return wrapped


def zoo_values_as_objects(read: Callable[[Any], tuple[dict[str, Any], dict[str, Any]]]) -> Callable[..., Any]:
    """rl_zoo3's ``read_hyperparameters``, with what it leaves as data for Reinforce turned into objects.

    A ``--conf-file`` in the zoo's format or ``--hyperparams`` may hold ``lin_`` schedules of ``ent_coef`` and
    ``vf_learning_rate`` and class names in ``policy_kwargs``; rl_zoo3 converts only its own schedules
    (``learning_rate``), so the rest would reach the constructor as strings. The saved copy stays data.
    """

    @functools.wraps(read)
    def wrapped(self: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        hyperparams, saved = read(self)
        if self.algo != ALGO:
            return hyperparams, saved
        converted = dict(hyperparams)
        for key in SCHEDULABLE & converted.keys() - {"learning_rate"}:
            if isinstance(converted[key], str):
                converted[key] = parse_schedule(key, converted[key], "rl_zoo3's hyperparameters")
        policy_kwargs = converted.get("policy_kwargs")
        if isinstance(policy_kwargs, dict):  # a string is rl_zoo3's own "dict(...)", which it evaluates itself
            converted["policy_kwargs"] = {**policy_kwargs, **named_classes(policy_kwargs)}
        return converted, saved

    wrapped.__zoo_converts__ = True  # type: ignore[attr-defined]
    return wrapped


def named_classes(policy_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The classes that ``policy_kwargs`` names in the zoo's words (``activation_fn: relu``)."""
    classes = {}
    for name, table in NAMED_CLASSES.items():
        value = policy_kwargs.get(name)
        if isinstance(value, str):
            if value not in table:
                raise ZooError(f"policy_kwargs: {name} must be one of {', '.join(table)}, got {value!r}")
            classes[name] = table[value]
    return classes


def register(env_id: str | None) -> None:
    """Add Reinforce to rl_zoo3's registry (and a sampler for ``env_id``'s ``-optimize``); idempotent."""
    from rl_zoo3 import exp_manager, hyperparams_opt, utils

    utils.ALGOS[ALGO] = Reinforce
    if env_id is not None and env_id in known_env_ids(ALGO):
        hyperparams_opt.HYPERPARAMS_SAMPLER[ALGO] = make_sampler(env_id)
    manager = exp_manager.ExperimentManager
    if not getattr(manager.objective, "__zoo_prunes_non_finite__", False):
        manager.objective = prune_non_finite(manager.objective)  # type: ignore[method-assign]
    if not getattr(manager.read_hyperparameters, "__zoo_converts__", False):
        manager.read_hyperparameters = zoo_values_as_objects(manager.read_hyperparameters)  # type: ignore[method-assign]


def option_value(argv: list[str], *names: str) -> str | None:
    """The value of the first of ``names`` in ``argv`` (``--env X`` or ``--env=X``), or None."""
    for index, item in enumerate(argv):
        for name in names:
            if item == name and index + 1 < len(argv):
                return argv[index + 1]
            if item.startswith(f"{name}="):
                return item.split("=", 1)[1]
    return None


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in COMMANDS:
        print(f"usage: python -m zoo.rl_zoo3 {{{','.join(COMMANDS)}}} [rl_zoo3's options]", file=sys.stderr)
        return 2
    command, rest = args[0], args[1:]
    try:
        import rl_zoo3  # noqa: F401
    except ImportError:
        print("error: rl_zoo3 is not installed: pip install 'sb3-reinforce[rl-zoo3]'", file=sys.stderr)
        return 2
    # rl_zoo3's own defaults when the flags are left out.
    algo = option_value(rest, "--algo") or "ppo"
    env_id = option_value(rest, "--env") or "CartPole-v1"
    optimize = command == "train" and bool({"-optimize", "--optimize-hyperparameters"} & set(rest))
    if algo == ALGO and optimize and env_id not in known_env_ids(ALGO):
        print(
            f"error: -optimize with --algo {ALGO} samples the zoo's search space, which has no entry for "
            f"{env_id}; choose one of {', '.join(known_env_ids(ALGO))}",
            file=sys.stderr,
        )
        return 2
    register(env_id)
    # The zoo's hyperparameters are Reinforce's: another algorithm keeps rl_zoo3's own.
    if algo == ALGO and command == "train" and option_value(rest, "--conf-file", "-conf") is None:
        rest += ["--conf-file", CONF_MODULE]
    saved_argv = sys.argv
    sys.argv = [f"python -m zoo.rl_zoo3 {command}", *rest]
    try:
        runpy.run_module(f"rl_zoo3.{command}", run_name="__main__", alter_sys=True)
    except ZooError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    finally:
        sys.argv = saved_argv
    return 0


if __name__ == "__main__":
    sys.exit(main())
