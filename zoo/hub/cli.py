"""``python -m zoo push``, ``python -m zoo enjoy`` and ``python -m zoo push-all``."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from zoo.agent_format import CONFIG_JSON, read_config
from zoo.checks import shown
from zoo.config import check_seed
from zoo.errors import ZooError, first_line
from zoo.evaluate import DEFAULT_EVAL_SEED
from zoo.hub import client
from zoo.hub.card import format_metric, human_size, render_card
from zoo.hub.layout import repo_name
from zoo.hub.package import MIN_EVAL_EPISODES, verify_package
from zoo.hub.pull import choose_env_kwargs, load_from_hub
from zoo.hub.push import push_folder, push_run
from zoo.hub.video import DEFAULT_VIDEO_LENGTH, MUJOCO_VIDEO_LENGTH

HUB_CARDS_DIR = Path("hub_cards")
PUSH = (
    "Evaluate an agent, record a replay, render its model card and upload it to the Hugging Face Hub in one "
    "commit (token: HF_TOKEN or `hf auth login`)."
)
ENJOY = (
    "Download an agent from the Hugging Face Hub (pickle-free unless --allow-pickle), evaluate it and print "
    "mean +/- std reward."
)
PUSH_ALL = (
    "Push every packaged agent folder under hub_cards/ (those with a config.json) to ORG/<algo>-<env id>, e.g. "
    "ORG/reinforce-CartPole-v1."
)
# push's options that go to push_to_hub under their own name
PUSH_OPTIONS = ("private", "commit_message", "n_eval_episodes", "video_length", "eval_seed", "force", "timeout")
# The library's messages name its parameters; the commands' name the flags that set them.
FLAG_NAMES = (
    ("dry_run_dir ", "--dry-run "),
    ("force=True", "--force"),
    ("private=True", "--private"),
    ("a larger timeout", "a larger --timeout"),
    ("timeout must be", "--timeout must be"),
    ("n_eval_episodes must be", "--n-eval-episodes must be"),
    ("package it with package_agent", "package it with zoo push --dry-run"),
)


def in_flags(message: str) -> str:
    """``message`` of the library, with its parameter names replaced by the flags of the commands."""
    for name, flag in FLAG_NAMES:
        message = message.replace(name, flag)
    return message


@contextlib.contextmanager
def _flag_names() -> Iterator[None]:
    """A ZooError of the library, raised again in the commands' words (:func:`in_flags`)."""
    try:
        yield
    except ZooError as error:
        raise ZooError(in_flags(str(error))) from None


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """States every real default; required options and flags (default None/False) say theirs in words."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.required or action.default is None or action.default is False:
            return action.help or ""
        return super()._get_help_string(action) or ""


def _parser(command: str, description: str) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(
        prog=f"python -m zoo {command}", description=description, formatter_class=_HelpFormatter
    )


def _print_warnings(warnings: list[str]) -> None:
    for message in warnings:
        print(f"warning: {in_flags(message)}", file=sys.stderr)


def _add_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=float,
        default=client.DEFAULT_TIMEOUT_S,
        help="seconds each request may wait for the Hub before it is retried, then reported",
    )


def _describe_files(files: dict[str, int]) -> str:
    return ", ".join(f"{name} ({human_size(size)})" for name, size in sorted(files.items()))


def push_main(argv: list[str]) -> int:
    parser = _parser("push", PUSH)
    parser.add_argument(
        "--model",
        required=True,
        help="the model zip written by `zoo train` (or its run folder); "
        "config.yml, vecnormalize.pkl and command.txt are read from the same folder",
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
        default=MIN_EVAL_EPISODES,
        help=f"deterministic evaluation episodes (>= {MIN_EVAL_EPISODES})",
    )
    parser.add_argument("--eval-seed", type=int, default=DEFAULT_EVAL_SEED, help="seed of the evaluation env")
    parser.add_argument(
        "--video-length",
        type=int,
        default=None,
        help=f"most frames in replay.mp4 (default: {DEFAULT_VIDEO_LENGTH}, MuJoCo envs {MUJOCO_VIDEO_LENGTH})",
    )
    parser.add_argument("--no-video", action="store_true", help="do not record replay.mp4 (default: record it)")
    _add_timeout(parser)
    args = parser.parse_args(argv)
    check_seed(args.eval_seed, "--eval-seed")
    if args.force and args.dry_run is None:
        raise ZooError("--force only applies to --dry-run DIR")
    options = {name: getattr(args, name) for name in PUSH_OPTIONS}
    with _flag_names():
        result = push_run(
            args.model, args.env, args.repo_id, dry_run_dir=args.dry_run, record_video=not args.no_video, **options
        )
    _print_warnings(result.warnings)
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
    parser = _parser("enjoy", ENJOY)
    parser.add_argument("--repo-id", required=True, help="repository, ORG/NAME")
    parser.add_argument("--revision", default=None, help="branch, tag or commit sha (default: main)")
    parser.add_argument("--episodes", type=int, default=10, help="evaluation episodes")
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
    parser.add_argument("--device", default="auto", help="torch device")
    parser.add_argument(
        "--use-env-kwargs",
        action="store_true",
        help="make the env with the env_kwargs the agent was trained with, as its config.json records them "
        "(default: the env as registered)",
    )
    _add_timeout(parser)
    args = parser.parse_args(argv)
    if args.episodes < 1:
        raise ZooError(f"--episodes must be >= 1, got {args.episodes}")
    check_seed(args.seed, "--seed")
    with _flag_names():
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
    print(
        f"{args.repo_id}@{agent.revision[:12]} on {args.env or agent.env_id}: mean_reward "
        f"{format_metric(mean, std)} over {args.episodes} {mode} episodes"
    )
    return 0


def packaged_folders(root: Path) -> list[Path]:
    """The agent folders under ``root`` (each holding a config.json), sorted."""
    if not root.is_dir():
        raise ZooError(f"{root} is not a folder")
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / CONFIG_JSON).is_file())


def push_all_main(argv: list[str]) -> int:
    parser = _parser("push-all", PUSH_ALL)
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
    _add_timeout(parser)
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
            _print_warnings(result.warnings)
            print(f"pushed {folder} to {result.url} at commit {result.commit}")
        except Exception as error:  # one bad folder is reported, and the others are still pushed
            message = in_flags(str(error)) if isinstance(error, ZooError) else first_line(error)
            print(f"error: {folder}: {message}", file=sys.stderr)
            failures.append(folder.name)
    if failures:
        raise ZooError(f"{len(failures)} of {len(folders)} agents were not pushed: {', '.join(failures)}")
    return 0
