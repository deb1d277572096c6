"""Reinforce at PPO's compute against PPO at 1e6 steps: the table of ``benchmarks/results/equal_compute/``.

Each ``benchmarks/results/equal_compute/<env>/`` is a ``zoo benchmark`` of the zoo's Reinforce entry with the budget
``1e6 x`` PPO's cost per step over Reinforce's (``benchmarks/cost_ratio.md``, measured side by side on one host),
so that a Reinforce run costs the CPU of one PPO run of the benchmark's table. This script reads their finished
runs and PPO's finished runs in ``benchmarks/results/zoo/runs/ppo/`` and writes, per task and across the tasks
that have both, the IQM with its 95% stratified-bootstrap interval and P(Reinforce > PPO) (``zoo.statistics``),
beside Reinforce's own 1e6-step runs.

``python benchmarks/equal_compute.py`` writes ``benchmarks/results/equal_compute/summary.md``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from zoo.statistics import improvement_interval, iqm_interval

ROOT = Path(__file__).resolve().parents[1]
EQUAL = ROOT / "benchmarks" / "results" / "equal_compute"
ZOO_RUNS = ROOT / "benchmarks" / "results" / "zoo" / "runs"


def scores(runs: Path) -> dict[int, float]:
    """The final score of each finished seed under ``runs`` (``seed<k>/result.json``)."""
    found = {}
    for record in sorted(runs.glob("seed*/result.json")):
        data = json.loads(record.read_text())
        found[int(data["seed"])] = float(data["mean_reward"])
    return found


def interval(values: list[float]) -> str:
    band = iqm_interval([values])
    return f"{band.point:.1f} [{band.low:.1f}, {band.high:.1f}]"


def main(argv: list[str] | None = None) -> int:
    del argv  # no options
    lines = [
        "# Reinforce at PPO's compute",
        "",
        "Reinforce trained for the steps that cost the CPU of PPO's 1e6-step run (`benchmarks/cost_ratio.md`), "
        "against the benchmark's PPO at 1e6 steps and Reinforce's own 1e6-step runs; final models on 20 "
        "deterministic episodes. `python benchmarks/equal_compute.py`.",
        "",
        "| env | Reinforce steps | Reinforce at PPO's compute: seeds, IQM [95% CI] | per seed | PPO at 1e6: IQM "
        "[95% CI] | Reinforce at 1e6: IQM [95% CI] | P(Reinforce > PPO) at PPO's compute [95% CI] |",
        "|---|---:|---|---|---|---|---|",
    ]
    x_tasks, y_tasks = [], []
    for folder in sorted(path for path in EQUAL.iterdir() if path.is_dir()):
        env_id = folder.name
        mine = scores(folder / "runs" / "reinforce" / env_id)
        ppo = scores(ZOO_RUNS / "ppo" / env_id)
        own = scores(ZOO_RUNS / "reinforce" / env_id)
        if not mine or not ppo:
            continue
        budget = json.loads(next((folder / "runs" / "reinforce" / env_id).glob("seed*/result.json")).read_text())
        per_seed = ", ".join(f"{score:.1f}" for score in mine.values())
        p = improvement_interval([list(mine.values())], [list(ppo.values())])
        lines.append(
            f"| {env_id} | {budget['n_timesteps']:,} | {len(mine)}, {interval(list(mine.values()))} | {per_seed} | "
            f"{interval(list(ppo.values()))} ({len(ppo)}) | {interval(list(own.values()))} ({len(own)}) | "
            f"{p.point:.2f} [{p.low:.2f}, {p.high:.2f}] |"
        )
        x_tasks.append(list(mine.values()))
        y_tasks.append(list(ppo.values()))
    if x_tasks:
        p = improvement_interval(x_tasks, y_tasks)
        lines += [
            "",
            f"Across the {len(x_tasks)} tasks: P(Reinforce > PPO) = {p.point:.2f} [{p.low:.2f}, {p.high:.2f}].",
        ]
    (EQUAL / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
