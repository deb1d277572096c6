"""``python -m zoo benchmark``: train every env over several seeds and write the results table.

Each finished (algorithm, env, seed) run is saved under ``OUT/runs/<algo>/<env>/seed<k>/`` (result.json, the
final model with its config.yml and VecNormalize statistics) and skipped on the next invocation, so a long table
is completed across sessions. A run is reused only if its config.yml is the configuration this invocation would
train (the budget of ``--n-timesteps`` included); a run of another configuration is refused rather than mixed
into the table, and a corrupt or half-written result.json is reported and measured again. A run trains in
``seed<k>.partial/`` beside its folder, with a checkpoint every 100,000 steps or a tenth of a smaller budget
(:mod:`zoo.checkpoints`): one that is cut off goes on from its last checkpoint at the next invocation (a checkpoint
of another configuration is refused too; one that cannot be read is reported and the run starts over), and the
partial folder is removed once the run is finished. The table is rebuilt
from the runs of the invocation: ``OUT/benchmark.md``, ``OUT/benchmark.csv``, one learning-curve plot per env and
a performance profile of the MuJoCo tasks in ``OUT/plots/``. OUT is ``benchmarks/results/zoo`` unless ``--out``
names another folder: measured results stay outside the package.

What is measured: each run trains with the zoo's hyperparameters, evaluates every ``n_timesteps / 20`` steps on
5 deterministic episodes (the learning curve), and at the end on 20 deterministic episodes (the final score).
The table reports, across seeds, the mean +/- std and the interquartile mean (IQM) of the per-seed final scores,
the IQM with its 95% stratified-bootstrap interval, and the mean training wall-clock per seed (evaluations
excluded). Across the MuJoCo tasks that several algorithms have run it adds the IQM of the scores normalized per
task (0: a random policy, 1: the best algorithm's mean), the probability that a run of Reinforce ends above a run
of each baseline, and their intervals (``zoo.statistics``).
"""

from __future__ import annotations

import contextlib
import csv
import json
import multiprocessing
import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import gymnasium as gym
import numpy as np

from zoo.algos import ALGOS
from zoo.checkpoints import checkpointed_runs, default_interval, exclusive, find_resumable, read_checkpoint
from zoo.checks import shown
from zoo.config import (
    check_budget_flag,
    check_env_id,
    config_difference,
    get_config,
    known_env_ids,
    load_file,
    parse_overrides,
    read_yaml_file,
)
from zoo.errors import ZooError, first_line
from zoo.folders import make_folder, move_into_place, write_atomically
from zoo.measure import FINAL_EVAL_EPISODES, check_record, measured_run
from zoo.parsers import DEFAULT_OUT, QUICK_TIMESTEPS, benchmark_parser
from zoo.runs import CONFIG_YML, RESULT_FILE, VEC_NORMALIZE_JSON
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

QUICK_ENVS = ["CartPole-v1"]


@dataclass(frozen=True)
class Task:
    algo: str
    env_id: str
    seed: int
    n_timesteps: int | None
    out: str
    # --hyperparams, as (key, value) pairs: an ablation of the entry, recorded in config.yml like the rest.
    hyperparams: tuple[tuple[str, Any], ...] = ()

    @property
    def folder(self) -> Path:
        return Path(self.out) / "runs" / self.algo / self.env_id / f"seed{self.seed}"

    @property
    def partial(self) -> Path:
        """Where the run trains, checkpoints included, until it is finished and moved to :attr:`folder`."""
        return self.folder.with_name(f"{self.folder.name}.partial")

    def overrides(self) -> dict[str, Any]:
        budget = {} if self.n_timesteps is None else {"n_timesteps": self.n_timesteps}
        return {**dict(self.hyperparams), **budget}

    def config_data(self) -> dict[str, Any]:
        """The config.yml this run writes: everything that defines it."""
        return get_config(self.algo, self.env_id, self.overrides()).to_data(self.seed)


def train_to_staging(task: Task, folder: Path) -> tuple[dict[str, Any], Path]:
    """Train and evaluate one (algo, env, seed) in ``folder``, checkpointed (:mod:`zoo.checkpoints`); return its
    record and the folder of its files.

    A run that was cut off left its checkpoint in ``folder``: the run goes on from there. A checkpoint that cannot
    be read is reported in one line (:func:`zoo.checkpoints.find_resumable`) and the run starts over, ``folder``
    emptied first; one of another configuration is refused by :func:`plan` before any run starts.
    """
    import torch as th

    th.set_num_threads(1)
    config = get_config(task.algo, task.env_id, task.overrides())
    command = f"python -m zoo benchmark --envs {task.env_id}" + hyperparams_flag(task.hyperparams)
    resume = find_resumable(folder, task.algo, task.env_id, config.to_data(task.seed))
    if resume is None:
        for stale in folder.iterdir():
            if stale.is_dir():
                shutil.rmtree(stale)
            else:
                stale.unlink()
    every = default_interval(config.n_timesteps)
    result, scores = measured_run(config, task.seed, str(folder), command, checkpoint_freq=every, resume=resume)
    record = check_record({"algo": task.algo, "env_id": task.env_id, "seed": task.seed, **scores})
    staging = folder / "staging"
    staging.mkdir()
    for name in (result.model_path.name, CONFIG_YML, VEC_NORMALIZE_JSON):
        if (result.run_dir / name).exists():
            shutil.copy2(result.run_dir / name, staging / name)
    (staging / RESULT_FILE).write_text(json.dumps(record, indent=1))
    return record, staging


def run_task(task: Task) -> dict[str, Any]:
    """One run in a local worker process: trained in ``task.partial``, which keeps its checkpoints across a cut, and
    held there by this process alone; its folder is then written atomically and the partial one removed."""
    partial = make_folder(task.partial, "a run's folder")
    with exclusive(partial):
        record, staging = train_to_staging(task, partial)
        # Moved into place only when complete, so an interrupted run is resumed rather than half-counted.
        move_into_place(staging, task.folder)
    shutil.rmtree(partial, ignore_errors=True)
    return record


def hyperparams_flag(hyperparams: tuple[tuple[str, Any], ...]) -> str:
    """`` --hyperparams k=v ...`` as typed, or nothing."""
    if not hyperparams:
        return ""
    # JSON is YAML, so each value reads back as it was parsed; strings such as lin_3e-3 stay bare.
    pairs = (f"{key}={value if isinstance(value, str) else json.dumps(value)}" for key, value in hyperparams)
    return " --hyperparams " + " ".join(shlex.quote(pair) for pair in pairs)


def read_record(folder: Path) -> dict[str, Any]:
    """The result.json of a finished run, or a ZooError saying why it is corrupt."""
    path = folder / RESULT_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ZooError(f"{path} is corrupt ({first_line(error)})") from None
    try:
        record = check_record(data)
    except ZooError as error:
        raise ZooError(f"{path} is corrupt ({error})") from None
    filed_under = (folder.parent.parent.name, folder.parent.name, folder.name)
    if (record["algo"], record["env_id"], f"seed{record['seed']}") != filed_under:
        raise ZooError(
            f"{path} is corrupt (it records {record['algo']} {record['env_id']} seed {record['seed']}, "
            f"filed under {'/'.join(filed_under)})"
        )
    return record


def stored_config(folder: Path) -> Any:
    """The config.yml a run was measured with, or None if it has none that can be read."""
    try:
        return read_yaml_file(folder / CONFIG_YML)
    except ZooError:
        return None


def check_run_folders(tasks: list[Task]) -> None:
    """A ZooError, before anything trains, where a folder that runs go into is a file."""
    for task in tasks:
        for folder in (task.folder.parents[2], task.folder.parent.parent, task.folder.parent, task.folder):
            if folder.exists() and not folder.is_dir():
                raise ZooError(f"{folder} is a file, where the benchmark keeps a folder of runs: move it away")


def checkpoint_difference(task: Task) -> str:
    """How the checkpoint that an interrupted run left in ``task.partial`` differs from the task's configuration, in
    words: "" when it does not, or when there is none that can be read (the run then starts over)."""
    for run_dir in checkpointed_runs(task.partial, task.algo, task.env_id):
        try:
            return config_difference(read_checkpoint(run_dir).config, task.config_data())
        except ZooError:
            return ""
    return ""


def plan(tasks: list[Task]) -> tuple[list[Task], list[dict[str, Any]]]:
    """The tasks still to run and the records to reuse.

    A corrupt result.json is reported and its run measured again; a finished run of another configuration
    (config.yml differs, e.g. another ``--n-timesteps``), or an interrupted one whose checkpoint is of another, is
    refused, all of them named in one ZooError.
    """
    check_run_folders(tasks)
    todo: list[Task] = []
    records: list[dict[str, Any]] = []
    mismatched: list[str] = []
    for task in tasks:
        if not (task.folder / RESULT_FILE).exists():
            todo.append(task)
            continue
        try:
            record = read_record(task.folder)
        except ZooError as error:
            print(f"warning: {error}: measuring it again", file=sys.stderr)
            todo.append(task)
            continue
        difference = config_difference(stored_config(task.folder), task.config_data())
        if difference:
            mismatched.append(f"{task.folder} ({difference})")
        else:
            records.append(record)
            # Left by a cut between moving the finished run into place and removing its partial folder.
            shutil.rmtree(task.partial, ignore_errors=True)
    interrupted = [f"{task.partial} ({difference})" for task in todo if (difference := checkpoint_difference(task))]
    if mismatched or interrupted:
        counts = [f"{len(mismatched)} finished runs were measured"] if mismatched else []
        counts += [f"{len(interrupted)} interrupted runs were checkpointed"] if interrupted else []
        raise ZooError(
            f"{' and '.join(counts)} with another configuration, e.g. {[*mismatched, *interrupted][0]}; "
            "pass another --out, or remove those runs to measure them again"
        )
    return todo, records


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
        figure, axis = plt.subplots(figsize=(5, 3.2), dpi=80)
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
        path = write_atomically(folder / f"{env_id}.png", figure.savefig, "learning-curve plot")
        plt.close(figure)
        written.append(path)
    return written


def plot_profile(suite: Suite, out: Path) -> Path:
    """The performance profile across the suite's tasks: for each normalized score tau, the fraction of each
    algorithm's runs above it, with its 95% bootstrap band."""
    plt = pyplot()
    pooled = np.concatenate([np.concatenate(runs) for runs in suite.normalized.values()])
    taus = np.linspace(min(0.0, float(pooled.min())), max(1.0, float(pooled.max())), 101)
    figure, axis = plt.subplots(figsize=(5, 3.2), dpi=80)
    for algo, runs in sorted(suite.normalized.items()):
        band = performance_profile(runs, taus)
        axis.plot(taus, band.point, label=f"{algo} ({sum(len(task) for task in runs)} runs)")
        axis.fill_between(taus, band.low, band.high, alpha=0.2)
    axis.set_title(f"MuJoCo: {', '.join(task.removesuffix('-v5') for task in suite.tasks)}", fontsize=9)
    axis.set_xlabel("normalized score tau (0: random policy, 1: best mean)")
    axis.set_ylabel("fraction of runs above tau")
    axis.set_ylim(-0.02, 1.02)
    axis.legend(fontsize=7)
    figure.tight_layout()
    folder = make_folder(out / "plots", "the plots folder")
    path = write_atomically(folder / PROFILE_PLOT, figure.savefig, "performance-profile plot")
    plt.close(figure)
    return path


def main(argv: list[str] | None = None) -> int:
    args = benchmark_parser().parse_args(argv)
    algos = ["reinforce", *[name.strip() for name in args.baselines.split(",") if name.strip()]]
    for algo in algos:
        if algo not in ALGOS:
            raise ZooError(f"unknown baseline {shown(algo)}; known: {', '.join(a for a in ALGOS if a != 'reinforce')}")
    if args.envs == []:
        raise ZooError("--envs needs at least one env id (leave it out for every env of reinforce.yml)")
    check_budget_flag(args.n_timesteps)
    hyperparams = tuple(parse_overrides(args.hyperparams).items())
    envs = args.envs or (QUICK_ENVS if args.quick else known_env_ids())
    seeds = args.seeds if args.seeds is not None else (2 if args.quick else 5)
    n_timesteps = args.n_timesteps or (QUICK_TIMESTEPS if args.quick else None)
    baseline_seeds = seeds if args.baseline_seeds is None else args.baseline_seeds
    if seeds < 1 or baseline_seeds < 1 or args.jobs < 1:
        raise ZooError("--seeds, --baseline-seeds and --jobs must be >= 1")
    for env_id in envs:
        check_env_id(env_id)
    temporary = tempfile.mkdtemp(prefix="zoo-benchmark-") if args.quick and args.out is None else None
    if args.out is None and temporary is None and not Path(DEFAULT_OUT).is_dir():
        # The default is the checkout's committed results: elsewhere it would scatter a results tree wherever
        # the command happens to run.
        raise ZooError(
            f"--out is needed here: the default, {DEFAULT_OUT}, is the folder of a checkout of sb3-reinforce"
        )
    out = make_folder(args.out or temporary or DEFAULT_OUT, "--out")
    # Checked before the first run, so a plots folder that cannot be written costs no training.
    plots = make_folder(out / "plots", "the plots folder")
    if not os.access(plots, os.W_OK | os.X_OK):
        raise ZooError(f"the plots folder {plots} is not writable")

    tasks = []
    for env_id in envs:
        for algo in algos:
            if algo != "reinforce" and env_id not in load_file(algo):
                print(f"skip {algo} on {env_id}: no published hyperparameters")
                continue
            algo_seeds = seeds if algo == "reinforce" else baseline_seeds
            ablation = hyperparams if algo == "reinforce" else ()
            tasks += [Task(algo, env_id, seed, n_timesteps, str(out), ablation) for seed in range(algo_seeds)]
    todo, records = plan(tasks)
    where = f"on Ray ({args.ray})" if args.ray else f"with {args.jobs} workers"
    print(f"{len(tasks)} runs, {len(tasks) - len(todo)} already done, {len(todo)} to do {where}")
    failed: list[str] = []
    if todo and not args.table_only:
        try:
            failed = execute(todo, args.ray, args.jobs, records.append)
        except KeyboardInterrupt:
            print(
                f"interrupted: the finished runs are kept in {out / 'runs'}, the others' last checkpoints in their "
                "seed<k>.partial folders; the same command resumes",
                file=sys.stderr,
            )
            raise
    finished = {(record["algo"], record["env_id"], record["seed"]) for record in records}
    unfinished = [task for task in todo if (task.algo, task.env_id, task.seed) not in finished]
    missing = ""
    if unfinished:
        missing = f"Not yet measured ({len(unfinished)} runs): " + ", ".join(
            f"{task.algo} {task.env_id} seed {task.seed}" for task in unfinished
        )
        if args.table_only:
            print(f"--table-only: {missing}")

    rows = summarize(records)
    suite = compare_suite(records)
    command = "python -m zoo benchmark" + (" --quick" if args.quick else "")
    if args.envs:
        command += " --envs " + " ".join(args.envs)
    if args.seeds is not None:
        command += f" --seeds {args.seeds}"
    if args.baselines:
        command += f" --baselines {args.baselines}"
    if args.baseline_seeds is not None:
        command += f" --baseline-seeds {args.baseline_seeds}"
    if args.n_timesteps is not None:
        command += f" --n-timesteps {args.n_timesteps}"
    command += hyperparams_flag(hyperparams)
    if args.out is not None:
        command += f" --out {shlex.quote(args.out)}"
    # The plots before the table: a plot that cannot be written leaves the previous table.
    plot_curves(records, out)
    if suite is not None and suite.tasks:
        plot_profile(suite, out)
    machines = machines_line(records) + (f"\n\n{missing}." if missing else "")
    write_table(rows, out, command, machines, suite_lines(suite) if suite is not None else [])
    print((out / "benchmark.md").read_text())
    print(f"results in {out}")
    if failed:
        print(f"{len(failed)} runs failed (the same command retries them):", file=sys.stderr)
        for line in failed:
            print(f"  {line}", file=sys.stderr)
        return 1
    return 0


def execute(
    todo: list[Task], ray_address: str | None, jobs: int, on_record: Callable[[dict[str, Any]], None]
) -> list[str]:
    """Run ``todo`` in local worker processes, or on Ray; each finished run is written and its record passed on.

    :return: the runs that failed, one line each (Ray only: a local failure stops the benchmark with its error).
    """
    if ray_address is not None:
        from zoo.ray_backend import run_on_ray

        return run_on_ray(todo, ray_address, jobs, on_record)
    with terminated_as_interrupted(), multiprocessing.get_context("spawn").Pool(min(jobs, len(todo))) as pool:
        for record in pool.imap_unordered(run_task, todo):
            on_record(record)
            print(
                f"done {record['algo']} {record['env_id']} seed {record['seed']}: "
                f"{record['mean_reward']:.1f} +/- {record['std_reward']:.1f} in {record['train_seconds']:.0f} s",
                flush=True,
            )
    return []


@contextlib.contextmanager
def terminated_as_interrupted() -> Iterator[None]:
    """SIGTERM (``kill``, a scheduler's preemption) handled as Ctrl-C while the worker processes run: the pool is
    terminated with its workers and the finished runs are kept. By default SIGTERM would end the driver alone and
    leave each worker training on, unwatched, to a result nobody collects."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set a handler
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
