"""``python -m zoo tune [run|report|export]``: search an env's hyperparameters with Optuna, on this machine or on
many at once.

``run`` (the default) runs trials. With no --storage the study lives in LOG_FOLDER/tune/STUDY/study.journal and
rerunning the command resumes it. With --storage URL (postgresql://user:password@host/db, or any URL SQLAlchemy
takes) the same command run on other machines joins the same study. --trials is the study's total of trials done
(complete or pruned). ``report`` prints the best trials and writes the plots; ``export [PATH]`` writes the best
trial as a zoo entry; both only read the study.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import optuna

from zoo.bounds import check_seed
from zoo.checks import shown
from zoo.config import get_config
from zoo.errors import ZooError
from zoo.factories import check_env_id
from zoo.folders import check_file_path, check_folder_path, make_folder, write_atomically
from zoo.parsers import TUNE_EXPORT_FILE, check_budget_flag, parse_overrides, parse_tune
from zoo.runs import env_slug
from zoo.tune.objective import INTERRUPTED, OVERRIDES_ATTR, SETUP_ATTR, Setup
from zoo.tune.orphans import FAIL_REASON_ATTR
from zoo.tune.report import complete_trials, export, plots, summary, table
from zoo.tune.space import fixed_params, load_space
from zoo.tune.storage import StorageSpec, study_folder
from zoo.tune.workers import (
    Counts,
    Plan,
    Progress,
    describe,
    make_pruner,
    make_sampler,
    one_line_yaml,
    run_processes,
    work,
)
from zoo.yaml_data import safe_yaml, yaml_numbers

# A study's name is a folder name too (and a column of Optuna's RDB schema): bounded well under both limits.
MAX_STUDY_NAME = 128


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_tune(argv)
    check_env_id(args.env)
    if args.command == "run":
        check_run_options(args)
    study_name = checked_study_name(args.study or f"{args.algo}-{env_slug(args.env)}")
    folder = study_folder(check_folder_path(args.log_folder, "--log-folder"), study_name)
    if args.command == "run":
        return run(args, argv, study_name, folder)
    export_path = None
    if args.command == "export":
        # The study's own best.yml is the zoo's file, beside its plots; a PATH the user names may be theirs.
        own = args.path is None
        export_path = check_export_path(folder / TUNE_EXPORT_FILE if own else Path(args.path), own or args.force)
    spec = StorageSpec.parse(args.storage, folder, None, None)
    check_study_exists(study_name, spec)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return read_study(study_name, spec, folder, args.command == "report", export_path)


def check_run_options(args: argparse.Namespace) -> None:
    """A ZooError naming the first of ``tune run``'s numbers out of its range."""
    for name in ("trials", "jobs", "seeds"):
        if getattr(args, name) < 1:
            raise ZooError(f"--{name} must be >= 1, got {getattr(args, name)}")
    check_budget_flag(args.n_timesteps)
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout >= 0):
        raise ZooError(f"--timeout must be a number of seconds >= 0, got {args.timeout}")


def run(args: argparse.Namespace, argv: list[str], study_name: str, folder: Path) -> int:
    """``tune run``: trials of the study until it has ``--trials`` done, on ``--jobs`` processes here; 130 if
    interrupted, 1 if it stopped short."""
    spec = StorageSpec.parse(args.storage, folder, args.heartbeat_interval, args.grace_period)
    # Every input is checked before the storage is opened (or its folder created).
    setup = run_setup(args)
    enqueued = [parse_enqueued(setup, text) for text in args.enqueue]
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # each finished trial gets one line from Progress instead
    storage = spec.open()
    with spec.lost_as_error(spec.file_identity()):  # a database that goes away mid-study: one line
        study = open_study(study_name, storage, setup, args, spec)
        for text, (overrides, params) in zip(args.enqueue, enqueued, strict=True):
            print(enqueue(study, text, overrides, params))
        counts = Counts.of(study.get_trials(deepcopy=False))
        print(header(study, setup, spec, args, counts.done, argv))
        plan = Plan(
            setup=setup,
            storage=spec,
            study_name=study_name,
            target=args.trials,
            deadline=None if args.timeout is None else time.time() + args.timeout,
            max_failures=args.trials,
            sampler=args.sampler,
            pruner=args.pruner,
        )
        progress = Progress(args.trials)
        started = time.perf_counter()
        try:
            if args.jobs == 1:
                import torch as th

                th.set_num_threads(1)
                work(plan, storage, on_poll=progress.poll)
            else:
                codes = run_processes(plan, args.jobs, progress, study)
                for k, code in enumerate(codes):
                    if code != 0:
                        print(f"worker {k} exited with status {code}", file=sys.stderr)
        except KeyboardInterrupt:
            progress.close()
            print(f"\ninterrupted: {summary(study)}; rerun the same command to resume", file=sys.stderr)
            return 130
        finally:
            progress.close()
        return finish(study, args, spec, started)


def checked_study_name(study_name: str) -> str:
    """``study_name`` if it can be a folder's name; a ZooError saying why not otherwise."""
    if not study_name or "/" in study_name or study_name.startswith(".") or len(study_name) > MAX_STUDY_NAME:
        raise ZooError(
            f"--study {shown(study_name)}: a study name is also a folder "
            f"name: at most {MAX_STUDY_NAME} characters, without '/', not starting with '.'"
        )
    return study_name


def check_study_exists(study_name: str, spec: StorageSpec) -> None:
    """A ZooError where the study to read has no journal or SQLite file (opening one would create it)."""
    if spec.url is None and not Path(str(spec.journal)).is_file():
        raise ZooError(
            f"no study {shown(study_name)}: {spec.journal} does not exist (--study, --log-folder, --storage?)"
        )
    database = spec.sqlite_file()
    if database is not None and not database.is_file():
        # Opening a SQLite URL creates the file: reading a study must not leave an empty database behind.
        raise ZooError(f"no study {shown(study_name)}: the SQLite database {database} does not exist (--storage?)")


def run_setup(args: argparse.Namespace) -> Setup:
    """What every trial of a ``tune run`` shares: the entry with its overrides, the search space and the seeds."""
    overrides = parse_overrides(args.hyperparams)
    if args.n_timesteps is not None:
        overrides["n_timesteps"] = args.n_timesteps
    base = get_config(args.algo, args.env, overrides)
    check_seed(args.first_seed, "--first-seed")
    last = args.first_seed + args.seeds - 1
    check_seed(last, f"the last seed (--first-seed {args.first_seed} + --seeds {args.seeds} - 1)")
    space = load_space(args.algo, args.env, args.space)
    return Setup(args.algo, args.env, base.to_data(), space, args.seeds, args.first_seed)


def finish(study: optuna.Study, args: argparse.Namespace, spec: StorageSpec, started: float) -> int:
    """The run's last lines: its summary, its best trial, the commands that read the study; 1 if it stopped short
    of ``--trials``."""
    minutes = (time.perf_counter() - started) / 60
    counts = Counts.of(study.get_trials(deepcopy=False))
    print(f"{summary(study)} ({minutes:.1f} min)")
    print(best_line(study))
    study_args = ["--env", args.env, "--study", study.study_name, *storage_args(args, spec)]
    report, best = (
        shlex.join(["python", "-m", "zoo", "tune", command, *study_args]) for command in ("report", "export")
    )
    print(f"report and plots: {report}\nbest as a zoo entry: {best}")
    if counts.done < args.trials:
        print(f"stopped with {counts.done} of {args.trials} trials done; rerun the same command to go on")
        return 1
    return 0


def check_export_path(path: Path, replace: bool) -> Path:
    """``path`` if the exported entry may be written there: a new file, or a regular file that ``replace`` allows
    to replace. A link, a device or a pipe is refused: the entry, renamed into place, would replace it."""
    check_file_path(path, "tune export")
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise ZooError(f"tune export {path} is not a regular file (a link, a device, a pipe): name a file")
    if path.exists() and not replace:
        raise ZooError(
            f"tune export {path} exists, and an export is one entry, not a whole hyperparameter file: "
            f"`python -m zoo tune export {shlex.quote(str(path))} --force` replaces it"
        )
    return path


def read_study(study_name: str, spec: StorageSpec, folder: Path, report: bool, export_path: Path | None) -> int:
    """``tune report`` and ``tune export``: read the study, and leave its storage as it was.

    A journal damaged in its middle (see :func:`zoo.tune.storage.read_journal`) is reported as its lines before
    the damage left the study, with a warning naming the line; it is not exported: the entry's ``# Tuned`` comment
    would call the best of a part of the study the study's best.
    """
    storage, damage = spec.open_to_read()
    with spec.lost_as_error(spec.file_identity()):
        if damage is not None and export_path is not None:
            raise ZooError(
                f"{damage.where}: Optuna cannot read the study past it, so its best trial is unknown; "
                f"{damage.prefix} and --storage NEW export the best of the lines before it"
            )
        study = existing_study(study_name, storage, spec)
        if damage is not None:
            print(
                f"warning: {damage.where}; Optuna cannot read past it: this is the study as its first "
                f"{damage.line - 1} lines left it ({damage.lines_after} lines after it not read)",
                file=sys.stderr,
            )
        if report:
            print(table(study))
            for line in plots(study, folder):
                print(line)
        if export_path is not None:
            text = export(study)
            make_folder(export_path.parent, "the folder of tune export's PATH")
            write_atomically(export_path, lambda path: path.write_text(text, encoding="utf-8"), "exported entry")
            print(text, end="")
            print(f"wrote {export_path}")
    return 0


def storage_args(args: argparse.Namespace, spec: StorageSpec) -> list[str]:
    """--storage and --log-folder as this command was given them, the storage's password hidden."""
    storage = [] if args.storage is None else ["--storage", spec.shown]
    return storage + ([] if args.log_folder == "logs" else ["--log-folder", args.log_folder])


def existing_study(name: str, storage: optuna.storages.BaseStorage, spec: StorageSpec) -> optuna.Study:
    """The zoo's study of this name, to read; ZooError if there is none, or if another tool made it."""
    try:
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        names = [summary.study_name for summary in optuna.get_all_study_summaries(storage)]
        raise ZooError(f"no study {shown(name)} in {spec.shown}; studies there: {', '.join(names) or 'none'}") from None
    setup_record(study, spec)
    return study


# How long a command joining a study without trials waits for the setup record of the zoo command that has just
# created it (the record is written a moment after the study, in its own transaction).
SETUP_WAIT_SECONDS = 10.0


def setup_record(study: optuna.Study, spec: StorageSpec) -> Any:
    """The setup the zoo recorded when it created ``study``; ZooError naming the study if it has none: another
    tool made a study of the same name in a shared storage, and its trials are not the zoo's."""
    deadline = time.monotonic() + SETUP_WAIT_SECONDS
    while True:
        recorded = study.user_attrs.get(SETUP_ATTR)
        if recorded is not None:
            return recorded
        if study.get_trials(deepcopy=False) or time.monotonic() >= deadline:
            raise ZooError(
                f"study {shown(study.study_name)} in {spec.shown} was not created by the zoo (it has no setup record "
                "of ours): another tool's study of the same name is neither joined nor read; give another --study"
            )
        time.sleep(0.2)


def open_study(
    name: str, storage: optuna.storages.BaseStorage, setup: Setup, args: argparse.Namespace, spec: StorageSpec
) -> optuna.Study:
    """Create the study with the setup record, or join the zoo's study of this name after checking that it was
    created for the same setup; a study of this name that the zoo did not create is refused."""
    sampler, pruner = make_sampler(args.sampler), make_pruner(args.pruner, int(setup.base["n_timesteps"]))
    wanted = json.loads(json.dumps(setup.to_data()))
    try:
        study = optuna.create_study(
            storage=storage, study_name=name, direction="maximize", sampler=sampler, pruner=pruner
        )
    except optuna.exceptions.DuplicatedStudyError:
        study = optuna.load_study(study_name=name, storage=storage, sampler=sampler, pruner=pruner)
    else:
        study.set_user_attr(SETUP_ATTR, wanted)
        return study
    recorded = setup_record(study, spec)
    if recorded != wanted:
        raise ZooError(
            f"study {shown(name)} was created with other options: {'; '.join(differences(recorded, wanted)[:4])}. "
            "Give the study's own --n-timesteps, --hyperparams, --space, --seeds and --first-seed to resume it, or "
            "another --study"
        )
    return study


def differences(recorded: Any, wanted: Any, path: str = "") -> list[str]:
    """Where two setups differ, as 'path: study X, this command Y'."""
    if isinstance(recorded, dict) and isinstance(wanted, dict):
        found = []
        for key in dict.fromkeys([*recorded, *wanted]):
            found += differences(recorded.get(key), wanted.get(key), f"{path}.{key}" if path else str(key))
        return found
    return [] if recorded == wanted else [f"{path}: study {shown(recorded)}, this command {shown(wanted)}"]


def parse_enqueued(setup: Setup, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """An ``--enqueue`` text as its overrides of the entry and the study's parameters that run them; ZooError if
    it is not a mapping of hyperparameters that the study can run."""
    overrides = yaml_numbers(safe_yaml(text, f"--enqueue {shown(text)}"))
    if not isinstance(overrides, dict) or not overrides:
        raise ZooError(f"--enqueue takes a YAML mapping of hyperparameters, got {shown(text)}")
    if "n_timesteps" in overrides:
        raise ZooError("--enqueue: n_timesteps is the study's budget (--n-timesteps), the same for every trial")
    config = setup.base_config.with_overrides(overrides, source=f"--enqueue {shown(text)}")
    return overrides, fixed_params(setup.space, config)


def enqueue(study: optuna.Study, text: str, overrides: dict[str, Any], params: dict[str, Any]) -> str:
    """Queue a trial of the entry with these overrides (the searched parameters fixed at its values)."""
    for trial in study.get_trials(deepcopy=False):
        interrupted = trial.user_attrs.get(FAIL_REASON_ATTR) == INTERRUPTED  # the only attempt worth repeating
        if trial.user_attrs.get(OVERRIDES_ATTR) == overrides and not interrupted:
            return f"already in the study as trial {trial.number} ({trial.state.name}): {text}"
    study.enqueue_trial(params, user_attrs={OVERRIDES_ATTR: overrides})
    return f"enqueued: {text}"


def header(
    study: optuna.Study, setup: Setup, spec: StorageSpec, args: argparse.Namespace, done: int, argv: list[str]
) -> str:
    kind = "embedded journal" if spec.url is None else "shared database"
    searched = ", ".join(param.name for param in setup.space.params) or "nothing (--space none)"
    lines = [
        f"study {study.study_name} in {spec.shown} ({kind}): {done} of {args.trials} trials done",
        f"each trial: {setup.base['n_timesteps']:,} steps on each of {setup.seed_range}, scored on the final model",
        f"searched ({setup.space.source}): {searched}",
        "over: " + one_line_yaml(setup.base),
        f"{args.jobs} worker process(es) here",
    ]
    if spec.url is not None:
        lines.append(f"more workers on other machines: {worker_command(argv, spec)}")
    return "\n".join(lines)


def worker_command(argv: list[str], spec: StorageSpec) -> str:
    """This command for another machine: the same options (the study checks them), without --enqueue and
    --jobs, with the storage's password hidden (in ``--storage URL``, ``--storage=URL`` or an abbreviation)."""
    kept: list[str] = []
    skip = False
    for item in argv:
        if skip:
            skip = False
        elif item in ("--enqueue", "--jobs"):
            skip = True
        elif not item.startswith(("--enqueue=", "--jobs=")):
            kept.append(item.replace(spec.url, spec.shown) if spec.url else item)
    return shlex.join(["python", "-m", "zoo", "tune", *kept])


def best_line(study: optuna.Study) -> str:
    trials = complete_trials(study)
    return f"best: {describe(trials[0])}" if trials else "no complete trial yet"
