"""python -m zoo evaluate: the mean +/- std return, and every episode's length, of a saved agent: a model zip,
the run folder of `zoo train`, a packaged agent's folder, or a packaged agent on the Hugging Face Hub (--repo-id).

The agent plays deterministic episodes of its own env (the one its config.yml or config.json names, unless --env
says another), seen through its VecNormalize statistics when it has them, from the eval seed --seed: the same
episodes as zoo train's final score with the same seed and number of episodes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from zoo.agent_format import CONFIG_JSON
from zoo.bounds import check_episodes, check_seed
from zoo.episodes import check_can_render, episodes, play
from zoo.errors import ZooError
from zoo.parsers import evaluate_parser
from zoo.runs import load_run, trained_env_id


def agent_env(given: str | None, trained: str | None, source: str) -> str:
    """The env to evaluate on: ``--env``, else the one the agent was trained on; a note when the two differ."""
    if given is None and trained is None:
        raise ZooError(f"--env is needed: {source} has no config.yml or config.json that names its env")
    if given is not None and trained is not None and given != trained:
        print(f"note: {source} was trained on {trained}; evaluating it on {given}", file=sys.stderr)
    return str(given or trained)


def main(argv: list[str] | None = None) -> int:
    args = evaluate_parser().parse_args(argv)
    check_episodes(args.episodes)
    check_seed(args.seed, "--seed")
    if args.render:
        check_can_render()
    packaged = args.model is not None and (Path(args.model) / CONFIG_JSON).is_file()
    if args.repo_id is not None or packaged:
        # A download, or a packaged folder, read as `zoo enjoy` reads it: each file checked against manifest.json.
        from zoo.hub.pull import load_from_folder, load_from_hub

        source: str = args.repo_id or args.model
        agent = (
            load_from_hub(args.repo_id, device="cpu") if args.repo_id else load_from_folder(args.model, device="cpu")
        )
        trained: str | None = agent.env_id
        model, stats, kwargs = agent.model, agent.vec_normalize_stats, agent.env_kwargs
        env_id = agent_env(args.env, trained, source)
    else:
        source, trained = args.model, trained_env_id(args.model)
        env_id = agent_env(args.env, trained, source)
        # A run folder's zip is named after its own env.
        run = load_run(args.model, trained or env_id, allow_pickle=args.allow_pickle)
        model, stats = run.model, run.stats
        kwargs = run.config.env_kwargs if run.config is not None else {}
    # The agent's env_kwargs belong to its own env; another env is evaluated as registered.
    env_kwargs = kwargs if env_id == trained else {}
    try:
        played = play(
            model,
            env_id,
            env_kwargs,
            stats,
            args.episodes,
            seed=args.seed,
            deterministic=args.deterministic,
            render=args.render,
        )
    except ZooError as error:
        if trained is None or env_id == trained:
            raise
        raise ZooError(f"{source} was trained on {trained}, not {env_id}: {error}") from None
    mean, std = float(np.mean(played.rewards)), float(np.std(played.rewards))
    mode = "deterministic" if args.deterministic else "stochastic"
    over = f"over {episodes(args.episodes)} ({mode}, eval seed {args.seed})"
    print(f"{env_id}: mean_reward = {mean:.2f} +/- {std:.2f} {over}")
    print(f"episode lengths: {played.lengths}")
    return 0
