"""Before a release: do the records still describe today's settings?

The tests check behaviour and leave the research records alone, so that changing one number in a hyperparameter
file keeps the default test run green. This script, run on purpose by a maintainer (the docs' contributing
page), checks what a release promises on top:

- every packaged agent in ``hub_cards/`` was trained with the zoo's current entry for its env;
- ``docs/results.md`` repeats every row of ``benchmarks/results/zoo/benchmark.md``;
- every ``python -m zoo tune`` command in ``benchmarks/results/zoo/TUNING.md`` still runs the configuration its
  committed journal (or JSON record) measured.

``python benchmarks/release_check.py`` prints one line per problem and exits 1 if there is any.
"""

from __future__ import annotations

import inspect
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import optuna
import yaml
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

from sb3_reinforce import Reinforce
from zoo.algos import constructor_keys
from zoo.config import get_config, yaml_numbers
from zoo.parsers import tune_parser
from zoo.tune.objective import CONFIG_ATTR, SCORES_ATTR
from zoo.tune.space import with_overrides
from zoo.tune.storage import JOURNAL_FILE

ROOT = Path(__file__).resolve().parents[1]
TUNING_MD = ROOT / "benchmarks" / "results" / "zoo" / "TUNING.md"
RECORDS = ROOT / "benchmarks" / "results" / "tuning"


def record_defaults() -> dict[str, Any]:
    """Reinforce's constructor defaults as the committed records (hub_cards/, the tuning journals) were made.

    The critic fit defaulted to 80 full-batch passes then; the entries that fit a critic now write those two
    values out. Reading a record and today's entry under the same defaults compares what each sets.
    """
    parameters = inspect.signature(Reinforce.__init__).parameters
    defaults = {key: parameters[key].default for key in constructor_keys(Reinforce)}
    return {**defaults, "vf_n_epochs": 80, "vf_batch_size": None}


def with_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """A config's data with the records' defaults filled in: an entry that writes a default out (say
    ``vf_n_epochs: 80``) is still the configuration a card was packaged from without it."""
    return {**config, "hyperparams": {**record_defaults(), **config.get("hyperparams", {})}}


def card_problems() -> list[str]:
    problems = []
    for folder in sorted(path for path in (ROOT / "hub_cards").iterdir() if path.is_dir()):
        run = yaml.safe_load((folder / "config.yml").read_text())
        packaged = {key: value for key, value in run.items() if key != "seed"}
        if with_defaults(packaged) != with_defaults(get_config("reinforce", folder.name).to_data()):
            problems.append(f"hub_cards/{folder.name} was packaged from another configuration than today's entry")
    return problems


def results_page_problems() -> list[str]:
    table = (ROOT / "benchmarks" / "results" / "zoo" / "benchmark.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| env ")]
    page = (ROOT / "docs" / "results.md").read_text()
    return [f"docs/results.md lacks the benchmark row {row}" for row in rows if row not in page]


def tuning_md_commands() -> list[list[str]]:
    """The options of every ``python -m zoo tune`` command in TUNING.md's indented code blocks."""
    lines = TUNING_MD.read_text().split("\n")
    commands = []
    for index, line in enumerate(lines):
        if line.startswith("    ") and line.strip().startswith("python -m zoo tune"):
            block = [line]
            while block[-1].rstrip().endswith("\\"):
                block.append(lines[index + len(block)])
            commands.append(shlex.split(" ".join(part.rstrip().rstrip("\\") for part in block))[4:])
    return commands


def recorded_config(args: Any) -> dict[str, Any] | str:
    """The configuration a TUNING.md command's candidate was measured with, without its seed (from the study's
    journal committed under ``--log-folder``, else from the JSON records of the retired grid script), or what is
    missing."""
    if args.log_folder != "logs":
        journal = ROOT / args.log_folder / "tune" / args.study / JOURNAL_FILE
        if not journal.is_file():
            return f"no journal at {journal}"
        study = optuna.load_study(study_name=args.study, storage=JournalStorage(JournalFileBackend(str(journal))))
        done = [trial for trial in study.trials if trial.state == TrialState.COMPLETE]
        if not done or len(done[0].user_attrs[SCORES_ATTR]) != args.seeds:
            return f"no complete trial of {args.seeds} seeds in {journal}"
        return dict(done[0].user_attrs[CONFIG_ATTR])
    records = [json.loads(path.read_text()) for path in RECORDS.glob(f"{args.env}/{args.study}_seed*.json")]
    if not records:
        return f"no record in {RECORDS / args.env}"
    return {key: value for key, value in records[0]["config"].items() if key != "seed"}


def tuning_problems() -> list[str]:
    # A candidate of the joint-critic era asks for vf_n_epochs: 0, which its records predate.
    defaults = record_defaults()
    problems = []
    for argv in tuning_md_commands():
        args = tune_parser().parse_args(argv)
        base = get_config("reinforce", args.env, {} if args.n_timesteps is None else {"n_timesteps": args.n_timesteps})
        ran = with_overrides(base, yaml_numbers(yaml.safe_load(args.enqueue[0]))).to_data()
        recorded = recorded_config(args)
        if isinstance(recorded, str):
            problems.append(f"TUNING.md's {args.study}: {recorded}")
            continue
        if "vf_n_epochs" not in recorded["hyperparams"] and ran["hyperparams"].get("vf_n_epochs") == 0:
            del ran["hyperparams"]["vf_n_epochs"]
        for config in (ran, recorded):
            for key in set(ran["hyperparams"]) | set(recorded["hyperparams"]):
                config["hyperparams"].setdefault(key, defaults[key])
        if ran != recorded:
            problems.append(f"TUNING.md's command for {args.study} no longer runs its recorded configuration")
    return problems


def main(argv: list[str] | None = None) -> int:
    del argv  # no options
    problems = card_problems() + results_page_problems() + tuning_problems()
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problems" if problems else "release check: the records match today's settings")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
