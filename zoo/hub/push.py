"""Publishing: :func:`push_to_hub` (a model), :func:`push_folder` (a packaged folder as is) and
:func:`package_agent` (a ``zoo train`` run, packaged for a later push). All three stage the folder, take its
inventory and either write it to a local folder (a dry run) or upload it in one commit, through :func:`_deliver`.

A dry run never removes a file it did not write: it creates a new folder, fills an empty one, or (``force``)
replaces in a non-empty one only the files it writes and those an earlier dry run recorded in the folder's
manifest.json. It refuses the run folder of the model it packages, and any folder inside or around it.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm

from zoo.agent_format import read_config
from zoo.algos import algo_name
from zoo.checks import read_json
from zoo.config import RunConfig
from zoo.errors import Parameter, ZooError
from zoo.folders import move_into_place, staging, write_atomically
from zoo.hub import client
from zoo.hub.card import format_metric, render_card
from zoo.hub.layout import (
    CARD_FILE,
    MANIFEST_FILE,
    RESULTS_FILE,
    check_results,
    parse_manifest,
    repo_name,
    write_manifest,
)
from zoo.hub.package import build_package, inventory, run_config_of, verify_package
from zoo.measure import read_record
from zoo.normalization import VecNormalizeStats
from zoo.parsers import CARD_EVAL_EPISODES, CARD_EVAL_SEEDS, DEFAULT_EVAL_SEED, MIN_EVAL_EPISODES
from zoo.runs import RESULT_FILE, Run, load_run

PLACEHOLDER_ORG = "ORG"
DRY_RUN_DIR = Parameter("dry_run_dir")
STAGING_PREFIX = "zoo-hub-"
# A benchmark run's folder, as zoo.measure.Task names it; seed<k>.partial is a run still training.
SEED_FOLDER = re.compile(r"seed[0-9]+")


@dataclass(frozen=True)
class PushOptions:
    """How an agent is evaluated, packaged and published by :func:`push_to_hub` (and :func:`push_run`).

    :param private: create the repository private (an existing one keeps its visibility, with a warning).
    :param commit_message: the commit's message; None: the agent and its mean reward.
    :param dry_run_dir: write the folder that would be uploaded there instead, and touch no network: a new or
        empty folder, a non-empty one only with ``force`` (see the module doc), never the model's run folder or a
        folder inside or around it.
    :param force: let a dry run write into a non-empty ``dry_run_dir``.
    :param n_eval_episodes: deterministic evaluation episodes (at least :data:`~zoo.parsers.MIN_EVAL_EPISODES`).
    :param eval_seed: the first seed of the evaluation env (the replay's).
    :param n_eval_seeds: the eval seeds ``eval_seed``, ``eval_seed + 1``, ... the episodes are dealt over.
    :param allow_pickle: for :func:`push_run`, load a zip without its run's config.yml with SB3's ``load``, which
        unpickles it (:func:`zoo.runs.load_run`).
    :param record_video: record ``replay.mp4`` (a failure only costs the video, with a warning).
    :param video_length: most frames in ``replay.mp4``; None: 1,000, or 200 for MuJoCo envs (rendered in software).
    :param token: the Hub token; None: ``HF_TOKEN`` or ``hf auth login``'s.
    :param endpoint: the Hub's URL; None: ``HF_ENDPOINT`` or huggingface.co.
    :param template_path: the model card's template; None: the zoo's.
    :param timeout: seconds each request may wait for the Hub; None: :data:`zoo.hub.client.DEFAULT_TIMEOUT_S`.
    """

    private: bool = False
    commit_message: str | None = None
    dry_run_dir: Path | None = None
    force: bool = False
    n_eval_episodes: int = CARD_EVAL_EPISODES
    eval_seed: int = DEFAULT_EVAL_SEED
    n_eval_seeds: int = CARD_EVAL_SEEDS
    allow_pickle: bool = False
    record_video: bool = True
    video_length: int | None = None
    token: str | None = None
    endpoint: str | None = None
    template_path: Path | None = None
    timeout: float | None = None


# A push with every option at its default.
DEFAULT_PUSH = PushOptions()


@dataclass
class PushResult:
    """What a push (or a dry run, or :func:`package_agent`) produced."""

    repo_id: str
    files: dict[str, int]
    sha256: dict[str, str]
    results: dict[str, Any]
    commit: str | None = None
    url: str | None = None
    folder: Path | None = None
    deleted: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _dry_run_target(target: Path, *, force: bool, protected: Path | None) -> Path:
    """The folder a dry run may write to, resolved; ZooError for one it must not touch."""
    resolved = target.expanduser().resolve()
    if protected is not None:
        run_dir = protected.resolve()
        if resolved == run_dir or run_dir in resolved.parents or resolved in run_dir.parents:
            raise ZooError(
                DRY_RUN_DIR,
                f" {target}: that is, or is inside or around, the run folder {protected} of the model; "
                "choose a folder of its own",
            )
    if resolved.exists() and not resolved.is_dir():
        raise ZooError(DRY_RUN_DIR, f" {target} exists and is not a folder")
    if resolved.is_dir() and any(resolved.iterdir()) and not force:
        raise ZooError(
            DRY_RUN_DIR,
            f" {target} is not empty; choose a new or empty folder, or pass ",
            Parameter("force", "force=True"),
            " to write into it (replacing only the files it writes and those an earlier dry run listed in its "
            f"{MANIFEST_FILE})",
        )
    return resolved


def _write_into(staged: Path, target: Path) -> None:
    """Write the files of ``staged`` into the existing folder ``target``, each atomically, then remove the files
    that an earlier dry run listed in ``target``'s manifest and this one lacks. Nothing else is touched."""
    earlier: set[str] = set()
    with contextlib.suppress(ZooError):
        if (target / MANIFEST_FILE).is_file():
            earlier = set(parse_manifest(read_json(target / MANIFEST_FILE)))
    names = {path.name for path in staged.iterdir() if path.is_file()}
    for name in [*sorted(names - {MANIFEST_FILE}), MANIFEST_FILE]:  # the manifest last: it vouches for the rest

        def copy(path: Path, source: Path = staged / name) -> None:
            shutil.copyfile(source, path)
            path.chmod(0o644)

        write_atomically(target / name, copy, "file")
    for name in sorted(earlier - names):
        with contextlib.suppress(FileNotFoundError):
            (target / name).unlink()


def _deliver(
    folder: Path,
    repo_id: str,
    *,
    hub: str,
    token: str | None,
    target: Path | None,
    private: bool,
    commit_message: str | None,
    warnings: list[str],
    timeout: float,
) -> PushResult:
    """Write the staged ``folder`` to ``target`` (a dry run) or upload it to ``repo_id`` in one commit."""
    files, digests = inventory(folder)
    config = read_config(folder)
    results = check_results(read_json(folder / RESULTS_FILE), config["env_id"])
    result = PushResult(repo_id=repo_id, files=files, sha256=digests, results=results, warnings=list(warnings))
    if target is not None:
        if target.exists():
            _write_into(folder, target)
        else:
            move_into_place(folder, target)
        result.folder = target
        return result
    assert token is not None
    metric = format_metric(results["mean_reward"], results["std_reward"])
    message = commit_message or f"Push {config['algo']} agent for {config['env_id']}: mean_reward {metric}"
    result.commit, result.deleted, more = client.commit_folder(
        folder,
        repo_id,
        token=token,
        private=private,
        commit_message=message,
        hub=hub,
        timeout=timeout,
    )
    result.warnings += more
    result.url = f"{hub}/{repo_id}"
    return result


def push_to_hub(
    model: BaseAlgorithm,
    env_id: str,
    repo_id: str,
    *,
    options: PushOptions = DEFAULT_PUSH,
    config: RunConfig | None = None,
    vec_normalize: VecNormalizeStats | None = None,
    env_kwargs: dict[str, Any] | None = None,
    train_command: str | None = None,
    run_dir: Path | None = None,
    benchmark: dict[str, Any] | None = None,
) -> PushResult:
    """Evaluate ``model`` on ``env_id``, package it (:mod:`zoo.hub.layout`) and upload it to ``repo_id`` in one
    commit, as ``options`` say; with ``options.dry_run_dir``, write the folder that would be uploaded there
    instead and touch no network.

    :param config: the run's configuration, written as config.yml and used for env_kwargs and the normalization
        check (the seed is the model's); synthesized from the model when None.
    :param vec_normalize: the training VecNormalize's statistics (:meth:`VecNormalizeStats.from_vec_normalize`)
        when the agent normalizes.
    :param env_kwargs: the env's keyword arguments, when not the config's.
    :param train_command: the exact ``python -m zoo train ...`` command (command.txt); rebuilt when None.
    :param run_dir: the model's run folder, which a dry run never writes into or around.
    :param benchmark: the ``zoo benchmark`` seeds the model is one of (:func:`benchmark_of`), kept in results.json
        and shown on the card.
    """
    client.check_repo_id(repo_id)
    seconds = client.check_timeout(options.timeout)
    target = None
    if options.dry_run_dir is not None:
        target = _dry_run_target(options.dry_run_dir, force=options.force, protected=run_dir)
    hub = client.endpoint(options.endpoint)
    token = None if target is not None else client.login(options.token, hub, f"push to {repo_id}", seconds)
    if options.n_eval_episodes < MIN_EVAL_EPISODES:
        raise ZooError(
            Parameter("n_eval_episodes"),
            f" must be >= {MIN_EVAL_EPISODES} for a published result, got {options.n_eval_episodes}",
        )
    if not 1 <= options.n_eval_seeds <= options.n_eval_episodes:
        raise ZooError(
            Parameter("n_eval_seeds"),
            f" must be between 1 and the {options.n_eval_episodes} evaluation episodes, got {options.n_eval_seeds}",
        )
    run = run_config_of(config, model, env_id, vec_normalize)
    with staging(STAGING_PREFIX) as folder:
        warnings = build_package(
            folder,
            model,
            repo_id,
            config=run,
            stats=vec_normalize,
            env_kwargs=env_kwargs,
            n_eval_episodes=options.n_eval_episodes,
            eval_seed=options.eval_seed,
            n_eval_seeds=options.n_eval_seeds,
            train_command=train_command,
            record_video=options.record_video,
            video_length=options.video_length,
            template_path=options.template_path,
            benchmark=benchmark,
        )
        return _deliver(
            folder,
            repo_id,
            hub=hub,
            token=token,
            target=target,
            private=options.private,
            commit_message=options.commit_message,
            warnings=warnings,
            timeout=seconds,
        )


def push_folder(
    folder: str | Path,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool = False,
    commit_message: str | None = None,
    endpoint: str | None = None,
    template_path: Path | None = None,
    timeout: float | None = None,
) -> PushResult:
    """Upload a packaged folder (from :func:`package_agent` or a dry run): exactly the files its manifest lists,
    checked against it, with the card rendered for ``repo_id`` and the manifest written again. Whatever else lies
    in the folder (a draft, a dotfile, a link) is not uploaded."""
    client.check_repo_id(repo_id)
    seconds = client.check_timeout(timeout)
    source = Path(folder)
    _, names = verify_package(source)
    hub = client.endpoint(endpoint)
    hub_token = client.login(token, hub, f"push to {repo_id}", seconds)
    with staging(STAGING_PREFIX) as staged:
        for name in names:
            if name != CARD_FILE:
                shutil.copy2(source / name, staged / name)
        (staged / CARD_FILE).write_text(render_card(staged, repo_id, template_path), encoding="utf-8")
        write_manifest(staged)
        return _deliver(
            staged,
            repo_id,
            hub=hub,
            token=hub_token,
            target=None,
            private=private,
            commit_message=commit_message,
            warnings=[],
            timeout=seconds,
        )


def benchmark_of(run: Run) -> tuple[dict[str, Any] | None, list[str]]:
    """The ``zoo benchmark`` seeds ``run`` is one of, when its folder is a benchmark run's
    (``runs/<algo>/<env>/seed<k>/`` with its result.json): its seed and the final score of every finished seed, read
    from the result.json of each seed folder beside it. None when it is not a benchmark run, and when its
    result.json records another number of steps than the model took (with a warning): the card then leaves the
    benchmark out rather than attribute its scores to another model."""
    folder = run.model_path.parent
    if not (SEED_FOLDER.fullmatch(folder.name) and (folder / RESULT_FILE).is_file()):
        return None, []
    record = read_record(folder)
    if record["n_timesteps"] != run.model.num_timesteps:
        return None, [
            f"{folder / RESULT_FILE} records a run of {record['n_timesteps']:,} steps, the model took "
            f"{run.model.num_timesteps:,}: the card leaves the benchmark out"
        ]
    seeds = [p for p in folder.parent.iterdir() if SEED_FOLDER.fullmatch(p.name) and (p / RESULT_FILE).is_file()]
    records = sorted(map(read_record, seeds), key=lambda other: int(other["seed"]))
    scores = [{"seed": other["seed"], "mean_reward": other["mean_reward"]} for other in records]
    return {"seed": record["seed"], "scores": scores}, []


def push_run(path: str | Path, env_id: str, repo_id: str | None, options: PushOptions = DEFAULT_PUSH) -> PushResult:
    """:func:`push_to_hub` for a model written by ``zoo train`` (the zip or its run folder), with what its run
    folder holds: config.yml, vec_normalize.json and command.txt, and, for a ``zoo benchmark`` run, the scores of
    its seeds (:func:`benchmark_of`). ``repo_id`` None: ``ORG/<algo>-<env>``."""
    run = load_run(path, env_id, allow_pickle=options.allow_pickle)
    name = repo_id or f"{PLACEHOLDER_ORG}/{repo_name(algo_name(run.model), env_id)}"
    benchmark, warnings = benchmark_of(run)
    result = push_to_hub(
        run.model,
        env_id,
        name,
        options=options,
        config=run.config,
        vec_normalize=run.stats,
        train_command=run.command,
        run_dir=run.model_path.parent,
        benchmark=benchmark,
    )
    result.warnings[:0] = warnings
    return result


def package_agent(
    run_dir_or_model_path: str | Path,
    env_id: str,
    out_dir: str | Path,
    *,
    repo_id: str | None = None,
    n_eval_episodes: int = CARD_EVAL_EPISODES,
    record_video: bool = True,
    video_length: int | None = None,
    eval_seed: int = DEFAULT_EVAL_SEED,
    n_eval_seeds: int = CARD_EVAL_SEEDS,
    force: bool = False,
) -> PushResult:
    """Write a ready-to-push folder for a ``zoo train`` run (exactly a push's dry run) to ``out_dir``.

    The card names ``repo_id``, by default ``ORG/<algo>-<env>``; ``push-all`` renders it again for the real org.
    """
    options = PushOptions(
        dry_run_dir=Path(out_dir),
        force=force,
        n_eval_episodes=n_eval_episodes,
        eval_seed=eval_seed,
        n_eval_seeds=n_eval_seeds,
        record_video=record_video,
        video_length=video_length,
    )
    return push_run(run_dir_or_model_path, env_id, repo_id, options)
