"""Run folders: the files ``zoo train`` writes (their names defined here, once) and :func:`load_run` reading one.

``logs/<algo>/<env>_<k>/`` holds the final model ``<env>.zip``, ``best_model.zip`` (periodic evaluation),
``config.yml`` (:meth:`zoo.config.RunConfig.to_data`), ``command.txt``, ``vec_normalize.json`` when the run
normalizes, ``evaluations.npz``, ``progress.csv`` and TensorBoard events. A benchmark run folder
(``runs/<algo>/<env>/seed<k>/``) keeps the final model, config.yml and vec_normalize.json, plus ``result.json``.

``vec_normalize.json`` is the pickle-free file a packaged agent keeps too (:mod:`zoo.normalization`), so one reader
serves both. :func:`load_run` also reads a packaged agent's folder (config.json + model.safetensors), without
pickle, through :func:`zoo.agent_format.load_agent`, and the run folder of rl_zoo3's ``train`` (through
``python -m zoo.rl_zoo3``): the model beside ``<env>/``, which holds rl_zoo3's config.yml and args.yml, the
statistics as SB3's pickle ``vecnormalize.pkl``, and ``vec_normalize.json`` (:func:`rl_zoo3_params`).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecNormalize

from zoo.agent_format import CONFIG_JSON, WEIGHTS_FILE, load_agent, write_json
from zoo.algos import ALGOS
from zoo.checks import clipped, read_json, shown
from zoo.config import RunConfig
from zoo.errors import ZooError, first_line
from zoo.folders import write_atomically
from zoo.normalization import JSON_FILE as VEC_NORMALIZE_JSON
from zoo.normalization import VecNormalizeStats
from zoo.yaml_data import safe_yaml

CONFIG_YML = "config.yml"
# SB3's pickle (``VecNormalize.save``), which run folders kept before vec_normalize.json: never read, only named,
# so that such a folder is refused with the command that converts it rather than evaluated on raw observations.
PICKLED_VEC_NORMALIZE = "vecnormalize.pkl"
CONVERT_COMMAND = "python benchmarks/convert_vecnormalize.py"
# The file of rl_zoo3's parameter folder that rl_zoo3 itself looks for (``*/args.yml``), and the command that
# writes vec_normalize.json there from a pickle that the shim's train did not convert (a run trained before it did).
RL_ZOO3_ARGS = "args.yml"
RL_ZOO3_CONVERT_COMMAND = "python -m zoo.rl_zoo3 convert-stats"
COMMAND_FILE = "command.txt"
BEST_MODEL_FILE = "best_model.zip"
EVALUATIONS_FILE = "evaluations.npz"
RESULT_FILE = "result.json"


def env_slug(env_id: str) -> str:
    """An env id as a file or repository name ("ALE/Pong-v5" -> "ALE-Pong-v5")."""
    return env_id.replace("/", "-")


def model_file(env_id: str) -> str:
    """The final model's file name in a run folder."""
    return f"{env_id}.zip"


def claim_run_dir(log_folder: Path, algo: str, env_id: str) -> Path:
    """Create and return ``log_folder/<algo>/<env>_<k>`` with the first ``k`` not taken.

    The folder is claimed by creating it (``mkdir`` fails if it exists), so two runs started at the same instant
    into one log folder get two folders instead of racing on the same index. An unusable log folder (a file, no
    permission, a read-only disk) is one ZooError.
    """
    parent = log_folder / algo
    try:
        parent.mkdir(parents=True, exist_ok=True)
        taken = {p.name for p in parent.iterdir()}
        index = 1
        while True:
            while f"{env_id}_{index}" in taken:
                index += 1
            run_dir = parent / f"{env_id}_{index}"
            try:
                run_dir.mkdir()
                return run_dir
            except FileExistsError:  # another run took it since we listed the folder
                taken.add(run_dir.name)
    except OSError as error:
        raise ZooError(f"cannot create a run folder under {log_folder}: {first_line(error)}") from None


@dataclass
class Run:
    """A trained model with what its run folder says about it."""

    model: BaseAlgorithm
    model_path: Path
    config: RunConfig | None  # config.yml, when present
    seed: int | None  # config.yml's seed
    stats: VecNormalizeStats | None  # vec_normalize.json, when the run normalizes
    command: str | None  # command.txt, when present and not empty


def save_stats(vec_normalize: VecNormalize, path: Path) -> None:
    """A run's VecNormalize statistics as ``vec_normalize.json`` (what :func:`load_run` reads back)."""
    write_json(path, VecNormalizeStats.from_vec_normalize(vec_normalize).to_json())


def convert_pickled_stats(pickled: Path) -> Path:
    """Write the statistics of SB3's pickle ``pickled`` as ``vec_normalize.json`` beside it (atomically), check that
    the file reads back as the same statistics, and return it; the pickle is left for the caller to keep or delete.

    Unpickling runs whatever code the file names: only the two commands that convert a folder the user made call this,
    never a loader (see :data:`PICKLED_VEC_NORMALIZE`)."""
    try:
        with pickled.open("rb") as file:
            vec_normalize = pickle.load(file)  # what VecNormalize.load does, without an env to attach
    except Exception as error:  # pickle raises many kinds for a file that is not one
        raise ZooError(f"cannot read {pickled} as SB3's VecNormalize pickle ({first_line(error)})") from None
    if not isinstance(vec_normalize, VecNormalize):
        raise ZooError(f"{pickled} holds a {type(vec_normalize).__name__}, not a VecNormalize")
    target = write_atomically(
        pickled.with_name(VEC_NORMALIZE_JSON), lambda path: save_stats(vec_normalize, path), "statistics"
    )
    expected = VecNormalizeStats.from_vec_normalize(vec_normalize).to_json()
    if VecNormalizeStats.from_json(read_json(target)).to_json() != expected:
        raise ZooError(f"{target} does not read back as the statistics of {pickled}")
    return target


def load_run(path: str | Path, env_id: str) -> Run:
    """A model written by ``zoo train`` with its run folder's config, VecNormalize statistics and command, or a
    packaged agent.

    ``path`` is the model zip, the run folder (its ``<env_id>.zip``, else ``best_model.zip``), or a packaged
    agent's folder (one with a config.json), which is rebuilt without pickle. A zip is a local file the user
    points at, so unpickling it is their own choice. When config.yml says the run normalizes (or rl_zoo3's pickle
    says it does), its vec_normalize.json must be there: without it the agent would see raw observations and score
    far below its level, so it is refused instead.
    """
    path = Path(path)
    if path.is_dir() and (path / CONFIG_JSON).is_file():
        return _load_package(path)
    if path.is_dir():
        candidates = [path / model_file(env_id), path / model_file(env_slug(env_id)), path / BEST_MODEL_FILE]
        found = next((p for p in candidates if p.is_file()), None)
        if found is None:
            raise ZooError(f"no model in {path}: expected {model_file(env_id)} or {BEST_MODEL_FILE}")
        path = found
    if not path.is_file():
        raise ZooError(f"model file not found: {path}")
    run_dir = path.parent
    config, seed, stats = read_run_folder(run_dir, env_id)
    model = _load_model(path, [config.algo] if config else list(ALGOS))
    # rl_zoo3 writes the command that trained the run into its parameter folder.
    params = rl_zoo3_params(run_dir, env_id)
    places = [run_dir / COMMAND_FILE, *([params / COMMAND_FILE] if params is not None else [])]
    command_path = next((place for place in places if place.is_file()), None)
    command = command_path.read_text(encoding="utf-8", errors="replace").strip() if command_path else None
    return Run(model, path, config, seed, stats, command or None)


def read_run_folder(run_dir: Path, env_id: str) -> tuple[RunConfig | None, int | None, VecNormalizeStats | None]:
    """What a run folder says about its model: config.yml and its seed (None when absent), and the VecNormalize
    statistics (None when the run does not normalize); a ZooError for a broken file or missing statistics."""
    config, seed = _read_config(run_dir / CONFIG_YML)
    return config, seed, _read_stats(run_dir, env_id, config)


def rl_zoo3_params(run_dir: Path, env_id: str | None = None) -> Path | None:
    """The folder in which rl_zoo3 keeps a run's config.yml, args.yml and statistics (``<run>/<env>/``), or None
    when ``run_dir`` is not an rl_zoo3 run. Found by its args.yml, as rl_zoo3 finds it: the one named after
    ``env_id``, else the only one."""
    if env_id is not None and (run_dir / env_slug(env_id) / RL_ZOO3_ARGS).is_file():
        return run_dir / env_slug(env_id)
    found = [path.parent for path in run_dir.glob(f"*/{RL_ZOO3_ARGS}")]
    return found[0] if len(found) == 1 else None


def _read_config(path: Path) -> tuple[RunConfig | None, int | None]:
    """config.yml beside a model, validated (a broken one is one ZooError naming it), and its seed."""
    if not path.is_file():
        return None, None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ZooError(f"cannot read {path}: {first_line(error)}") from None
    data = safe_yaml(text, str(path))
    config = RunConfig.from_data(data, source=str(path))
    return config, config.seed


def _load_model(path: Path, algos: list[str]) -> BaseAlgorithm:
    errors: list[str] = []
    for name in algos:
        try:
            return ALGOS[name].load(path, device="cpu")
        except Exception as error:  # SB3 raises many kinds for a zip of another algorithm or no zip at all
            errors.append(f"{name}: {first_line(error)}")
    raise ZooError(f"{path} is not a model this zoo can load ({clipped('; '.join(errors))})")


def _load_package(folder: Path) -> Run:
    """A packaged agent (:func:`zoo.agent_format.save_agent`), rebuilt without pickle, with its config.yml."""
    model, _, stats = load_agent(folder, device="cpu")
    config, seed = _read_config(folder / CONFIG_YML)
    return Run(model, folder / WEIGHTS_FILE, config, seed, stats, None)


def _read_stats(run_dir: Path, env_id: str, config: RunConfig | None) -> VecNormalizeStats | None:
    """The run's vec_normalize.json (in rl_zoo3's parameter folder for an rl_zoo3 run), or None when the run does
    not normalize; a ZooError when config.yml says it does (or a pickle says it did) and the statistics are not
    there. A pickle is never read: the error names the command that converts it."""
    path = run_dir / VEC_NORMALIZE_JSON
    if path.is_file():
        return VecNormalizeStats.from_json(read_json(path))
    params = rl_zoo3_params(run_dir, env_id)
    if params is not None and (params / VEC_NORMALIZE_JSON).is_file():
        return VecNormalizeStats.from_json(read_json(params / VEC_NORMALIZE_JSON))
    if params is not None and (params / PICKLED_VEC_NORMALIZE).is_file():
        raise ZooError(
            f"{run_dir} is an rl_zoo3 run whose VecNormalize statistics are only in SB3's pickle "
            f"{params.name}/{PICKLED_VEC_NORMALIZE}, which the zoo does not unpickle; if you trained it yourself, "
            f"write them as {VEC_NORMALIZE_JSON} once with `{RL_ZOO3_CONVERT_COMMAND} {run_dir}`"
        )
    if (run_dir / PICKLED_VEC_NORMALIZE).is_file():
        raise ZooError(
            f"{run_dir} keeps its VecNormalize statistics as SB3's pickle {PICKLED_VEC_NORMALIZE}, which the zoo no "
            f"longer reads: convert it to {VEC_NORMALIZE_JSON} once with `{CONVERT_COMMAND} {run_dir}`"
        )
    if config is not None and config.normalize is not False:
        raise ZooError(
            f"{run_dir / CONFIG_YML} says the run normalizes (normalize: {shown(config.normalize)}), but "
            f"{VEC_NORMALIZE_JSON} is missing beside the model; without it the agent would see raw observations"
        )
    return None
