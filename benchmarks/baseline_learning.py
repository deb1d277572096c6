"""Learning at equal steps: the zoo's entries against the same entries with only the baseline changed.

The runs come from ``python -m zoo benchmark``: the entries' own in ``benchmarks/results/zoo`` and each variant's
in a folder of its own, trained with ``--hyperparams`` (for leave-one-out: ``baseline=loo gae_lambda=1.0``, since
``gae_lambda`` belongs to the critic). Same budget, same seeds, same evaluation (the final model on 20
deterministic episodes; the curve every twentieth of the budget on 5). Only the seeds both sides finished are
compared.

Reported per env: each side's IQM with its 95% stratified-bootstrap interval and its mean +/- std, the training
CPU seconds per run (evaluations excluded), and the probability that a run of the variant ends above a run of the
entry, with its interval; across the envs, that probability averaged over them. One plot per env, the IQM
learning curves with their pointwise 95% bands, in ``OUT/plots/``.

Usage: ``python benchmarks/baseline_learning.py --variant loo=benchmarks/results/baselines/loo [--variant
NAME=FOLDER ...] [--entries benchmarks/results/zoo] [--envs ...]``. Writes ``OUT.md`` (OUT:
``benchmarks/results/baseline_learning``) and the plots.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from zoo.statistics import curve_band, improvement_interval, iqm_interval

RESULTS = Path(__file__).parent / "results"
ALGO = "reinforce"
# What a variant may change and still be "the entry with another baseline": the baseline, its options, the
# critic's settings (unused without one) and the batch a leave-one-out mean is taken over.
VARIANT_KEYS = {
    "baseline",
    "group_size",
    "gae_lambda",
    "normalize_advantage",
    "n_episodes",
    "vf_n_epochs",
    "vf_batch_size",
}


def parse_variant(text: str) -> tuple[str, Path]:
    name, sep, folder = text.partition("=")
    if not sep or not name or not folder:
        raise argparse.ArgumentTypeError(
            f"a variant is NAME=FOLDER (e.g. loo=benchmarks/results/baselines/loo), got {text!r}"
        )
    return name, Path(folder)


def finished_runs(folder: Path, env_id: str) -> dict[int, dict[str, Any]]:
    """Seed -> result.json of every finished run of ``env_id`` under a benchmark folder."""
    runs = {}
    for result in sorted((folder / "runs" / ALGO / env_id).glob("seed*/result.json")):
        seed_text = result.parent.name.removeprefix("seed")
        if seed_text.isdigit():
            runs[int(seed_text)] = json.loads(result.read_text(encoding="utf-8"))
    return runs


def run_config(folder: Path, env_id: str, seed: int) -> dict[str, Any]:
    """The configuration a run was trained with: the config.yml saved beside its model."""
    path = folder / "runs" / ALGO / env_id / f"seed{seed}" / "config.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
    return data if isinstance(data, dict) else {}


def changed_keys(variant: dict[str, Any], entry: dict[str, Any]) -> set[str]:
    """The settings (top-level keys and hyperparameters) in which a variant's config.yml differs from the entry's."""
    flat = [{**{k: v for k, v in config.items() if k not in ("seed", "hyperparams")}, **config.get("hyperparams", {})}
            for config in (variant, entry)]  # fmt: skip
    return {key for key in flat[0].keys() | flat[1].keys() if flat[0].get(key) != flat[1].get(key)}


def mismatch(variant: dict[str, Any], entry: dict[str, Any]) -> str | None:
    """Why a variant's run cannot stand beside the entry's (another budget, or a change beyond
    :data:`VARIANT_KEYS`: an entry changed since the variant ran), or None."""
    if variant.get("n_timesteps") != entry.get("n_timesteps"):
        return f"was trained on {variant.get('n_timesteps')} steps, the entry on {entry.get('n_timesteps')}"
    beyond = changed_keys(variant, entry) - VARIANT_KEYS
    return f"differs from the entry in {', '.join(sorted(beyond))} too" if beyond else None


def baseline_of(config: dict[str, Any]) -> str:
    return str(config.get("hyperparams", {}).get("baseline", "value"))


def interval(values: list[float]) -> str:
    iqm = iqm_interval([values])
    return f"{iqm.point:.1f} [{iqm.low:.1f}, {iqm.high:.1f}]"


def side(records: list[dict[str, Any]]) -> str:
    scores = [record["mean_reward"] for record in records]
    cpu = np.mean([record["train_cpu_seconds"] for record in records])
    return f"{interval(scores)} | {np.mean(scores):.1f} +/- {np.std(scores):.1f} | {cpu:.0f}"


def plot(env_id: str, sides: dict[str, list[dict[str, Any]]], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(5, 3.2))
    for name, records in sides.items():
        length = min(len(record["curve_mean_reward"]) for record in records)
        steps = np.asarray(records[0]["curve_timesteps"][:length])
        band = curve_band(np.asarray([record["curve_mean_reward"][:length] for record in records]))
        axes.plot(steps, band.point, label=f"{name} (IQM, {len(records)} seeds)")
        axes.fill_between(steps, band.low, band.high, alpha=0.25)
    axes.set(title=env_id, xlabel="env steps", ylabel="return (5 deterministic episodes)")
    axes.legend(fontsize="small")
    figure.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{env_id}.png"
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", type=parse_variant, action="append", required=True, help="NAME=FOLDER")
    parser.add_argument("--entries", type=Path, default=RESULTS / "zoo", help="the entries' benchmark folder")
    parser.add_argument("--envs", nargs="*", help="default: every env both sides have runs of")
    parser.add_argument("--out", type=Path, default=RESULTS / "baseline_learning")
    args = parser.parse_args(argv)
    variants: dict[str, Path] = dict(args.variant)
    envs = args.envs or sorted(
        {path.name for folder in variants.values() for path in (folder / "runs" / ALGO).glob("*") if path.is_dir()}
    )
    header = "| env | seeds | entry's baseline | entry IQM [95% CI] | entry mean +/- std | entry CPU s |"
    for name in variants:
        header += f" {name} IQM [95% CI] | {name} mean +/- std | {name} CPU s | P({name} > entry) |"
    lines = [header, "|---|---:|---|" + "---:|" * (3 + 4 * len(variants))]
    pooled: dict[str, tuple[list[list[float]], list[list[float]]]] = {name: ([], []) for name in variants}
    for env_id in envs:
        entry = finished_runs(args.entries, env_id)
        if not entry:
            print(f"{env_id}: the entry has no finished run; skipped", file=sys.stderr)
            continue
        entry_config = run_config(args.entries, env_id, min(entry))
        # A variant without a run of this env comparable with the entry's is left out of the row (its cells "-").
        sides = {name: runs for name, folder in variants.items() if (runs := finished_runs(folder, env_id))}
        for name in list(sides):
            reason = mismatch(run_config(variants[name], env_id, min(sides[name])), entry_config)
            if reason:
                print(f"{env_id}: {name} {reason}; left out", file=sys.stderr)
                del sides[name]
        seeds = sorted(set(entry).intersection(*[set(runs) for runs in sides.values()]))
        if not sides or not seeds:
            print(f"{env_id}: no seed finished by the entry and a variant alike; skipped", file=sys.stderr)
            continue
        entry_records = [entry[seed] for seed in seeds]
        entry_scores = [record["mean_reward"] for record in entry_records]
        entry_baseline = baseline_of(run_config(args.entries, env_id, seeds[0]))
        row = f"| {env_id} | {len(seeds)} | {entry_baseline} | {side(entry_records)} |"
        curves = {"entry": entry_records}
        for name in variants:
            if name not in sides:
                row += " - | - | - | - |"
                continue
            records = [sides[name][seed] for seed in seeds]
            scores = [record["mean_reward"] for record in records]
            better = improvement_interval([scores], [entry_scores])
            row += f" {side(records)} | {better.point:.2f} [{better.low:.2f}, {better.high:.2f}] |"
            pooled[name][0].append(scores)
            pooled[name][1].append(entry_scores)
            curves[name] = records
        lines.append(row)
        plot(env_id, curves, args.out / "plots")
    lines.append("")
    for name, (variant_scores, entry_scores) in pooled.items():
        if variant_scores:
            across = improvement_interval(variant_scores, entry_scores)
            lines.append(
                f"Across the {len(variant_scores)} envs, P({name} > entry) = {across.point:.2f} "
                f"[{across.low:.2f}, {across.high:.2f}] (the probability of improvement averaged over the envs)."
            )
    command = "python benchmarks/baseline_learning.py " + " ".join(sys.argv[1:] if argv is None else argv)
    lines += ["", f"Reproduce: `{command.strip()}`"]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
