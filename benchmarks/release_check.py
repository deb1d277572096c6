"""Before a release: do the records still describe today's settings?

The tests check behaviour and leave the research records alone, so that changing one number in a hyperparameter
file keeps the default test run green. This script, run on purpose by a maintainer (the docs' contributing
page), checks what a release promises on top:

- every entry of ``hyperparams/reinforce.yml`` has a packaged agent in ``hub_cards/`` and every packaged agent an
  entry; each was trained with the zoo's current entry for its env, and its card repeats its ``results.json``;
- ``docs/results.md`` repeats every row of ``benchmarks/results/zoo/benchmark.md``;
- every ``python -m zoo tune`` command in ``benchmarks/results/zoo/TUNING.md`` still runs the configuration its
  committed journal (or JSON record) measured.

``python benchmarks/release_check.py`` prints one line per problem and exits 1 if there is any.
"""

from __future__ import annotations

import inspect
import json
import math
import shlex
import statistics
import sys
from pathlib import Path
from typing import Any

import optuna
import yaml
from huggingface_hub import ModelCard
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

from sb3_reinforce import Reinforce
from zoo.agent_format import RENAMED_KEYS, current_spelling
from zoo.algos import constructor_keys
from zoo.config import config_difference, get_config, known_env_ids
from zoo.hub.card import format_metric
from zoo.hub.layout import CARD_FILE, RESULTS_FILE
from zoo.hub.video import is_mujoco
from zoo.parsers import CARD_EVAL_EPISODES, CARD_EVAL_SEEDS, parse_tune
from zoo.tune.objective import CONFIG_ATTR, SCORES_ATTR
from zoo.tune.storage import JOURNAL_FILE
from zoo.yaml_data import yaml_numbers

ROOT = Path(__file__).resolve().parents[1]
CARDS = ROOT / "hub_cards"
TUNING_MD = ROOT / "benchmarks" / "results" / "zoo" / "TUNING.md"
RECORDS = ROOT / "benchmarks" / "results" / "tuning"
BENCHMARK_RUNS = ROOT / "benchmarks" / "results" / "zoo" / "runs" / "reinforce"


# The critic's hyperparameters, and those of them that its fit alone reads (not the joint update).
CRITIC_FIT_KEYS = ("vf_learning_rate", "vf_n_epochs", "vf_batch_size")
CRITIC_KEYS = ("vf_update", "vf_coef", *CRITIC_FIT_KEYS)

# A tuning record holds the keys its run set; the ones it left out took the constructor's defaults of its day, and
# two days came before today's. Before vf_n_epochs existed the critic was trained jointly: a record without the key
# of a command that asks for the joint update is of that day. Then the fit defaulted to 80 full-batch passes.
JOINT_DAY_DEFAULTS = {"vf_update": "joint"}
FIT_80_DAY_DEFAULTS = {"vf_n_epochs": 80, "vf_batch_size": None}


def todays_defaults() -> dict[str, Any]:
    """Reinforce's constructor defaults, without the deprecated keyword that names another."""
    parameters = inspect.signature(Reinforce.__init__).parameters
    return {key: parameters[key].default for key in constructor_keys(Reinforce) if key not in RENAMED_KEYS}


def read_hyperparams(hyperparams: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """What a Reinforce run reads of ``hyperparams`` (in today's spelling) over ``defaults``: the critic's keys
    only with a critic, the fit's only when it fits, vf_coef only when the update is joint."""
    read = {**defaults, **current_spelling(hyperparams)}
    unread: tuple[str, ...] = ()
    if read["baseline"] != "value":
        unread = CRITIC_KEYS
    elif read["vf_update"] == "joint":
        unread = CRITIC_FIT_KEYS
    else:
        unread = ("vf_coef",)
    return {key: value for key, value in read.items() if key not in unread}


def packaged_folders(cards: Path) -> list[Path]:
    return sorted(path for path in cards.iterdir() if path.is_dir())


def packaging_problems(cards: Path = CARDS, env_ids: list[str] | None = None) -> list[str]:
    """Each env of the zoo's table (``env_ids``, by default reinforce.yml's) without a packaged agent in ``cards``,
    and each packaged agent of an env that the table has no entry for."""
    entries = set(known_env_ids("reinforce") if env_ids is None else env_ids)
    packaged = {folder.name for folder in packaged_folders(cards)}
    return [f"{cards.name} has no packaged agent for the entry {env_id}" for env_id in sorted(entries - packaged)] + [
        f"{cards.name}/{name} packages an agent for an env that reinforce.yml has no entry for"
        for name in sorted(packaged - entries)
    ]


def card_record_problems(cards: Path = CARDS) -> list[str]:
    """Each packaged agent whose results.json does not add up (its mean is not its episodes' mean) or whose card's
    model-index does not repeat it (mean +/- std as a push renders it)."""
    problems = []
    for folder in packaged_folders(cards):
        results = json.loads((folder / RESULTS_FILE).read_text())
        card = ModelCard((folder / CARD_FILE).read_text())
        metric = card.data.to_dict()["model-index"][0]["results"][0]["metrics"][0]["value"]
        if not math.isclose(results["mean_reward"], statistics.fmean(results["episode_rewards"]), rel_tol=1e-9):
            problems.append(f"{cards.name}/{folder.name}/{RESULTS_FILE}: mean_reward is not its episodes' mean")
        if metric != format_metric(results["mean_reward"], results["std_reward"]):
            problems.append(f"{cards.name}/{folder.name}/{CARD_FILE} does not repeat its {RESULTS_FILE}: {metric}")
        problems += [f"{cards.name}/{folder.name}: {problem}" for problem in evaluation_problems(results)]
        problems += [f"{cards.name}/{folder.name}: {problem}" for problem in benchmark_problems(folder, results)]
    return problems


def evaluation_problems(results: dict[str, Any]) -> list[str]:
    """What a card's evaluation lacks of what it promises on any CPU: 50 episodes over 5 eval seeds (a push's
    defaults), how each ended, and the machine and versions it ran on."""
    problems = []
    if results["n_eval_episodes"] < CARD_EVAL_EPISODES or len(results.get("eval_seeds", [])) < CARD_EVAL_SEEDS:
        problems.append(f"its evaluation is not {CARD_EVAL_EPISODES} episodes over {CARD_EVAL_SEEDS} eval seeds")
    if "episode_truncated" not in results:
        problems.append("its results.json does not say how each episode ended")
    machine = results.get("machine", {})
    needed = ("cpu", "torch", *(("mujoco",) if is_mujoco(results["env_id"]) else ()))
    missing = [key for key in needed if key not in machine]
    if missing:
        problems.append(f"its results.json does not name the {', '.join(missing)} it was evaluated with")
    return problems


def benchmark_problems(folder: Path, results: dict[str, Any]) -> list[str]:
    """Whether the card's agent is the benchmark's run it says, with the score every seed's record gives today."""
    benchmark = results.get("benchmark")
    if benchmark is None:
        return ["its agent is not a run of the benchmark (no benchmark section)"]
    seeds = BENCHMARK_RUNS / folder.name
    problems = []
    for entry in benchmark["scores"]:
        record = seeds / f"seed{entry['seed']}" / "result.json"
        if not record.is_file():
            problems.append(f"its benchmark seed {entry['seed']} has no record in {seeds}")
        elif json.loads(record.read_text())["mean_reward"] != entry["mean_reward"]:
            problems.append(f"its benchmark seed {entry['seed']} scores otherwise in {record}")
    agent = json.loads((folder / "config.json").read_text())
    own = seeds / f"seed{benchmark['seed']}" / "result.json"
    if own.is_file() and json.loads(own.read_text())["n_timesteps"] != agent["num_timesteps"]:
        problems.append(f"its agent took other steps than the run that {own} records")
    return problems


def card_problems(cards: Path = CARDS) -> list[str]:
    """Each packaged agent whose configuration differs from today's entry for its env: its config.yml's zoo keys,
    and the hyperparameters its config.json records in full, against the entry over today's defaults."""
    problems = []
    defaults = todays_defaults()
    for folder in packaged_folders(cards):
        run = yaml.safe_load((folder / "config.yml").read_text())
        agent = json.loads((folder / "config.json").read_text())
        hyperparams = {**agent["hyperparams"], "policy_kwargs": agent.get("policy_kwargs") or {}}
        packaged = {**run, "hyperparams": read_hyperparams(hyperparams, defaults)}
        del packaged["seed"]
        entry = get_config("reinforce", folder.name).to_data()
        entry["hyperparams"] = read_hyperparams({"policy_kwargs": {}, **entry["hyperparams"]}, defaults)
        difference = config_difference(packaged, entry)
        if difference:
            problems.append(
                f"{cards.name}/{folder.name} was packaged from another configuration than today's entry: {difference}"
            )
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
    defaults = todays_defaults()
    problems = []
    for argv in tuning_md_commands():
        args = parse_tune(argv)
        base = get_config("reinforce", args.env, {} if args.n_timesteps is None else {"n_timesteps": args.n_timesteps})
        ran = base.with_overrides(yaml_numbers(yaml.safe_load(args.enqueue[0]))).to_data()
        recorded = recorded_config(args)
        if isinstance(recorded, str):
            problems.append(f"TUNING.md's {args.study}: {recorded}")
            continue
        ran["hyperparams"] = read_hyperparams(ran["hyperparams"], defaults)
        joint_day = "vf_n_epochs" not in recorded["hyperparams"] and ran["hyperparams"].get("vf_update") == "joint"
        day = JOINT_DAY_DEFAULTS if joint_day else FIT_80_DAY_DEFAULTS
        recorded["hyperparams"] = read_hyperparams(recorded["hyperparams"], {**defaults, **day})
        if config_difference(recorded, ran):
            problems.append(f"TUNING.md's command for {args.study} no longer runs its recorded configuration")
    return problems


def main(argv: list[str] | None = None) -> int:
    del argv  # no options
    problems = packaging_problems() + card_problems() + card_record_problems() + results_page_problems()
    problems += tuning_problems()
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problems" if problems else "release check: the records match today's settings")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
