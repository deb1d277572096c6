"""A study's results: the best trials as a table, Optuna's plots as PNG, and the best trial as a zoo entry."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any

import optuna
import yaml
from optuna.trial import FrozenTrial, TrialState

from zoo.config import RunConfig
from zoo.errors import ZooError
from zoo.folders import make_folder, write_atomically
from zoo.measure import FINAL_EVAL_EPISODES
from zoo.tune.objective import CONFIG_ATTR, SCORES_ATTR, SETUP_ATTR, TRAIN_SECONDS_ATTR
from zoo.tune.workers import Counts, describe, format_params

HISTORY_PNG = "optimization_history.png"
IMPORTANCES_PNG = "param_importances.png"
ENTRY_ORDER = ("n_envs", "n_timesteps", "policy", "normalize", "env_kwargs")


def complete_trials(study: optuna.Study) -> list[FrozenTrial]:
    """The complete trials, best first (ties: the earlier trial first)."""
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    return sorted(
        trials, key=lambda trial: (-(trial.value if trial.value is not None else float("-inf")), trial.number)
    )


def summary(study: optuna.Study) -> str:
    counts = Counts.of(study.get_trials(deepcopy=False))
    pruned = len(study.get_trials(deepcopy=False, states=(TrialState.PRUNED,)))
    return (
        f"study {study.study_name}: {counts.done - pruned} complete, {pruned} pruned, {counts.failed} failed, "
        f"{counts.running} running, {counts.waiting} waiting"
    )


def table(study: optuna.Study, top: int = 10) -> str:
    """The ``top`` best complete trials as a Markdown table, then the failed trials and their reasons."""
    lines = [summary(study), ""]
    best = complete_trials(study)[:top]
    if best:
        lines += ["| rank | trial | value | per seed | train s | parameters |", "|---:|---:|---:|---|---:|---|"]
        for rank, trial in enumerate(best, 1):
            seeds = ", ".join(f"{score:.1f}" for score in trial.user_attrs.get(SCORES_ATTR, []))
            seconds = trial.user_attrs.get(TRAIN_SECONDS_ATTR, float("nan"))
            lines.append(
                f"| {rank} | {trial.number} | {trial.value:.1f} | {seeds} | {seconds:.0f} | {format_params(trial)} |"
            )
    else:
        lines.append("no complete trial yet")
    failed = study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
    if failed:
        everything = study.get_trials(deepcopy=False)
        lines += ["", "failed trials:"] + [f"  {describe(trial, everything)}" for trial in failed]
    return "\n".join(lines)


def plots(study: optuna.Study, folder: Path) -> list[str]:
    """Optuna's optimization history and parameter importances as PNG in ``folder``; a line per plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as optuna_plots

    make_folder(folder, "the plots folder")
    written = []
    for name, plot in (
        (HISTORY_PNG, optuna_plots.plot_optimization_history),
        (IMPORTANCES_PNG, optuna_plots.plot_param_importances),
    ):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # experimental API; few trials per regime of a conditional parameter
                axes = plot(study)
        except (ValueError, RuntimeError, ZeroDivisionError) as error:
            written.append(f"{name}: not drawn ({error})")
            continue
        figure = axes.get_figure(root=True)
        assert figure is not None
        write_atomically(folder / name, functools.partial(figure.savefig, dpi=100, bbox_inches="tight"), "plot")
        plt.close(figure)
        written.append(f"wrote {folder / name}")
    return written


def entry(study: optuna.Study) -> tuple[str, dict[str, Any]]:
    """The best trial as an entry of ``hyperparams/<algo>.yml``: its env id and the entry, validated."""
    trials = complete_trials(study)
    if not trials:
        raise ZooError(f"study {study.study_name} has no complete trial to export")
    config = RunConfig.from_data(trials[0].user_attrs[CONFIG_ATTR])
    data = config.to_data()
    result: dict[str, Any] = {"n_envs": config.n_envs, "n_timesteps": config.n_timesteps, "policy": config.policy}
    if config.normalize is not False:
        result["normalize"] = config.normalize
    if config.env_kwargs:
        result["env_kwargs"] = config.env_kwargs
    result.update(data["hyperparams"])
    return config.env_id, result


def export(study: optuna.Study) -> str:
    """The best trial as YAML for ``hyperparams/<algo>.yml``, with a ``# Tuned`` comment naming the study."""
    env_id, result = entry(study)
    best = complete_trials(study)[0]
    scores = best.user_attrs.get(SCORES_ATTR, [])
    finished = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))
    setup = study.user_attrs.get(SETUP_ATTR, {})
    first = int(setup.get("first_seed", 0))
    seeds = f"seed {first}" if len(scores) == 1 else f"seeds {first}-{first + len(scores) - 1}"
    comment = (
        f"# Tuned (python -m zoo tune, study {study.study_name}): trial {best.number}, the best of {finished} "
        f"trials,\n# {best.value:.1f} = the final model's mean return on {FINAL_EVAL_EPISODES} deterministic "
        f"episodes, averaged over {seeds} (per seed: {', '.join(f'{score:.1f}' for score in scores)})."
    )
    return comment + "\n" + yaml.safe_dump({env_id: result}, sort_keys=False, default_flow_style=None)
