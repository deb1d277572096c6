"""The model card of a packaged agent, rendered from ``zoo/model_card_template.md`` with ``ModelCard.from_template``."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from zoo.agent_format import read_config
from zoo.algos import ALGOS
from zoo.checks import read_json
from zoo.hub.layout import CARD_FILE, MANIFEST_FILE, RESULTS_FILE, VIDEO_FILE, check_results, repo_name
from zoo.hub.video import is_mujoco

# A plain file of the package (pyproject.toml's package data): a wheel carries it, and a checkout without symlinks
# has it whole, so every user renders the same card.
TEMPLATE_PATH = Path(__file__).resolve().parent.parent / "model_card_template.md"
TAGS = ["reinforcement-learning", "stable-baselines3", "deep-reinforcement-learning", "sb3-reinforce"]
LICENSE = "mit"  # the Hub's identifier of pyproject.toml's license, MIT
REPOSITORY_URL = "https://github.com/sb3-reinforce/sb3-reinforce"
# pyproject.toml names no documentation site: the docs are the repository's docs/ folder, which GitHub renders.
DOCS_URL = f"{REPOSITORY_URL}/tree/main/docs"
BENCHMARK_URL = f"{REPOSITORY_URL}/blob/main/benchmarks/results/zoo/benchmark.md"
# The README's line: without it, on a machine without a GPU, pip pulls torch's CUDA build (several GB).
CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu   # CPU only; skip with a GPU"


def format_metric(mean: float, std: float) -> str:
    """The model-index value: "500.00 +/- 0.00"."""
    return f"{mean:.2f} +/- {std:.2f}"


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def install_command(env_id: str) -> str:
    """The pip command that installs what playing ``env_id`` needs: no package index serves sb3-reinforce, so it
    comes from the repository, with the mujoco extra for a MuJoCo task."""
    extras = "zoo,mujoco" if is_mujoco(env_id) else "zoo"
    return f'pip install "sb3-reinforce[{extras}] @ git+{REPOSITORY_URL}"'


def replay_caption(replay: dict[str, int] | None) -> dict[str, Any] | None:
    """What the card says of replay.mp4, from results.json's record of it (None: an older push kept none)."""
    if replay is None:
        return None
    frames, length = replay["frames"], replay["episode_length"]
    return {"whole": frames == length, "frames": f"{frames:,}", "episode_length": f"{length:,}"}


def benchmark_summary(benchmark: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the card says of the ``zoo benchmark`` seeds the agent is one of: its score, the best seed (the first
    of tied seeds) and the mean +/- std over the seeds, as the benchmark's table computes them."""
    if benchmark is None:
        return None
    scores = {entry["seed"]: entry["mean_reward"] for entry in sorted(benchmark["scores"], key=lambda e: e["seed"])}
    best = max(scores, key=lambda seed: scores[seed])  # max keeps the first of equal scores
    values = list(scores.values())
    return {
        "seed": benchmark["seed"],
        "score": f"{scores[benchmark['seed']]:.2f}",
        "n_seeds": len(scores),
        "best_seed": best,
        "best_score": f"{scores[best]:.2f}",
        "metric": format_metric(statistics.fmean(values), statistics.pstdev(values)),
    }


def evaluation_summary(results: dict[str, Any]) -> dict[str, Any]:
    """What the card's evaluation table says of the eval seeds, the episodes' ends and the machine."""
    seeds = results.get("eval_seeds") or [{"seed": results.get("eval_seed"), "episodes": results["n_eval_episodes"]}]
    counts = {entry["episodes"] for entry in seeds}
    if len(seeds) == 1:
        seeds_text = f"eval seed {seeds[0]['seed']}"
    else:
        each = f"{counts.pop()} from each" if len(counts) == 1 else "dealt over"
        seeds_text = f"{each} of the eval seeds {', '.join(str(entry['seed']) for entry in seeds)}"
    seed_means = []
    start = 0
    for entry in seeds:
        seed_means.append(statistics.fmean(results["episode_rewards"][start : start + entry["episodes"]]))
        start += entry["episodes"]
    truncated = results.get("episode_truncated")
    machine = results.get("machine") or {}
    libraries = ", ".join(f"{name} {version}" for name, version in machine.items() if name != "cpu")
    return {
        "seeds_text": seeds_text,
        "seed_means": ", ".join(f"{mean:.2f}" for mean in seed_means) if len(seeds) > 1 else "",
        "ended_early": None if truncated is None else sum(not t for t in truncated),
        "machine": ", ".join(part for part in (machine.get("cpu", ""), libraries) if part),
    }


def render_card(folder: Path, repo_id: str, template_path: Path | None = None) -> str:
    """The model card of a packaged folder, from the very files that are uploaded with it."""
    config = read_config(folder)
    results = check_results(read_json(folder / RESULTS_FILE), config["env_id"])
    env_id, algo = config["env_id"], config["algo"]
    metric = format_metric(results["mean_reward"], results["std_reward"])
    card_data = ModelCardData(
        license=LICENSE,
        library_name="stable-baselines3",
        tags=[*TAGS, env_id],
        model_name=repo_name(algo, env_id),
        eval_results=[
            EvalResult(
                task_type="reinforcement-learning",
                task_name="reinforcement-learning",
                dataset_type=env_id,
                dataset_name=env_id,
                metric_type="mean_reward",
                metric_name="mean_reward",
                metric_value=metric,
            )
        ],
    )
    files = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name not in (CARD_FILE, MANIFEST_FILE))
    versions = config.get("versions", {})
    normalize = config.get("normalize") or False
    card = ModelCard.from_template(
        card_data,
        template_path=str(template_path or TEMPLATE_PATH),
        repo_id=repo_id,
        env_id=env_id,
        algo=algo,
        algo_class_name=ALGOS[algo].__name__ if algo in ALGOS else algo,
        metric_value=metric,
        n_eval_episodes=results["n_eval_episodes"],
        deterministic=results.get("deterministic", True),
        eval_seed=results.get("eval_seed"),
        **evaluation_summary(results),
        eval_date=results.get("date"),
        num_timesteps=config.get("num_timesteps"),
        has_video=VIDEO_FILE in files,
        replay=replay_caption(results.get("replay")) if VIDEO_FILE in files else None,
        benchmark=benchmark_summary(results.get("benchmark")),
        benchmark_url=BENCHMARK_URL,
        repository_url=REPOSITORY_URL,
        docs_url=DOCS_URL,
        license_name=LICENSE.upper(),
        cpu_torch=CPU_TORCH,
        install=install_command(env_id),
        train_command=config.get("train_command") or "",
        zip_name=config.get("sb3_zip", {}).get("file", ""),
        policy=config.get("policy"),
        policy_kwargs=json.dumps(config.get("policy_kwargs") or {}, sort_keys=True),
        env_kwargs=json.dumps(config.get("env_kwargs") or {}, sort_keys=True),
        normalize=json.dumps(normalize, sort_keys=True) if normalize else "",
        n_envs=config.get("n_envs"),
        hyperparams=[(name, json.dumps(value)) for name, value in sorted(config.get("hyperparams", {}).items())],
        files=[(name, human_size((folder / name).stat().st_size)) for name in files],
        versions=sorted(versions.items()),
        versions_map=versions,
    )
    return str(card)
