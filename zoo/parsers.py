"""The command line's parsers, one per command, in one help style (:mod:`zoo.helptext`).

Each command parses its arguments with the parser built here, and :mod:`zoo.cli` prints a command's ``--help``
from it without importing the command's module: this module imports neither torch nor SB3, which take seconds to
load. The descriptions are the commands' module docstrings, read from their source files rather than imported.
It stays one module past the size rule because it has one job, the shape of the whole command line: every flag,
its default and its help, where one reading shows how the commands agree.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zoo import helptext
from zoo.checks import shown
from zoo.errors import ZooError
from zoo.yaml_data import safe_yaml, yaml_numbers

# The algorithms of zoo.algos.ALGOS, by name (tests/test_zoo.py checks that the two agree).
ALGO_NAMES = ["reinforce", "a2c", "ppo"]
DEFAULT_EVAL_SEED = 12_345
# The episodes of a final score: `zoo train`'s and the benchmark's, and `zoo evaluate`'s and `zoo enjoy`'s default.
DEFAULT_EVAL_EPISODES = 20
QUICK_TIMESTEPS = 20_000
# The measured results live beside the other benchmark results, outside the package.
DEFAULT_OUT = "benchmarks/results/zoo"
TUNE_EXPORT_FILE = "best.yml"
# The Hub commands' defaults (zoo.hub reads them from here).
HUB_CARDS_DIR = Path("hub_cards")
# How long one request may wait for the Hub (zoo.hub.client says why).
HUB_TIMEOUT_S = 8.0
MIN_EVAL_EPISODES = 10
# A push's evaluation, the zoo's cards': 50 episodes over the eval seeds DEFAULT_EVAL_SEED, +1, ... +4 (one seed's
# episodes say little of what another CPU shows on MuJoCo; zoo.hub.package.evaluation_results says why).
CARD_EVAL_EPISODES = 50
CARD_EVAL_SEEDS = 5
DEFAULT_VIDEO_LENGTH = 1000
# MuJoCo renders in software off-screen (0.15-0.3 s a frame on 2 cores): a full 1,000-step episode would take
# minutes to record. Its replays keep the first 200 frames at 240x240 (about 10 s of video, 30 s to record).
MUJOCO_VIDEO_LENGTH = 200
PUSH_DESCRIPTION = (
    "Evaluate an agent, record a replay, render its model card and upload it to the Hugging Face Hub in one "
    "commit (token: HF_TOKEN or `hf auth login`)."
)
ENJOY_DESCRIPTION = (
    "Download an agent from the Hugging Face Hub (or read a packaged folder), rebuild it (pickle-free unless "
    "--allow-pickle), evaluate it and print mean +/- std reward."
)
PUSH_ALL_DESCRIPTION = (
    "Push every packaged agent folder under hub_cards/ (those with a config.json) to ORG/<algo>-<env id>, e.g. "
    "ORG/reinforce-CartPole-v1."
)
# ``zoo tune``'s subcommands and their descriptions.
TUNE_SUBCOMMANDS = {
    "run": "Run trials until the study has --trials done: it is created, resumed, or joined (with --storage, from "
    "other machines at once).",
    "report": "Print the study's best trials and write its plots into LOG_FOLDER/tune/STUDY/; the storage is only "
    "read.",
    "export": "Write the study's best trial as a zoo entry with a '# Tuned' comment; the storage is only read.",
}


def docstring(module: str) -> str:
    """The docstring of ``module``, read from its source without running it."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(module)
    return ast.get_docstring(ast.parse(Path(spec.origin).read_text(encoding="utf-8"))) or ""


def train_parser() -> argparse.ArgumentParser:
    parser = helptext.parser("python -m zoo train", docstring("zoo.train"))
    parser.add_argument("--env", required=True, help="Gymnasium env id, e.g. CartPole-v1")
    parser.add_argument("--algo", default="reinforce", choices=ALGO_NAMES, help="algorithm")
    parser.add_argument("--variant", default=None, help="a named entry ENV/VARIANT of the hyperparameter file")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument(
        "--n-timesteps",
        type=int,
        default=None,
        help="env steps, instead of the entry's budget; a linear schedule (lin_) then decays over these steps",
    )
    parser.add_argument(
        "--hyperparams", nargs="*", default=[], metavar="KEY=VALUE", help="override hyperparameters (YAML values)"
    )
    parser.add_argument(
        "--conf-file",
        "-conf",
        metavar="FILE",
        default=None,
        help="take the env's entry from this YAML file of the zoo's shape (`zoo tune export`'s best.yml) instead "
        "of the zoo's hyperparameter file",
    )
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="for an env that has no entry, train the hyperparameter file's catch-all entry (otherwise refused)",
    )
    parser.add_argument("--log-folder", default="logs", help="where run folders are created")
    parser.add_argument(
        "--eval-freq", type=int, default=None, help="env steps between evaluations (default: n_timesteps / 10)"
    )
    parser.add_argument("--eval-episodes", type=int, default=10, help="episodes per periodic evaluation")
    parser.add_argument(
        "--checkpoint-freq",
        type=int,
        default=None,
        help="env steps between checkpoints, each written at the next update boundary into the run folder's "
        "checkpoint/ and removed when the run finishes (default: 100,000, or n_timesteps / 10 when smaller; 0: none)",
    )
    parser.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=None,
        metavar="RUN_FOLDER",
        help="go on from the last checkpoint of an interrupted run, to the same budget: RUN_FOLDER's, or without "
        "it the newest interrupted run of this same command (config and seed) in --log-folder, or else a new run",
    )
    parser.add_argument("--no-progress-bar", action="store_true", help="hide the progress bar")
    parser.add_argument(
        "--verbose",
        type=int,
        default=1,
        help="0 quiet, 1 the progress bar and one line an evaluation, 2 also SB3's log table at every update",
    )
    return parser


def evaluate_parser() -> argparse.ArgumentParser:
    parser = helptext.parser("python -m zoo evaluate", docstring("zoo.evaluate"))
    parser.add_argument(
        "--env", default=None, help="Gymnasium env id (default: the one the agent's config.yml or config.json names)"
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--model",
        help="a model zip, the run folder of `zoo train`, or a packaged agent's folder (config.json + "
        "model.safetensors, loaded without pickle); vec_normalize.json is read from the same folder",
    )
    source.add_argument(
        "--repo-id", help="a packaged agent on the Hugging Face Hub, ORG/NAME, downloaded as `zoo enjoy` does"
    )
    parser.add_argument(
        "--episodes",
        type=int,
        default=DEFAULT_EVAL_EPISODES,
        help=f"evaluation episodes (default: {DEFAULT_EVAL_EPISODES}, as zoo train's final score)",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--deterministic", dest="deterministic", action="store_true", default=True, help="greedy actions (the default)"
    )
    group.add_argument("--stochastic", dest="deterministic", action="store_false", help="sampled actions")
    parser.add_argument("--render", action="store_true", help="render in a window (render_mode='human')")
    parser.add_argument("--seed", type=int, default=DEFAULT_EVAL_SEED, help="seed of the evaluation env")
    parser.add_argument(
        "--allow-pickle",
        action="store_true",
        help="load a zip that has no config.yml beside it with SB3's load, which unpickles it and runs any code it "
        "holds: only for a file you trust (default: rebuild a run's zip without pickle, refuse a bare one)",
    )
    return parser


def seeds_item(text: str) -> int | tuple[str, int]:
    """One item of ``benchmark --seeds`` or ``--baseline-seeds``: a number of seeds for every env (``N``), or for
    one (``ENV=N``)."""
    env_id, _, count = text.rpartition("=")
    try:
        number = int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or ENV=N with N a whole number, got {text!r}") from None
    return (env_id, number) if env_id else number


def benchmark_parser() -> argparse.ArgumentParser:
    parser = helptext.parser("python -m zoo benchmark", docstring("zoo.benchmark"))
    parser.add_argument(
        "--envs", nargs="*", default=None, help="env ids (default: every env of reinforce.yml; --quick: CartPole-v1)"
    )
    parser.add_argument(
        "--seeds",
        nargs="+",
        type=seeds_item,
        default=None,
        metavar="N|ENV=N",
        help="seeds 0..N-1 for every env, and ENV=N for an env that takes another number, e.g. --seeds 5 "
        "Hopper-v5=10 (default: 5; --quick: 2)",
    )
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
        "--baseline-seeds",
        nargs="+",
        type=seeds_item,
        default=None,
        metavar="N|ENV=N",
        help="seeds 0..N-1 for the baselines, as --seeds (default: --seeds)",
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


def tune_parser() -> argparse.ArgumentParser:
    """``zoo tune``'s parser: the subcommands ``run``, ``report`` and ``export``, each with the options of the study
    it reads or runs. :func:`parse_tune` supplies ``run`` where the command line names none."""
    prog = "python -m zoo tune"
    parser, commands = helptext.parser_with_subcommands(prog, docstring("zoo.tune.cli"), TUNE_SUBCOMMANDS)
    parser.usage = f"{prog} [{'|'.join(TUNE_SUBCOMMANDS)}] --env ENV [options]"
    parser.epilog = "`python -m zoo tune COMMAND --help` lists a command's options and defaults."
    for command in commands.values():
        add_study_options(command)
    add_tune_run_options(commands["run"])
    export = commands["export"]
    export.add_argument(
        "path",
        nargs="?",
        default=None,
        metavar="PATH",
        help=f"where the entry goes (default: LOG_FOLDER/tune/STUDY/{TUNE_EXPORT_FILE}, replaced each time)",
    )
    export.add_argument("--force", action="store_true", help="replace PATH if it exists (default: refuse)")
    return parser


def parse_tune(argv: list[str]) -> argparse.Namespace:
    """``zoo tune [run|report|export] OPTIONS``: without a subcommand, ``run`` (``zoo tune --help`` alone lists
    the subcommands)."""
    if not argv or argv[0] not in (*TUNE_SUBCOMMANDS, "-h", "--help"):
        argv = ["run", *argv]
    return tune_parser().parse_args(argv)


def add_study_options(parser: argparse.ArgumentParser) -> None:
    """The options that name a study and its storage, which every ``tune`` subcommand takes."""
    parser.add_argument("--env", required=True, help="Gymnasium env id, e.g. CartPole-v1")
    parser.add_argument("--algo", default="reinforce", choices=ALGO_NAMES, help="algorithm")
    parser.add_argument(
        "--storage", default=None, help="Optuna storage URL or journal file; None: LOG_FOLDER/tune/STUDY/study.journal"
    )
    parser.add_argument("--study", default=None, help="study name; None: ALGO-ENV")
    parser.add_argument("--log-folder", default="logs", help="where embedded studies, plots and exports go")


def add_tune_run_options(parser: argparse.ArgumentParser) -> None:
    """The options of a tuning run: the study's size, the trials' budget and seeds, the search and its pruning,
    and the heartbeats by which a worker that died is found."""
    parser.add_argument(
        "--trials", type=int, default=100, help="trials done (complete or pruned) the study should have"
    )
    parser.add_argument("--jobs", type=int, default=1, help="worker processes on this machine")
    parser.add_argument(
        "--timeout", type=float, default=None, help="seconds after which no new trial starts; None: no limit"
    )
    parser.add_argument(
        "--n-timesteps", type=int, default=None, help="budget per trial and seed; None: the entry's n_timesteps"
    )
    parser.add_argument("--seeds", type=int, default=1, help="seeds per trial; its value is their mean score")
    parser.add_argument("--first-seed", type=int, default=0, help="the seeds are FIRST_SEED .. FIRST_SEED+SEEDS-1")
    parser.add_argument(
        "--hyperparams", nargs="*", default=[], metavar="KEY=VALUE", help="fixed overrides of the entry (YAML values)"
    )
    parser.add_argument(
        "--space", default=None, help="search space YAML file, or 'none'; None: the zoo's hyperparams/search_space.yml"
    )
    parser.add_argument(
        "--enqueue",
        action="append",
        default=[],
        metavar="YAML",
        help="a fixed trial first: overrides of the entry, e.g. '{learning_rate: lin_5e-3, n_episodes: 16}'",
    )
    parser.add_argument("--sampler", default="tpe", choices=["tpe", "random"], help="Optuna sampler")
    parser.add_argument("--pruner", default="median", choices=["median", "none"], help="Optuna pruner")
    parser.add_argument(
        "--heartbeat-interval",
        type=int,
        default=None,
        help="seconds between a running trial's heartbeats; None: 60 on a database, 15 on a journal",
    )
    parser.add_argument(
        "--grace-period",
        type=int,
        default=None,
        help="seconds without heartbeat before a trial is handed on; None: 120 on a database, 45 on a journal",
    )


def add_hub_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=float,
        default=HUB_TIMEOUT_S,
        help="seconds each request may wait for the Hub before it is retried, then reported",
    )


def push_parser() -> argparse.ArgumentParser:
    parser = helptext.parser("python -m zoo push", PUSH_DESCRIPTION)
    parser.add_argument(
        "--model",
        required=True,
        help="the model zip written by `zoo train` (or its run folder); "
        "config.yml, vec_normalize.json and command.txt are read from the same folder",
    )
    parser.add_argument("--env", required=True, help="Gymnasium env id the agent plays")
    parser.add_argument("--repo-id", required=True, help="target repository, ORG/NAME")
    parser.add_argument("--private", action="store_true", help="create the repository private (default: public)")
    parser.add_argument("--commit-message", default=None, help="commit message (default: agent and mean reward)")
    parser.add_argument(
        "--dry-run",
        metavar="DIR",
        default=None,
        help="write the folder that would be uploaded to DIR (new or empty) and touch no network (default: push)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="let --dry-run write into a non-empty DIR: only the files it writes, and those an earlier dry run "
        "listed in DIR/manifest.json, are replaced (default: refuse)",
    )
    parser.add_argument(
        "--n-eval-episodes",
        type=int,
        default=CARD_EVAL_EPISODES,
        help=f"deterministic evaluation episodes (>= {MIN_EVAL_EPISODES}; default: {CARD_EVAL_EPISODES})",
    )
    parser.add_argument(
        "--eval-seed",
        type=int,
        default=DEFAULT_EVAL_SEED,
        help=f"first seed of the evaluation env (default: {DEFAULT_EVAL_SEED})",
    )
    parser.add_argument(
        "--eval-seeds",
        type=int,
        default=CARD_EVAL_SEEDS,
        help="number of eval seeds (--eval-seed, the next one, ...) the episodes are dealt over, each from a fresh "
        f"env (default: {CARD_EVAL_SEEDS})",
    )
    parser.add_argument(
        "--video-length",
        type=int,
        default=None,
        help=f"most frames in replay.mp4 (default: {DEFAULT_VIDEO_LENGTH}, MuJoCo envs {MUJOCO_VIDEO_LENGTH})",
    )
    parser.add_argument("--no-video", action="store_true", help="do not record replay.mp4 (default: record it)")
    parser.add_argument(
        "--allow-pickle",
        action="store_true",
        help="load a zip that has no config.yml beside it with SB3's load, which unpickles it and runs any code it "
        "holds: only for a file you trust (default: rebuild a run's zip without pickle, refuse a bare one)",
    )
    add_hub_timeout(parser)
    return parser


def enjoy_parser() -> argparse.ArgumentParser:
    parser = helptext.parser("python -m zoo enjoy", ENJOY_DESCRIPTION)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--repo-id", help="repository, ORG/NAME")
    source.add_argument(
        "--folder",
        help="a packaged agent's folder instead (a push's --dry-run DIR, hub_cards/<env id>), checked like a "
        "download against its manifest.json",
    )
    parser.add_argument("--revision", default=None, help="branch, tag or commit sha (default: main)")
    parser.add_argument(
        "--episodes",
        type=int,
        default=DEFAULT_EVAL_EPISODES,
        help=f"evaluation episodes (default: {DEFAULT_EVAL_EPISODES}, as zoo train's final score)",
    )
    parser.add_argument("--render", action="store_true", help="show the episodes in a window (default: no window)")
    parser.add_argument(
        "--allow-pickle",
        action="store_true",
        help="load the SB3 zip, which unpickles code: only for repositories you trust (default: "
        "rebuild from config.json + model.safetensors)",
    )
    parser.add_argument("--env", default=None, help="evaluate on this env id (default: the agent's own)")
    parser.add_argument("--stochastic", action="store_true", help="sample actions (default: greedy actions)")
    parser.add_argument("--seed", type=int, default=DEFAULT_EVAL_SEED, help="seed of the evaluation env")
    parser.add_argument("--device", default="auto", help="torch device: auto, cpu, cuda, cuda:N...")
    parser.add_argument(
        "--use-env-kwargs",
        action="store_true",
        help="make the env with the env_kwargs the agent was trained with, as its config.json records them "
        "(default: the env as registered)",
    )
    add_hub_timeout(parser)
    return parser


def push_all_parser() -> argparse.ArgumentParser:
    parser = helptext.parser("python -m zoo push-all", PUSH_ALL_DESCRIPTION)
    parser.add_argument("--org", required=True, help="user or organization that receives the repositories")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="check the folders and list what would be pushed, touching no network (default: push)",
    )
    parser.add_argument(
        "--hub-cards", default=None, help=f"folder of packaged agents (default: {HUB_CARDS_DIR} in a checkout)"
    )
    parser.add_argument("--private", action="store_true", help="create the repositories private (default: public)")
    parser.add_argument("--commit-message", default=None, help="commit message (default: agent and mean reward)")
    add_hub_timeout(parser)
    return parser


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``--hyperparams``' ``key=value`` pairs; values are YAML, with numbers as :func:`~zoo.yaml_data.yaml_numbers`
    reads them."""
    overrides: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ZooError(f"--hyperparams takes key=value pairs, got {shown(item)}")
        overrides[key] = yaml_numbers(safe_yaml(text, f"--hyperparams {key}"))
    return overrides


def check_budget_flag(n_timesteps: int | None) -> None:
    """``--n-timesteps`` as the commands take it: None (the entry's budget) or >= 1 (0 is not "the default")."""
    if n_timesteps is not None and n_timesteps < 1:
        raise ZooError(f"--n-timesteps must be >= 1 (leave it out for the entry's budget), got {n_timesteps}")


# command -> the parsing of its arguments ``argv``, by which zoo.cli prints a command's help without importing it.
HELP: dict[str, Callable[[list[str]], argparse.Namespace]] = {
    "train": lambda argv: train_parser().parse_args(argv),
    "evaluate": lambda argv: evaluate_parser().parse_args(argv),
    "benchmark": lambda argv: benchmark_parser().parse_args(argv),
    "tune": parse_tune,
    "push": lambda argv: push_parser().parse_args(argv),
    "enjoy": lambda argv: enjoy_parser().parse_args(argv),
    "push-all": lambda argv: push_all_parser().parse_args(argv),
}
