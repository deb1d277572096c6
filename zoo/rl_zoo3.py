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

VecNormalize statistics cross between the two tools' run folders without a pickle being read:

- ``train`` writes them twice into rl_zoo3's ``logs/<algo>/<env>_<k>/<env>/``: SB3's ``vecnormalize.pkl``, which
  rl_zoo3's ``enjoy`` reads, and, from the same VecNormalize in memory, the zoo's ``vec_normalize.json``, which
  ``zoo evaluate`` and ``zoo push`` read (:func:`zoo.runs.load_run`).
- ``convert-stats RUN_FOLDER`` writes that vec_normalize.json for a run whose pickle was written without it (a run
  trained before the shim wrote it): the only statistics the zoo unpickles, on the user's command, for their run.
- ``enjoy`` and ``record_video`` of a ``zoo train`` run folder (vec_normalize.json beside the model, no ``<env>/``)
  wrap the env in its statistics, and make it with its config.yml's env_kwargs; rl_zoo3 alone would play it on
  raw observations.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import runpy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from sb3_reinforce import Reinforce
from zoo.algos import NAMED_CLASSES, SCHEDULABLE, parse_schedule, resolve
from zoo.config import ZOO_KEYS, get_config, known_env_ids
from zoo.errors import ZooError
from zoo.folders import write_atomically
from zoo.runs import (
    CONFIG_YML,
    PICKLED_VEC_NORMALIZE,
    RL_ZOO3_ARGS,
    RL_ZOO3_CONVERT_COMMAND,
    VEC_NORMALIZE_JSON,
    convert_pickled_stats,
    read_run_folder,
    rl_zoo3_params,
    save_stats,
)
from zoo.tune.space import SearchSpace, apply, load_space, suggest

ALGO = "reinforce"
# rl_zoo3's modules that are commands (run as their own ``__main__``, as ``python -m rl_zoo3.train`` does).
COMMANDS = ("train", "enjoy", "record_video")
# This module, as rl_zoo3's --conf-file: it reads the attribute ``hyperparams`` of a python package.
CONF_MODULE = "zoo.rl_zoo3"
# The shim's own command (zoo.runs names it in its refusal).
CONVERT = RL_ZOO3_CONVERT_COMMAND.rsplit(" ", 1)[-1]
# The key under which the hyperparameters of a zoo run carry the wrapper of its statistics from rl_zoo3's
# get_saved_hyperparams to its create_test_env (both wrapped here); never a key of a real configuration.
ZOO_STATISTICS = "__zoo_vec_normalize__"


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


def with_json_statistics(save: Callable[..., None]) -> Callable[..., None]:
    """rl_zoo3's ``save_trained_model``, which writes ``<env>/vecnormalize.pkl``, also writing the zoo's
    vec_normalize.json beside it, from the same VecNormalize in memory (atomically)."""

    @functools.wraps(save)
    def wrapped(self: Any, model: BaseAlgorithm) -> None:
        save(self, model)
        vec_normalize = model.get_vec_normalize_env()
        if self.normalize and vec_normalize is not None:
            target = Path(self.params_path) / VEC_NORMALIZE_JSON
            write_atomically(target, lambda path: save_stats(vec_normalize, path), "statistics")

    wrapped.__zoo_writes_json__ = True  # type: ignore[attr-defined]
    return wrapped


def zoo_run_hyperparams(read: Callable[..., tuple[dict[str, Any], str | None]]) -> Callable[..., Any]:
    """rl_zoo3's ``get_saved_hyperparams(stats_path, norm_reward, test_mode)``, which also reads a ``zoo train``
    run folder: ``stats_path`` is ``<run>/<env>``, which rl_zoo3 wrote and the zoo does not, so when it is missing
    and ``<run>`` holds the zoo's config.yml or vec_normalize.json, they are read (safely, checked, by
    :func:`zoo.runs.read_run_folder`) instead of leaving the agent to raw observations."""

    @functools.wraps(read)
    def wrapped(stats_path: str, norm_reward: bool = False, test_mode: bool = False) -> Any:
        params = Path(stats_path)
        run_dir = params.parent
        zoo_files = (run_dir / CONFIG_YML).is_file() or (run_dir / VEC_NORMALIZE_JSON).is_file()
        if params.is_dir() or not zoo_files:
            return read(stats_path, norm_reward=norm_reward, test_mode=test_mode)
        config, _, stats = read_run_folder(run_dir, params.name)
        hyperparams: dict[str, Any] = {}
        if config is not None and config.env_kwargs:
            hyperparams["env_kwargs"] = dict(config.env_kwargs)
        if stats is not None:
            hyperparams[ZOO_STATISTICS] = functools.partial(stats.wrap, norm_reward=norm_reward)
        return hyperparams, None  # no stats_path: rl_zoo3 would look there for its pickle

    wrapped.__zoo_reads_runs__ = True  # type: ignore[attr-defined]
    return wrapped


def with_zoo_statistics(create: Callable[..., VecEnv]) -> Callable[..., VecEnv]:
    """rl_zoo3's ``create_test_env``, wrapping the env in the statistics of a zoo run when
    :func:`zoo_run_hyperparams` found them."""

    @functools.wraps(create)
    def wrapped(*args: Any, **kwargs: Any) -> VecEnv:
        hyperparams = kwargs.get("hyperparams")
        wrap = hyperparams.pop(ZOO_STATISTICS, None) if isinstance(hyperparams, dict) else None
        env = create(*args, **kwargs)
        if wrap is None:
            return env
        try:
            return wrap(env)
        except BaseException:
            env.close()
            raise

    wrapped.__zoo_reads_runs__ = True  # type: ignore[attr-defined]
    return wrapped


def register(env_id: str | None) -> None:
    """Add Reinforce to rl_zoo3's registry (and a sampler for ``env_id``'s ``-optimize``), and the zoo's
    statistics to its runs and its enjoy (see the module doc); idempotent."""
    import rl_zoo3
    from rl_zoo3 import exp_manager, hyperparams_opt, utils

    utils.ALGOS[ALGO] = Reinforce
    if env_id is not None and env_id in known_env_ids(ALGO):
        hyperparams_opt.HYPERPARAMS_SAMPLER[ALGO] = make_sampler(env_id)
    manager = exp_manager.ExperimentManager
    if not getattr(manager.objective, "__zoo_prunes_non_finite__", False):
        manager.objective = prune_non_finite(manager.objective)  # type: ignore[method-assign]
    if not getattr(manager.read_hyperparameters, "__zoo_converts__", False):
        manager.read_hyperparameters = zoo_values_as_objects(manager.read_hyperparameters)  # type: ignore[method-assign]
    if not getattr(manager.save_trained_model, "__zoo_writes_json__", False):
        manager.save_trained_model = with_json_statistics(manager.save_trained_model)  # type: ignore[method-assign]
    # enjoy imports both from the package, record_video from rl_zoo3.utils: each command's module is run afresh,
    # so it imports the wrapped functions.
    wrappers: dict[str, Callable[[Any], Callable[..., Any]]] = {
        "get_saved_hyperparams": zoo_run_hyperparams,
        "create_test_env": with_zoo_statistics,
    }
    for module in (rl_zoo3, utils):
        for name, wrap in wrappers.items():
            function = getattr(module, name)
            if not getattr(function, "__zoo_reads_runs__", False):
                setattr(module, name, wrap(function))


def convert_stats(run_dir: Path) -> Path:
    """Write an rl_zoo3 run's VecNormalize statistics as vec_normalize.json beside its ``<env>/vecnormalize.pkl``,
    which stays for rl_zoo3's enjoy; return the file written. This unpickles the file, which runs whatever code it
    names: it is done only on this command, for a run the user trained (see docs/guide/rl_zoo.md)."""
    params = rl_zoo3_params(run_dir)
    if params is None or not (params / PICKLED_VEC_NORMALIZE).is_file():
        raise ZooError(
            f"{run_dir} is not an rl_zoo3 run folder that normalizes: expected <env>/{RL_ZOO3_ARGS} and "
            f"<env>/{PICKLED_VEC_NORMALIZE} in it"
        )
    return convert_pickled_stats(params / PICKLED_VEC_NORMALIZE)


def convert_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m zoo.rl_zoo3 {CONVERT}",
        description="Write the VecNormalize statistics of rl_zoo3 runs you trained as vec_normalize.json, which "
        "`python -m zoo evaluate` and `zoo push` read; their vecnormalize.pkl is unpickled to do so, and kept.",
    )
    parser.add_argument("folders", nargs="+", type=Path, metavar="RUN_FOLDER", help="logs/<algo>/<env>_<k>")
    for folder in parser.parse_args(argv).folders:
        print(f"wrote {convert_stats(folder)}")
    return 0


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
    usage = f"usage: python -m zoo.rl_zoo3 {{{','.join((*COMMANDS, CONVERT))}}} [options]"
    if args[:1] in (["-h"], ["--help"]):
        print(
            f"{usage}\n\nrl_zoo3's own commands with --algo reinforce; `python -m zoo.rl_zoo3 COMMAND --help` lists a "
            "command's options."
        )
        return 0
    if not args or args[0] not in (*COMMANDS, CONVERT):
        print(usage, file=sys.stderr)
        return 2
    command, rest = args[0], args[1:]
    if command == CONVERT:
        try:
            return convert_main(rest)
        except ZooError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
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
