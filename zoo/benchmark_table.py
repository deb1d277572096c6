"""The benchmark's results from its runs' records: the table (``benchmark.md``, ``benchmark.csv``), the aggregates
across the MuJoCo tasks (:class:`Suite`) and the plots (learning curves, performance profile).

:mod:`zoo.benchmark` runs the benchmark and calls these once the runs are in; the statistics themselves are
:mod:`zoo.statistics`'.
"""

from __future__ import annotations

import csv
import sys
import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from zoo.errors import first_line
from zoo.folders import make_folder, write_atomically
from zoo.measure import FINAL_EVAL_EPISODES
from zoo.statistics import (
    BOOTSTRAP_REPS,
    BOOTSTRAP_SEED,
    F64,
    Interval,
    curve_band,
    improvement_interval,
    iqm_interval,
    normalized,
    performance_profile,
    probability_of_improvement,
)


def summarize(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault((record["env_id"], record["algo"]), []).append(record)
    rows = []
    for (env_id, algo), runs in sorted(groups.items()):
        scores = [run["mean_reward"] for run in runs]
        iqm = iqm_interval([scores])
        rows.append(
            {
                "env": env_id,
                "algorithm": algo,
                "n_timesteps": int(np.median([run["n_timesteps"] for run in runs])),
                "seeds": len(runs),
                "mean": float(np.mean(scores)),
                "std": float(np.std(scores)),
                "iqm": iqm.point,
                "iqm_low": iqm.low,
                "iqm_high": iqm.high,
                "train_seconds": float(np.mean([run["train_seconds"] for run in runs])),
                "train_cpu_seconds": float(np.mean([run["train_cpu_seconds"] for run in runs])),
            }
        )
    return rows


# Where gymnasium registers the MuJoCo tasks: the suite of the aggregates.
MUJOCO_ENTRY_POINT = "gymnasium.envs.mujoco"
# The algorithm whose probability of improvement over each of the others the suite reports.
REFERENCE_ALGO = "reinforce"
PROFILE_PLOT = "mujoco_performance_profile.png"


def is_mujoco(env_id: str) -> bool:
    return str(gym.spec(env_id).entry_point).startswith(MUJOCO_ENTRY_POINT)


def random_policy_score(env_id: str, episodes: int = FINAL_EVAL_EPISODES) -> float:
    """The mean return of uniformly random actions over ``episodes`` episodes, the env and the action space seeded
    0, 1, ...: the 0 of a task's normalized scores."""
    env = gym.make(env_id)
    returns = []
    try:
        for seed in range(episodes):
            env.reset(seed=seed)
            env.action_space.seed(seed)
            total, done = 0.0, False
            while not done:
                _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    finally:
        env.close()
    return float(np.mean(returns))


@dataclass(frozen=True)
class Improvement:
    """``P(x > y)`` over the tasks where both have runs, and its value on each of them."""

    x: str
    y: str
    tasks: list[str]
    interval: Interval
    per_task: list[float]


@dataclass(frozen=True)
class Suite:
    """The MuJoCo tasks' final scores, normalized per task, and their aggregates across tasks.

    A run's normalized score on a task is 0 at a uniformly random policy's mean return and 1 at the best
    algorithm's mean there. It needs no published reference score, of which the v5 tasks have none, and a
    negative return (Reacher's) stays in order. The IQM and the profile pool the normalized runs of the tasks
    where every algorithm has runs, so each algorithm is aggregated over the same tasks and the same scale.
    """

    tasks: list[str]
    # Tasks of every algorithm where no algorithm's mean beats a random policy: no scale to normalize by.
    left_out: list[str]
    floors: dict[str, float]
    ceilings: dict[str, tuple[str, float]]
    normalized: dict[str, list[F64]]
    iqm: dict[str, Interval]
    improvements: list[Improvement]


def final_scores(records: list[dict[str, Any]]) -> dict[str, dict[str, F64]]:
    """The per-seed final scores by algorithm, then env."""
    scores: dict[str, dict[str, list[float]]] = {}
    for record in records:
        scores.setdefault(record["algo"], {}).setdefault(record["env_id"], []).append(record["mean_reward"])
    return {algo: {env: np.asarray(runs) for env, runs in envs.items()} for algo, envs in scores.items()}


def compare_suite(records: list[dict[str, Any]]) -> Suite | None:
    """The aggregates across the MuJoCo tasks, or None if no two algorithms have runs on a common one."""
    scores = final_scores([record for record in records if is_mujoco(record["env_id"])])
    improvements = []
    for other in sorted(algo for algo in scores if algo != REFERENCE_ALGO):
        shared = sorted(scores.get(REFERENCE_ALGO, {}).keys() & scores[other].keys())
        if shared:
            x, y = [scores[REFERENCE_ALGO][task] for task in shared], [scores[other][task] for task in shared]
            per_task = [probability_of_improvement([a], [b]) for a, b in zip(x, y, strict=True)]
            improvements.append(Improvement(REFERENCE_ALGO, other, shared, improvement_interval(x, y), per_task))
    common = sorted(set.intersection(*(set(envs) for envs in scores.values()))) if len(scores) > 1 else []
    if not improvements and not common:
        return None
    floors = {task: random_policy_score(task) for task in common}
    ceilings = {
        task: max(((algo, float(envs[task].mean())) for algo, envs in scores.items()), key=lambda best: best[1])
        for task in common
    }
    tasks = [task for task in common if ceilings[task][1] > floors[task]]
    normalized_runs = {
        algo: [normalized(envs[task], floors[task], ceilings[task][1]) for task in tasks]
        for algo, envs in scores.items()
    }
    iqm = {algo: iqm_interval(runs) for algo, runs in normalized_runs.items()} if tasks else {}
    left_out = [task for task in common if task not in tasks]
    return Suite(tasks, left_out, floors, ceilings, normalized_runs, iqm, improvements)


def interval_text(interval: Interval, digits: int) -> str:
    return f"{interval.point:.{digits}f} [{interval.low:.{digits}f}, {interval.high:.{digits}f}]"


def suite_lines(suite: Suite) -> list[str]:
    """The section of ``benchmark.md`` across the MuJoCo suite."""
    lines = ["", "## Across the MuJoCo suite", ""]
    if suite.tasks:
        lines += [
            "Normalized score of a run: 0 at the mean return of uniformly random actions on that task "
            f"({FINAL_EVAL_EPISODES} episodes, seeds 0-{FINAL_EVAL_EPISODES - 1}, measured when this table is "
            "written), 1 at the best algorithm's mean there. The IQM pools the normalized runs of the tasks where "
            f"every algorithm has runs ({', '.join(suite.tasks)}); a task with more seeds weighs more.",
            "",
            "| task | random policy | best mean |",
            "|---|---:|---:|",
        ]
        lines += [
            f"| {task} | {suite.floors[task]:.1f} | {suite.ceilings[task][1]:.1f} ({suite.ceilings[task][0]}) |"
            for task in suite.tasks
        ]
        lines += [
            "",
            "| algorithm | runs | normalized IQM [95% CI] | normalized mean +/- std |",
            "|---|---:|---:|---:|",
        ]
        for algo, runs in sorted(suite.normalized.items()):
            pooled = np.concatenate(runs)
            lines.append(
                f"| {algo} | {len(pooled)} | {interval_text(suite.iqm[algo], 2)} "
                f"| {pooled.mean():.2f} +/- {pooled.std():.2f} |"
            )
    if suite.left_out:
        lines += ["", f"Left out: {', '.join(suite.left_out)} (no algorithm's mean beats a random policy there)."]
    if suite.improvements:
        lines += [
            "",
            "Probability of improvement P(X > Y): the chance that a run of X ends above a run of Y on the same "
            "task (ties count 1/2), averaged over the tasks where both have runs; 0.5 is a draw. It compares "
            "returns within a task, so it needs no normalization.",
            "",
            "| X > Y | tasks | P(X > Y) [95% CI] | per task |",
            "|---|---:|---:|---|",
        ]
        lines += [
            f"| {i.x} > {i.y} | {len(i.tasks)} | {interval_text(i.interval, 2)} | "
            + ", ".join(f"{task} {p:.2f}" for task, p in zip(i.tasks, i.per_task, strict=True))
            + " |"
            for i in suite.improvements
        ]
    lines += [
        "",
        f"Intervals: 95% stratified-bootstrap percentile intervals, {BOOTSTRAP_REPS:,} resamples of the runs within "
        f"each task and algorithm, seed {BOOTSTRAP_SEED} (`zoo/statistics.py`). Performance profile: "
        f"`plots/{PROFILE_PLOT}`.",
    ]
    return lines


def machines_line(records: list[dict[str, Any]]) -> str:
    """Which CPUs the runs were measured on: wall-clock, and past a few hundred thousand steps of a chaotic env
    even the scores, depend on it (``zoo.machine``)."""
    counts = Counter(record.get("cpu", "not recorded") for record in records)
    return "Machines: " + "; ".join(f"{cpu}: {n} runs" for cpu, n in sorted(counts.items())) + "."


def write_table(rows: list[dict[str, Any]], out: Path, command: str, machines: str, suite: Sequence[str] = ()) -> None:
    """``benchmark.csv`` and ``benchmark.md`` in ``out``, each replaced whole (a failed write keeps the old one);
    ``suite`` is the section across the MuJoCo suite (``suite_lines``), if any."""

    def write_csv(path: Path) -> None:
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["env"])
            writer.writeheader()
            writer.writerows(rows)

    write_atomically(out / "benchmark.csv", write_csv, "results table")
    lines = [
        "# Benchmark",
        "",
        f"Reproduce: `{command}` (resumable: finished runs are kept in `runs/`).",
        "",
        f"Final score per seed: mean return over {FINAL_EVAL_EPISODES} deterministic episodes after training. "
        "Columns: mean +/- std and interquartile mean (IQM) of those per-seed scores, the IQM with its 95% "
        "stratified-bootstrap interval (with 3 to 5 seeds a rough one, narrower than the truth); wall-clock is the "
        "mean training time per seed (evaluations excluded), one process per run, 1 torch thread; CPU is that "
        "process's CPU time over the same span, closer to what an idle core would take (the wall-clock grows "
        "with the machine's load, the CPU time much less).",
        "",
        machines,
        "",
        "| env | algorithm | n_timesteps | seeds | mean +/- std | IQM [95% CI] | wall-clock (s) | CPU (s) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['env']} | {r['algorithm']} | {r['n_timesteps']:,} | {r['seeds']} | {r['mean']:.1f} +/- {r['std']:.1f} "
        f"| {interval_text(Interval(r['iqm'], r['iqm_low'], r['iqm_high']), 1)} | {r['train_seconds']:.0f} "
        f"| {r['train_cpu_seconds']:.0f} |"
        for r in rows
    ]
    lines += suite
    text = "\n".join(lines) + "\n"
    write_atomically(out / "benchmark.md", lambda path: path.write_text(text, encoding="utf-8"), "results table")


def curve_range(centres: np.ndarray) -> tuple[float, float]:
    """A y-range for the part of the learning curves that matters: from the 10th percentile of the IQM curves'
    points to their maximum. The first evaluations of an untrained policy can be far lower (LunarLander-v3's
    -4000) and would squash everything else into a line; they are cut at the bottom edge."""
    low, high = float(np.percentile(centres, 10)), float(centres.max())
    margin = 0.08 * (high - low) or 1.0
    return low - margin, high + margin


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend: the plots are files, and no display is needed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_curves(records: list[dict[str, Any]], out: Path) -> list[Path]:
    """One plot per env: each algorithm's IQM over seeds at each evaluation, with its 95% bootstrap band."""
    plt = pyplot()
    written = []
    folder = make_folder(out / "plots", "the plots folder")
    for env_id in sorted({r["env_id"] for r in records}):
        try:
            written.append(plot_env(plt, records, env_id, folder))
        except (ValueError, OverflowError) as error:  # finite curves whose range is not: +/-1e308
            print(f"warning: no learning-curve plot for {env_id}: {first_line(error)}", file=sys.stderr)
        finally:
            plt.close("all")
    return written


def plot_env(plt: Any, records: list[dict[str, Any]], env_id: str, folder: Path) -> Path:
    """The learning-curve plot of ``env_id``'s runs, written into ``folder``."""
    figure, axis = plt.subplots(figsize=(8, 5), dpi=120)  # 960 x 600 px: readable on the docs page
    centres = []
    for algo in sorted({r["algo"] for r in records if r["env_id"] == env_id}):
        runs = [r for r in records if r["env_id"] == env_id and r["algo"] == algo and r["curve_timesteps"]]
        if not runs:
            continue
        length = min(len(r["curve_timesteps"]) for r in runs)
        steps = np.asarray(runs[0]["curve_timesteps"][:length])
        band = curve_band([r["curve_mean_reward"][:length] for r in runs])
        axis.plot(steps, band.point, label=f"{algo} ({len(runs)} seeds)")
        axis.fill_between(steps, band.low, band.high, alpha=0.2)
        centres.append(band.point)
    if centres:
        axis.set_ylim(*curve_range(np.concatenate(centres)))
    axis.set_title(env_id)
    axis.set_xlabel("env steps")
    axis.set_ylabel("eval return (IQM over seeds, 95% CI)")
    axis.legend(fontsize=7)
    figure.tight_layout()
    return write_atomically(folder / f"{env_id}.png", figure.savefig, "learning-curve plot")


def plot_profile(suite: Suite, out: Path) -> Path:
    """The performance profile across the suite's tasks: for each normalized score tau, the fraction of each
    algorithm's runs above it, with its 95% bootstrap band."""
    plt = pyplot()
    pooled = np.concatenate([np.concatenate(runs) for runs in suite.normalized.values()])
    taus = np.linspace(min(0.0, float(pooled.min())), max(1.0, float(pooled.max())), 101)
    figure, axis = plt.subplots(figsize=(8, 5), dpi=120)
    for algo, runs in sorted(suite.normalized.items()):
        band = performance_profile(runs, taus)
        axis.plot(taus, band.point, label=f"{algo} ({sum(len(task) for task in runs)} runs)")
        axis.fill_between(taus, band.low, band.high, alpha=0.2)
    # Wrapped: with six or more tasks one line is wider than the figure.
    tasks = ", ".join(task.removesuffix("-v5") for task in suite.tasks)
    axis.set_title(textwrap.fill(f"MuJoCo: {tasks}", 60), fontsize=9)
    axis.set_xlabel("normalized score tau (0: random policy, 1: best mean)")
    axis.set_ylabel("fraction of runs above tau")
    axis.set_ylim(-0.02, 1.02)
    axis.legend(fontsize=7)
    figure.tight_layout()
    folder = make_folder(out / "plots", "the plots folder")
    path = write_atomically(folder / PROFILE_PLOT, figure.savefig, "performance-profile plot")
    plt.close(figure)
    return path
