"""Package the agents of ``hub_cards/`` again, with the current card format, evaluation and files.

For each packaged folder, the agent's own SB3 zip is packaged as ``python -m zoo push --dry-run`` would a run
folder: its config.yml, vec_normalize.json and training command beside it. When the agent is a seed of the zoo's
benchmark (``benchmarks/results/zoo/runs/reinforce/<env>/seed<k>/result.json`` records a run of the model's
steps), the benchmark's record of every seed is laid beside it, so the card gets the benchmark's section as a push
of the benchmark's run folder would write it. The weights are untouched; the evaluation (50 episodes over 5 eval
seeds by default), results.json, the replay and the card are new, written on this machine.

``python benchmarks/repackage_cards.py [ENV_ID ...]`` (default: every packaged agent) rewrites each folder in place,
through a scratch folder, so a failure leaves the old one whole.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from zoo.hub import package_agent
from zoo.runs import COMMAND_FILE, CONFIG_YML, RESULT_FILE, model_file

ROOT = Path(__file__).resolve().parents[1]
CARDS = ROOT / "hub_cards"
BENCHMARK_RUNS = ROOT / "benchmarks" / "results" / "zoo" / "runs" / "reinforce"
STATS_JSON = "vec_normalize.json"


def run_folder(card: Path, scratch: Path) -> Path:
    """A run folder for the agent of ``card`` under ``scratch``, shaped as the benchmark's when the agent is one of
    its seeds: ``runs/reinforce/<env>/seed<k>/`` with every seed's result.json."""
    config = json.loads((card / "config.json").read_text())
    env_id, seed = config["env_id"], config["seed"]
    seeds = BENCHMARK_RUNS / env_id
    record = seeds / f"seed{seed}" / RESULT_FILE
    is_benchmark_seed = record.is_file() and json.loads(record.read_text())["n_timesteps"] == config["num_timesteps"]
    target = scratch / "runs" / "reinforce" / env_id / f"seed{seed}" if is_benchmark_seed else scratch / "run"
    if is_benchmark_seed:
        for other in seeds.iterdir():
            if (other / RESULT_FILE).is_file():
                (target.parent / other.name).mkdir(parents=True, exist_ok=True)
                shutil.copy2(other / RESULT_FILE, target.parent / other.name / RESULT_FILE)
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(card / config["sb3_zip"]["file"], target / model_file(env_id))
    shutil.copy2(card / CONFIG_YML, target / CONFIG_YML)
    if (card / STATS_JSON).is_file():
        shutil.copy2(card / STATS_JSON, target / STATS_JSON)
    (target / COMMAND_FILE).write_text(config["train_command"] + "\n")
    return target


def repackage(card: Path) -> str:
    with tempfile.TemporaryDirectory(prefix="repackage-") as scratch:
        run = run_folder(card, Path(scratch))
        out = Path(scratch) / "out"
        result = package_agent(run, card.name, out)
        for warning in result.warnings:
            print(f"{card.name}: {warning}", file=sys.stderr)
        new, old = card.with_name(card.name + ".new"), card.with_name(card.name + ".old")
        shutil.copytree(out, new)
        card.rename(old)
        new.rename(card)
        shutil.rmtree(old)
    results = result.results
    ended = sum(not t for t in results["episode_truncated"])
    benchmark = "benchmark seed" if "benchmark" in results else "no benchmark record"
    return (
        f"{card.name}: {results['mean_reward']:.2f} +/- {results['std_reward']:.2f} over "
        f"{results['n_eval_episodes']} episodes, {ended} ended by the env ({benchmark})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("envs", nargs="*", help="env ids of hub_cards/ folders (default: all)")
    args = parser.parse_args(argv)
    cards = sorted(p for p in CARDS.iterdir() if p.is_dir())
    if args.envs:
        unknown = sorted(set(args.envs) - {card.name for card in cards})
        if unknown:
            parser.error(f"no packaged agent for {', '.join(unknown)} in {CARDS}")
        cards = [card for card in cards if card.name in args.envs]
    for card in cards:
        print(repackage(card), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
