"""``python -m zoo push``, ``python -m zoo enjoy`` and ``python -m zoo push-all``."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from zoo.agent_format import CONFIG_JSON, read_config
from zoo.bounds import check_episodes, check_seed
from zoo.checks import shown
from zoo.episodes import check_can_render, episodes
from zoo.errors import ZooError, first_line, in_words_of
from zoo.hub import client
from zoo.hub.card import format_metric, human_size, render_card
from zoo.hub.layout import repo_name
from zoo.hub.package import verify_package
from zoo.hub.pull import choose_env_kwargs, load_from_folder, load_from_hub
from zoo.hub.push import PushOptions, push_folder, push_run
from zoo.parsers import HUB_CARDS_DIR, enjoy_parser, push_all_parser, push_parser

# The library's messages name its parameters (zoo.errors.Parameter); each command names the flags that set them.
# The library's way to package an agent is, on the command line, a dry run of push.
PACKAGE = {"package_agent": "zoo push --dry-run"}
PUSH_FLAGS = {
    "dry_run_dir": "--dry-run",
    "force": "--force",
    "private": "--private",
    "timeout": "--timeout",
    "n_eval_episodes": "--n-eval-episodes",
    "n_eval_seeds": "--eval-seeds",
    **PACKAGE,
}
ENJOY_FLAGS = {"timeout": "--timeout", "device": "--device", **PACKAGE}
PUSH_ALL_FLAGS = {"private": "--private", "timeout": "--timeout", **PACKAGE}


@contextlib.contextmanager
def _flag_names(flags: dict[str, str]) -> Iterator[None]:
    """A ZooError of the library, raised again in a command's words: its parameters named by ``flags``."""
    try:
        yield
    except ZooError as error:
        raise ZooError(in_words_of(flags, error)) from None


def _print_warnings(warnings: list[str], flags: dict[str, str]) -> None:
    for message in warnings:
        print(f"warning: {in_words_of(flags, message)}", file=sys.stderr)


def _describe_files(files: dict[str, int]) -> str:
    return ", ".join(f"{name} ({human_size(size)})" for name, size in sorted(files.items()))


def push_main(argv: list[str]) -> int:
    parser = push_parser()
    args = parser.parse_args(argv)
    check_seed(args.eval_seed, "--eval-seed")
    if args.force and args.dry_run is None:
        raise ZooError("--force only applies to --dry-run DIR")
    options = PushOptions(
        private=args.private,
        commit_message=args.commit_message,
        dry_run_dir=None if args.dry_run is None else Path(args.dry_run),
        force=args.force,
        n_eval_episodes=args.n_eval_episodes,
        eval_seed=args.eval_seed,
        n_eval_seeds=args.eval_seeds,
        allow_pickle=args.allow_pickle,
        record_video=not args.no_video,
        video_length=args.video_length,
        timeout=args.timeout,
    )
    with _flag_names(PUSH_FLAGS):
        result = push_run(args.model, args.env, args.repo_id, options)
    _print_warnings(result.warnings, PUSH_FLAGS)
    metric = format_metric(result.results["mean_reward"], result.results["std_reward"])
    if result.folder is not None:
        print(
            f"dry run: wrote {result.folder} for {args.repo_id} (mean_reward {metric}): {_describe_files(result.files)}"
        )
    else:
        print(
            f"pushed {args.env} agent to {result.url} at commit {result.commit} (mean_reward {metric}): "
            f"{_describe_files(result.files)}"
        )
        if result.deleted:
            print(f"removed files of the previous push: {', '.join(result.deleted)}")
    return 0


def enjoy_main(argv: list[str]) -> int:
    parser = enjoy_parser()
    args = parser.parse_args(argv)
    check_episodes(args.episodes)
    check_seed(args.seed, "--seed")
    if args.render:
        check_can_render()
    if args.folder is not None and args.revision is not None:
        raise ZooError("--revision applies to --repo-id only; a --folder is read as it is")
    with _flag_names(ENJOY_FLAGS):
        if args.folder is not None:
            agent = load_from_folder(args.folder, allow_pickle=args.allow_pickle, device=args.device)
        else:
            agent = load_from_hub(
                args.repo_id, args.revision, allow_pickle=args.allow_pickle, device=args.device, timeout=args.timeout
            )
    env_kwargs, note = choose_env_kwargs(agent, args.env, apply=args.use_env_kwargs)
    if note is not None and args.use_env_kwargs:
        print(note)
    elif note is not None:
        print(f"warning: {note} (--use-env-kwargs applies them)", file=sys.stderr)
    mean, std = agent.evaluate(
        args.episodes,
        deterministic=not args.stochastic,
        env_id=args.env,
        seed=args.seed,
        render=args.render,
        env_kwargs=env_kwargs,
    )
    mode = "stochastic" if args.stochastic else "deterministic"
    where = args.folder if args.folder is not None else f"{args.repo_id}@{(agent.revision or '')[:12]}"
    print(
        f"{where} on {args.env or agent.env_id}: mean_reward "
        f"{format_metric(mean, std)} over {episodes(args.episodes)} ({mode}, eval seed {args.seed})"
    )
    return 0


def packaged_folders(root: Path) -> list[Path]:
    """The agent folders under ``root`` (each holding a config.json), sorted."""
    if not root.is_dir():
        raise ZooError(f"{root} is not a folder")
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / CONFIG_JSON).is_file())


def push_all_main(argv: list[str]) -> int:
    parser = push_all_parser()
    args = parser.parse_args(argv)
    try:
        client.check_repo_id(f"{args.org}/x")
    except ZooError:
        raise ZooError(f"invalid --org {shown(args.org)}: a user or organization name, without '/'") from None
    if args.hub_cards is None and not HUB_CARDS_DIR.is_dir():
        # The default is the checkout's packaged agents: elsewhere there is nothing to push from.
        raise ZooError(
            f"--hub-cards is needed here: the default, {HUB_CARDS_DIR}, is the folder of a checkout of sb3-reinforce"
        )
    cards = Path(args.hub_cards) if args.hub_cards is not None else HUB_CARDS_DIR
    folders = packaged_folders(cards)
    if not folders:
        raise ZooError(f"no packaged agents (folders with a {CONFIG_JSON}) under {cards}")
    failures: list[str] = []
    for folder in folders:
        try:
            config = read_config(folder)
            repo_id = f"{args.org}/{repo_name(config['algo'], config['env_id'])}"
            if args.dry_run:
                _, names = verify_package(folder)
                render_card(folder, repo_id)
                files = {name: (folder / name).stat().st_size for name in names}
                print(f"would push {folder} to {repo_id}: {_describe_files(files)}")
                continue
            result = push_folder(
                folder, repo_id, private=args.private, commit_message=args.commit_message, timeout=args.timeout
            )
            _print_warnings(result.warnings, PUSH_ALL_FLAGS)
            print(f"pushed {folder} to {result.url} at commit {result.commit}")
        except Exception as error:  # one bad folder is reported, and the others are still pushed
            message = in_words_of(PUSH_ALL_FLAGS, error) if isinstance(error, ZooError) else first_line(error)
            print(f"error: {folder}: {message}", file=sys.stderr)
            failures.append(folder.name)
    if failures:
        raise ZooError(f"{len(failures)} of {len(folders)} agents were not pushed: {', '.join(failures)}")
    return 0
