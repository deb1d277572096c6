"""Hyperparameter search for Reinforce, measured exactly as ``python -m zoo benchmark`` measures.

Each candidate is a named set of overrides on top of the zoo's entry for the env (``zoo/hyperparams/reinforce.yml``,
through :func:`zoo.config.get_config`). Each (env, candidate, seed) trains with :func:`zoo.measure.measured_run` in a
worker process (1 torch thread), evaluating every ``n_timesteps / 20`` steps on 5 deterministic episodes (the
learning curve) and at the end on 20 deterministic episodes (the final score, the number the targets are about).

Resumable: each finished run is saved to ``benchmarks/results/tuning/<env>/<candidate>_seed<k>.json`` and skipped
when rerun; a candidate's name identifies it, so a changed candidate needs a new name (a saved result whose
overrides or resolved configuration differ from the candidate's is reported and rerun with ``--force`` only). A
corrupt or half-written result is reported, left out of the table and run again.

Candidates come from ``--config NAME=YAML`` (a YAML/JSON mapping of overrides, e.g.
``--config 'lr3=learning_rate: lin_3e-3'``) and/or ``--candidates FILE.yml`` (a mapping of names to overrides,
or of env ids to such mappings). ``--config NAME`` alone reuses the overrides saved for that name.

Usage::

    python benchmarks/tune_reinforce.py --env CartPole-v1 --seeds 0 1 \\
        --config 'mean16={learning_rate: lin_3e-3, baseline: mean, n_episodes: 16}'
    python benchmarks/tune_reinforce.py --env CartPole-v1 --summary   # table of everything saved for the env
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from _common import read_record, save_record

from zoo.config import get_config
from zoo.errors import ZooError
from zoo.measure import measured_run

RESULTS = Path(__file__).resolve().parent / "results" / "tuning"
NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")
TARGETS = {
    "CartPole-v1": 500.0,
    "Acrobot-v1": -90.0,
    "LunarLander-v3": 200.0,
    "Pendulum-v1": -250.0,
    "MountainCarContinuous-v0": 90.0,
}


def result_path(env_id: str, name: str, seed: int) -> Path:
    return RESULTS / env_id / f"{name}_seed{seed}.json"


def run_one(env_id: str, name: str, overrides: dict[str, Any], seed: int) -> dict[str, Any]:
    """Train and evaluate one (env, candidate, seed) and save its JSON. Runs in a worker process."""
    import torch as th

    th.set_num_threads(1)
    config = get_config("reinforce", env_id, overrides)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        _, scores = measured_run(config, seed, scratch, "python benchmarks/tune_reinforce.py")
    record = {
        "env_id": env_id,
        "name": name,
        "overrides": overrides,
        "seed": seed,
        "config": config.to_data(seed),
        **scores,
        "wall_seconds": time.perf_counter() - started,
    }
    save_record(result_path(env_id, name, seed), record)
    return record


def _run_task(task: tuple[str, str, dict[str, Any], int]) -> tuple[tuple[str, str, int], dict[str, Any] | str]:
    env_id, name, overrides, seed = task
    try:
        return (env_id, name, seed), run_one(env_id, name, overrides, seed)
    except Exception as error:  # report and go on with the other runs
        return (env_id, name, seed), f"{type(error).__name__}: {error}"


def numbers(value: Any) -> Any:
    """YAML 1.1 reads ``1e-2`` and ``3e5`` as strings; a user means numbers there (as ``zoo train`` does)."""
    if isinstance(value, dict):
        return {key: numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [numbers(item) for item in value]
    if isinstance(value, str):
        for number in (int, float):
            try:
                return number(value)
            except ValueError:
                continue
    return value


def load_candidates(env_id: str, files: list[str], configs: list[str]) -> dict[str, dict[str, Any]]:
    candidates: dict[str, dict[str, Any]] = {}
    for file in files:
        data = yaml.safe_load(Path(file).read_text()) or {}
        if not isinstance(data, dict):
            raise ZooError(f"{file}: expected a mapping of candidate names to overrides")
        if env_id in data and isinstance(data[env_id], dict):
            data = data[env_id]
        elif any("-v" in key for key in data):
            data = {}  # a per-env file without this env
        candidates.update(data)
    for item in configs:
        name, sep, text = item.partition("=")
        if sep:
            value = yaml.safe_load(text)
            candidates[name] = {} if value is None else value
        else:
            saved = [read_record(path) for path in sorted((RESULTS / env_id).glob(f"{name}_seed*.json"))]
            overrides = next((r["overrides"] for r in saved if r is not None and "overrides" in r), None)
            if overrides is None:
                raise ZooError(f"--config {name}: no overrides given and none saved for {env_id}")
            candidates[name] = overrides
    candidates = {name: numbers(overrides) for name, overrides in candidates.items()}
    for name, overrides in candidates.items():
        if not NAME.match(name):
            raise ZooError(f"candidate name {name!r} must match {NAME.pattern}")
        if not isinstance(overrides, dict):
            raise ZooError(f"candidate {name}: overrides must be a mapping, got {overrides!r}")
        get_config("reinforce", env_id, overrides)  # validate before any training starts
    return candidates


def load_results(env_id: str) -> list[dict[str, Any]]:
    records = [read_record(path) for path in sorted((RESULTS / env_id).glob("*_seed*.json"))]
    return [record for record in records if record is not None]


def solved_at(record: dict[str, Any], threshold: float | None) -> int | None:
    """First curve point (5 deterministic episodes) at or above the threshold."""
    if threshold is None:
        return None
    for step, reward in zip(record["curve_timesteps"], record["curve_mean_reward"], strict=True):
        if reward >= threshold:
            return int(step)
    return None


def summarize(env_id: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(record["name"], []).append(record)
    threshold = TARGETS.get(env_id)
    rows = []
    for name, runs in groups.items():
        runs.sort(key=lambda run: run["seed"])
        scores = np.array([run["mean_reward"] for run in runs])
        first = [solved_at(run, threshold) for run in runs]
        rows.append(
            {
                "name": name,
                "seeds": [run["seed"] for run in runs],
                "scores": scores.tolist(),
                "mean": float(scores.mean()),
                "std": float(scores.std()),
                "min": float(scores.min()),
                "n_timesteps": int(np.median([run["n_timesteps"] for run in runs])),
                "train_seconds": float(np.mean([run["train_seconds"] for run in runs])),
                "first_at_target": first,
                "overrides": runs[0]["overrides"],
            }
        )
    rows.sort(key=lambda row: (-row["mean"], -row["min"]))
    return rows


def print_table(env_id: str, rows: list[dict[str, Any]]) -> None:
    target = TARGETS.get(env_id)
    print(f"\n== {env_id} (target {target}; final 20-episode deterministic score per seed) ==")
    print(f"{'candidate':<28} {'n':>2} {'mean':>8} {'std':>7} {'min':>8} {'steps':>9} {'train s':>8}  per-seed")
    for row in rows:
        per_seed = ", ".join(f"{score:.1f}" for score in row["scores"])
        reached = ", ".join("-" if step is None else f"{step // 1000}k" for step in row["first_at_target"])
        print(
            f"{row['name']:<28} {len(row['scores']):>2} {row['mean']:>8.1f} {row['std']:>7.1f} {row['min']:>8.1f} "
            f"{row['n_timesteps']:>9,} {row['train_seconds']:>8.1f}  [{per_seed}]  curve>=target at [{reached}]"
        )
        print(f"{'':<28}    {json.dumps(row['overrides'], sort_keys=True)}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", required=True, action="append", help="env id (repeatable)")
    parser.add_argument("--config", action="append", default=[], metavar="NAME=YAML", help="a candidate")
    parser.add_argument("--candidates", action="append", default=[], metavar="FILE", help="YAML file of candidates")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="seeds to run")
    parser.add_argument("--jobs", type=int, default=2, help="training processes at a time (<= 2 on this machine)")
    parser.add_argument("--force", action="store_true", help="rerun a saved result whose overrides differ")
    parser.add_argument("--summary", action="store_true", help="only print the table of saved results")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    tasks = []
    for env_id in args.env:
        if args.summary:
            continue
        candidates = load_candidates(env_id, args.candidates, args.config)
        for name, overrides in candidates.items():
            for seed in args.seeds:
                saved = read_record(result_path(env_id, name, seed))
                if saved is not None:
                    # Keyed by everything that defines the run: the overrides and the configuration they resolve to.
                    expected = get_config("reinforce", env_id, overrides).to_data(seed)
                    same = saved.get("overrides") == overrides and saved.get("config") == expected
                    if same or not args.force:
                        if not same:
                            print(
                                f"skip {env_id}/{name} seed {seed}: saved with another configuration "
                                f"(overrides {saved.get('overrides')}); --force runs it again"
                            )
                        continue
                tasks.append((env_id, name, overrides, seed))
    if tasks:
        print(f"{len(tasks)} runs to do, {args.jobs} at a time", flush=True)
        context = multiprocessing.get_context("spawn")
        with context.Pool(args.jobs, maxtasksperchild=1) as pool:
            for (env_id, name, seed), outcome in pool.imap_unordered(_run_task, tasks):
                if isinstance(outcome, str):
                    print(f"FAILED {env_id}/{name} seed {seed}: {outcome}", flush=True)
                else:
                    print(
                        f"done {env_id}/{name} seed {seed}: {outcome['mean_reward']:.1f} +/- "
                        f"{outcome['std_reward']:.1f} ({outcome['train_seconds']:.0f} s)",
                        flush=True,
                    )
    for env_id in args.env:
        print_table(env_id, summarize(env_id, load_results(env_id)))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ZooError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
