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

import argparse
import functools
import multiprocessing
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zoo.algos import ALGOS
from zoo.benchmark_table import (
    compare_suite,
    machines_line,
    plot_curves,
    plot_profile,
    suite_lines,
    summarize,
    write_table,
)
from zoo.bounds import MAX_SEEDS
from zoo.checkpoints import checkpointed_runs, read_checkpoint
from zoo.checks import shown
from zoo.config import config_difference, known_env_ids, load_file
from zoo.errors import ZooError
from zoo.factories import check_env_id
from zoo.folders import make_folder
from zoo.interrupts import run_in_worker, stopped_by_the_driver, terminated_as_interrupted
from zoo.measure import Task, hyperparams_flag, read_record, run_task
from zoo.parsers import DEFAULT_OUT, QUICK_TIMESTEPS, benchmark_parser, check_budget_flag, parse_overrides
from zoo.ray_backend import run_on_ray
from zoo.runs import CONFIG_YML, RESULT_FILE
from zoo.yaml_data import read_yaml_file

QUICK_ENVS = ["CartPole-v1"]


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


def main(argv: list[str] | None = None) -> int:
    args = benchmark_parser().parse_args(argv)
    algos = ["reinforce", *baseline_algos(args.baselines)]
    if args.envs == []:
        raise ZooError("--envs needs at least one env id (leave it out for every env of reinforce.yml)")
    check_budget_flag(args.n_timesteps)
    hyperparams = tuple(parse_overrides(args.hyperparams).items())
    envs = args.envs or (QUICK_ENVS if args.quick else known_env_ids())
    twice = sorted({env_id for env_id in envs if envs.count(env_id) > 1})
    if twice:
        raise ZooError(f"--envs names {', '.join(twice)} more than once: each env is benchmarked once")
    seeds = seed_counts(args.seeds, envs, dict.fromkeys(envs, 2 if args.quick else 5), "--seeds")
    baseline_seeds = seed_counts(args.baseline_seeds, envs, seeds, "--baseline-seeds")
    n_timesteps = args.n_timesteps or (QUICK_TIMESTEPS if args.quick else None)
    if min(*seeds.values(), *baseline_seeds.values()) < 1 or args.jobs < 1:
        raise ZooError("--seeds, --baseline-seeds and --jobs must be >= 1")
    for env_id in envs:
        check_env_id(env_id)
    out = results_folder(args.out, args.quick)
    tasks = [
        Task(algo, env_id, seed, n_timesteps, str(out), hyperparams if algo == "reinforce" else ())
        for env_id in envs
        for algo in algos_with_hyperparams(algos, env_id)
        for seed in range((seeds if algo == "reinforce" else baseline_seeds)[env_id])
    ]
    todo, records = plan(tasks)
    where = f"on Ray ({args.ray})" if args.ray else f"with {args.jobs} workers"
    print(f"{len(tasks)} runs, {len(tasks) - len(todo)} already done, {len(todo)} to do {where}")
    failed: list[str] = []
    if todo and not args.table_only:
        try:
            failed = execute(todo, args.ray, args.jobs, records.append)
        except KeyboardInterrupt:
            # On Ray the others start over: their checkpoints were in the nodes' scratch folders, now removed.
            others = (
                "the others start over" if args.ray else "the others' last checkpoints in their seed<k>.partial folders"
            )
            print(
                f"interrupted: the finished runs are kept in {out / 'runs'}, {others}; the same command resumes",
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
    command = reproduce_command(args, hyperparams)
    # The table first: a plot that cannot be drawn (curves of +/-1e308) costs that plot alone, said in a line.
    machines = machines_line(records) + (f"\n\n{missing}." if missing else "")
    write_table(rows, out, command, machines, suite_lines(suite) if suite is not None else [])
    plot_curves(records, out)
    if suite is not None and suite.tasks:
        plot_profile(suite, out)
    print((out / "benchmark.md").read_text())
    print(f"results in {out}")
    if failed:
        print(f"{len(failed)} runs failed (the same command retries them):", file=sys.stderr)
        for line in failed:
            print(f"  {line}", file=sys.stderr)
        return 1
    return 0


def baseline_algos(baselines: str) -> list[str]:
    """``--baselines a2c,ppo`` as algorithm names, each one the zoo knows."""
    algos = [name.strip() for name in baselines.split(",") if name.strip()]
    for algo in algos:
        if algo not in ALGOS:
            raise ZooError(f"unknown baseline {shown(algo)}; known: {', '.join(a for a in ALGOS if a != 'reinforce')}")
    return algos


def results_folder(out_flag: str | None, quick: bool) -> Path:
    """The folder of the results (``--out``; a temporary one for ``--quick`` without it), created, with a writable
    plots folder."""
    temporary = tempfile.mkdtemp(prefix="zoo-benchmark-") if quick and out_flag is None else None
    if out_flag is None and temporary is None and not Path(DEFAULT_OUT).is_dir():
        # The default is the checkout's committed results: elsewhere it would scatter a results tree wherever
        # the command happens to run.
        raise ZooError(
            f"--out is needed here: the default, {DEFAULT_OUT}, is the folder of a checkout of sb3-reinforce"
        )
    out = make_folder(out_flag or temporary or DEFAULT_OUT, "--out")
    # Checked before the first run, so a plots folder that cannot be written costs no training.
    plots = make_folder(out / "plots", "the plots folder")
    if not os.access(plots, os.W_OK | os.X_OK):
        raise ZooError(f"the plots folder {plots} is not writable")
    return out


def seed_counts(
    items: list[int | tuple[str, int]] | None, envs: list[str], defaults: dict[str, int], flag: str
) -> dict[str, int]:
    """The number of seeds for each env of ``envs`` from ``FLAG N ENV=N ...``: N for every env, ENV=N for one that
    takes another number (the core MuJoCo tasks take 10 in the results); ``defaults`` where the flag says nothing."""
    counts = [item for item in items or [] if isinstance(item, int)]
    if len(counts) > 1:
        raise ZooError(f"{flag} takes one number for every env and ENV=N for others, got {counts[0]} and {counts[1]}")
    pairs = [item for item in items or [] if isinstance(item, tuple)]
    per_env = dict(pairs)
    if len(per_env) < len(pairs):
        twice = next(env_id for env_id, _ in pairs if sum(other == env_id for other, _ in pairs) > 1)
        raise ZooError(f"{flag} names {twice} twice: give each env one number of seeds")
    too_many = [count for count in [*counts, *per_env.values()] if count > MAX_SEEDS]
    if too_many:
        raise ZooError(f"{flag} takes at most {MAX_SEEDS:,} seeds an env, got {too_many[0]:,}")
    unknown = sorted(set(per_env) - set(envs))
    if unknown:
        raise ZooError(f"{flag} names {unknown[0]}, which is not among the envs benchmarked: {', '.join(envs)}")
    return {env_id: per_env.get(env_id, counts[0] if counts else defaults[env_id]) for env_id in envs}


def algos_with_hyperparams(algos: list[str], env_id: str) -> list[str]:
    """The algorithms of ``algos`` that have an entry for ``env_id``: a baseline without one is skipped, and said."""
    kept = []
    for algo in algos:
        if algo != "reinforce" and env_id not in load_file(algo):
            print(f"skip {algo} on {env_id}: no published hyperparameters")
            continue
        kept.append(algo)
    return kept


def seeds_flag(flag: str, items: list[int | tuple[str, int]] | None) -> str:
    """``--seeds`` or ``--baseline-seeds`` as it was given (nothing when it was not)."""
    if items is None:
        return ""
    return f" {flag} " + " ".join(str(item) if isinstance(item, int) else f"{item[0]}={item[1]}" for item in items)


def reproduce_command(args: argparse.Namespace, hyperparams: tuple[tuple[str, Any], ...]) -> str:
    """The command that reproduces the table, as the table states it: the flags that were given."""
    command = "python -m zoo benchmark" + (" --quick" if args.quick else "")
    if args.envs:
        command += " --envs " + " ".join(args.envs)
    command += seeds_flag("--seeds", args.seeds)
    if args.baselines:
        command += f" --baselines {args.baselines}"
    command += seeds_flag("--baseline-seeds", args.baseline_seeds)
    if args.n_timesteps is not None:
        command += f" --n-timesteps {args.n_timesteps}"
    command += hyperparams_flag(hyperparams)
    if args.out is not None:
        command += f" --out {shlex.quote(args.out)}"
    return command


def execute(
    todo: list[Task], ray_address: str | None, jobs: int, on_record: Callable[[dict[str, Any]], None]
) -> list[str]:
    """Run ``todo`` in local worker processes, or on Ray; each finished run is written and its record passed on.

    :return: the runs that failed, one line each (Ray only: a local failure stops the benchmark with its error).
    """
    if ray_address is not None:
        return run_on_ray(todo, ray_address, jobs, on_record)
    # Interrupted, the pool's exit terminates the workers and waits for them: each saves its run as it is first.
    context = multiprocessing.get_context("spawn")
    with terminated_as_interrupted(), context.Pool(min(jobs, len(todo)), initializer=stopped_by_the_driver) as pool:
        for record in pool.imap_unordered(functools.partial(run_in_worker, run_task), todo):
            on_record(record)
            print(
                f"done {record['algo']} {record['env_id']} seed {record['seed']}: "
                f"{record['mean_reward']:.1f} +/- {record['std_reward']:.1f} in {record['train_seconds']:.0f} s",
                flush=True,
            )
        # Every task is done: let the workers exit on their own before the pool's exit, whose terminate() would
        # send SIGTERM to workers already running torch's exit handlers ("Exception ignored ... SystemExit: 1").
        pool.close()
        pool.join()
    return []
