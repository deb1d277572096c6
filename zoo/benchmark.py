"""``python -m zoo benchmark``: train every env over several seeds and write the results table.

Each finished (algorithm, env, seed) run is saved under ``OUT/runs/<algo>/<env>/seed<k>/`` (result.json, the
final model with its config.yml and VecNormalize statistics) and skipped on the next invocation, so a long table
is completed across sessions. A run is reused only if its config.yml is the configuration this invocation would
train (the budget of ``--n-timesteps`` included); a run of another configuration is refused rather than mixed
into the table, and a corrupt or half-written result.json is reported and measured again. The table is rebuilt
from the runs of the invocation: ``OUT/benchmark.md``, ``OUT/benchmark.csv`` and one learning-curve plot per env
in ``OUT/plots/``. OUT is ``benchmarks/results/zoo`` unless ``--out`` names another folder: measured results stay
outside the package.

What is measured: each run trains with the zoo's hyperparameters, evaluates every ``n_timesteps / 20`` steps on
5 deterministic episodes (the learning curve), and at the end on 20 deterministic episodes (the final score).
The table reports, across seeds, the mean +/- std and the interquartile mean of the per-seed final scores, and
the mean training wall-clock per seed (evaluations excluded).
"""

from __future__ import annotations

import argparse
import csv
import json
import multiprocessing
import os
import shlex
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from zoo.algos import ALGOS
from zoo.checks import shown
from zoo.config import (
    check_budget_flag,
    check_env_id,
    get_config,
    known_env_ids,
    load_file,
    parse_overrides,
    read_yaml_file,
)
from zoo.errors import ZooError, first_line
from zoo.folders import make_folder, move_into_place, write_atomically
from zoo.measure import FINAL_EVAL_EPISODES, check_record, measured_run
from zoo.runs import CONFIG_YML, RESULT_FILE, VEC_NORMALIZE_PKL

QUICK_ENVS = ["CartPole-v1"]
QUICK_TIMESTEPS = 20_000
# The measured results live beside the other benchmark results, outside the package.
DEFAULT_OUT = "benchmarks/results/zoo"


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

    def overrides(self) -> dict[str, Any]:
        budget = {} if self.n_timesteps is None else {"n_timesteps": self.n_timesteps}
        return {**dict(self.hyperparams), **budget}

    def config_data(self) -> dict[str, Any]:
        """The config.yml this run writes: everything that defines it."""
        return get_config(self.algo, self.env_id, self.overrides()).to_data(self.seed)


def train_to_staging(task: Task, scratch: Path) -> tuple[dict[str, Any], Path]:
    """Train and evaluate one (algo, env, seed) in ``scratch``; return its record and the folder of its files."""
    import torch as th

    th.set_num_threads(1)
    config = get_config(task.algo, task.env_id, task.overrides())
    command = f"python -m zoo benchmark --envs {task.env_id}" + hyperparams_flag(task.hyperparams)
    result, scores = measured_run(config, task.seed, str(scratch), command)
    record = check_record({"algo": task.algo, "env_id": task.env_id, "seed": task.seed, **scores})
    staging = scratch / "staging"
    staging.mkdir()
    for name in (result.model_path.name, CONFIG_YML, VEC_NORMALIZE_PKL):
        if (result.run_dir / name).exists():
            shutil.copy2(result.run_dir / name, staging / name)
    (staging / RESULT_FILE).write_text(json.dumps(record, indent=1))
    return record, staging


def run_task(task: Task) -> dict[str, Any]:
    """One run in a local worker process, its folder written atomically."""
    with tempfile.TemporaryDirectory() as scratch:
        record, staging = train_to_staging(task, Path(scratch))
        # Moved into place only when complete, so an interrupted run is redone rather than half-counted.
        move_into_place(staging, task.folder)
    return record


def hyperparams_flag(hyperparams: tuple[tuple[str, Any], ...]) -> str:
    """`` --hyperparams k=v ...`` as typed, or nothing."""
    if not hyperparams:
        return ""
    # JSON is YAML, so each value reads back as it was parsed; strings such as lin_3e-3 stay bare.
    pairs = (f"{key}={value if isinstance(value, str) else json.dumps(value)}" for key, value in hyperparams)
    return " --hyperparams " + " ".join(shlex.quote(pair) for pair in pairs)


def interquartile_mean(values: list[float]) -> float:
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    n = len(ordered)
    cut = n // 4
    return float(ordered[cut : n - cut].mean())


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


def config_difference(stored: Any, expected: dict[str, Any]) -> str:
    """The first field where a run's config.yml differs from the configuration asked for, in words."""
    if not isinstance(stored, dict):
        return "no readable config.yml"
    for key in sorted(expected.keys() | stored.keys()):
        if key == "hyperparams" and isinstance(stored.get(key), dict):
            inner = config_difference(stored[key], expected.get(key) or {})
            if inner:
                return inner
        elif stored.get(key) != expected.get(key):
            return f"{key} {stored.get(key)!r}, now {expected.get(key)!r}"
    return ""


def plan(tasks: list[Task]) -> tuple[list[Task], list[dict[str, Any]]]:
    """The tasks still to run and the records to reuse.

    A corrupt result.json is reported and its run measured again; a finished run of another configuration
    (config.yml differs, e.g. another ``--n-timesteps``) is refused, all of them named in one ZooError.
    """
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
    if mismatched:
        raise ZooError(
            f"{len(mismatched)} finished runs were measured with another configuration, e.g. {mismatched[0]}; "
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
        rows.append(
            {
                "env": env_id,
                "algorithm": algo,
                "n_timesteps": int(np.median([run["n_timesteps"] for run in runs])),
                "seeds": len(runs),
                "mean": float(np.mean(scores)),
                "std": float(np.std(scores)),
                "iqm": interquartile_mean(scores),
                "train_seconds": float(np.mean([run["train_seconds"] for run in runs])),
                "train_cpu_seconds": float(np.mean([run["train_cpu_seconds"] for run in runs])),
            }
        )
    return rows


def machines_line(records: list[dict[str, Any]]) -> str:
    """Which CPUs the runs were measured on: wall-clock, and past a few hundred thousand steps of a chaotic env
    even the scores, depend on it (``zoo.machine``)."""
    counts = Counter(record.get("cpu", "not recorded") for record in records)
    return "Machines: " + "; ".join(f"{cpu}: {n} runs" for cpu, n in sorted(counts.items())) + "."


def write_table(rows: list[dict[str, Any]], out: Path, command: str, machines: str) -> None:
    """``benchmark.csv`` and ``benchmark.md`` in ``out``, each replaced whole (a failed write keeps the old one)."""

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
        "Columns: mean +/- std and interquartile mean (IQM) of those per-seed scores; wall-clock is the mean "
        "training time per seed (evaluations excluded), one process per run, 1 torch thread; CPU is that "
        "process's CPU time over the same span, closer to what an idle core would take (the wall-clock grows "
        "with the machine's load, the CPU time much less).",
        "",
        machines,
        "",
        "| env | algorithm | n_timesteps | seeds | mean +/- std | IQM | wall-clock (s) | CPU (s) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['env']} | {r['algorithm']} | {r['n_timesteps']:,} | {r['seeds']} | {r['mean']:.1f} +/- {r['std']:.1f} "
        f"| {r['iqm']:.1f} | {r['train_seconds']:.0f} | {r['train_cpu_seconds']:.0f} |"
        for r in rows
    ]
    text = "\n".join(lines) + "\n"
    write_atomically(out / "benchmark.md", lambda path: path.write_text(text, encoding="utf-8"), "results table")


def curve_range(means: np.ndarray) -> tuple[float, float]:
    """A y-range for the part of the learning curves that matters: from the 10th percentile of the mean curves'
    points to their maximum. The first evaluations of an untrained policy can be far lower (LunarLander-v3's
    -4000) and would squash everything else into a line; they are cut at the bottom edge."""
    low, high = float(np.percentile(means, 10)), float(means.max())
    margin = 0.08 * (high - low) or 1.0
    return low - margin, high + margin


def plot_curves(records: list[dict[str, Any]], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    folder = make_folder(out / "plots", "the plots folder")
    for env_id in sorted({r["env_id"] for r in records}):
        figure, axis = plt.subplots(figsize=(5, 3.2), dpi=80)
        means = []
        for algo in sorted({r["algo"] for r in records if r["env_id"] == env_id}):
            runs = [r for r in records if r["env_id"] == env_id and r["algo"] == algo and r["curve_timesteps"]]
            if not runs:
                continue
            length = min(len(r["curve_timesteps"]) for r in runs)
            steps = np.asarray(runs[0]["curve_timesteps"][:length])
            values = np.asarray([r["curve_mean_reward"][:length] for r in runs])
            mean, low, high = values.mean(axis=0), values.min(axis=0), values.max(axis=0)
            axis.plot(steps, mean, label=f"{algo} ({len(runs)} seeds)")
            axis.fill_between(steps, low, high, alpha=0.2)
            means.append(mean)
        if means:
            axis.set_ylim(*curve_range(np.concatenate(means)))
        axis.set_title(env_id)
        axis.set_xlabel("env steps")
        axis.set_ylabel("eval return (mean, min-max over seeds)")
        axis.legend(fontsize=7)
        figure.tight_layout()
        path = write_atomically(folder / f"{env_id}.png", figure.savefig, "learning-curve plot")
        plt.close(figure)
        written.append(path)
    return written


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m zoo benchmark", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--envs", nargs="*", default=None, help="env ids (default: every env of reinforce.yml; --quick: CartPole-v1)"
    )
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default: 5; --quick: 2)")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: the machine's cores)"
    )
    parser.add_argument(
        "--baselines",
        default="",
        help="comma-separated SB3 algorithms to run alongside, e.g. "
        "a2c,ppo (rl-baselines3-zoo's hyperparameters; default: none)",
    )
    parser.add_argument(
        "--table-only",
        action="store_true",
        help="train nothing: write the table of the runs already finished and list the others (default: off)",
    )
    parser.add_argument(
        "--baseline-seeds", type=int, default=None, help="seeds 0..N-1 for the baselines (default: --seeds)"
    )
    parser.add_argument("--n-timesteps", type=int, default=None, help="override every budget (default: tuned)")
    parser.add_argument(
        "--hyperparams",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="override Reinforce's hyperparameters (YAML values) for an ablation; the baselines keep theirs. "
        "Use another --out: a finished run of another configuration is refused (default: none)",
    )
    parser.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="run each (algorithm, env, seed) as a task on a Ray cluster: HOST:PORT, 'auto' (the cluster this "
        "machine joined with ray start) or 'local' (a private one for this run, --jobs CPUs); the results come "
        "back into --out. Needs the ray extra (default: local worker processes, no Ray)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"CI mode: {QUICK_TIMESTEPS} steps, 2 seeds, CartPole-v1, into a temporary folder",
    )
    parser.add_argument(
        "--out",
        default=None,
        help=f"results folder (default: {DEFAULT_OUT} in a checkout; --quick: a temporary folder)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
                f"interrupted: the finished runs are kept in {out / 'runs'}; the same command resumes", file=sys.stderr
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
    plot_curves(records, out)  # before the table: a plot that cannot be written leaves the previous table
    write_table(rows, out, command, machines_line(records) + (f"\n\n{missing}." if missing else ""))
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
    with multiprocessing.get_context("spawn").Pool(min(jobs, len(todo))) as pool:
        for record in pool.imap_unordered(run_task, todo):
            on_record(record)
            print(
                f"done {record['algo']} {record['env_id']} seed {record['seed']}: "
                f"{record['mean_reward']:.1f} +/- {record['std_reward']:.1f} in {record['train_seconds']:.0f} s",
                flush=True,
            )
    return []
