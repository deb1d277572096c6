"""Run folders: the files ``zoo train`` writes (their names defined here, once) and :func:`load_run` reading one.

``logs/<algo>/<env>_<k>/`` holds the final model ``<env>.zip``, ``best_model.zip`` (periodic evaluation),
``config.yml`` (:meth:`zoo.config.RunConfig.to_data`), ``command.txt``, ``vec_normalize.json`` when the run
normalizes, ``evaluations.npz``, ``progress.csv`` and TensorBoard events. A benchmark run folder
(``runs/<algo>/<env>/seed<k>/``) keeps the final model, config.yml and vec_normalize.json, plus ``result.json``.

``vec_normalize.json`` is the pickle-free file a packaged agent keeps too (:mod:`zoo.normalization`), so one reader
serves both. :func:`load_run` also reads a packaged agent's folder (config.json + model.safetensors), without
pickle, through :func:`zoo.agent_format.load_agent`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecNormalize

from zoo.agent_format import CONFIG_JSON, WEIGHTS_FILE, load_agent, write_json
from zoo.algos import ALGOS
from zoo.checks import clipped, is_integer, read_json, shown
from zoo.config import RunConfig, safe_yaml
from zoo.errors import ZooError, first_line
from zoo.normalization import JSON_FILE as VEC_NORMALIZE_JSON
from zoo.normalization import VecNormalizeStats

CONFIG_YML = "config.yml"
# SB3's pickle (``VecNormalize.save``), which run folders kept before vec_normalize.json: never read, only named,
# so that such a folder is refused with the command that converts it rather than evaluated on raw observations.
PICKLED_VEC_NORMALIZE = "vecnormalize.pkl"
CONVERT_COMMAND = "python benchmarks/convert_vecnormalize.py"
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


def load_run(path: str | Path, env_id: str) -> Run:
    """A model written by ``zoo train`` with its run folder's config, VecNormalize statistics and command, or a
    packaged agent.

    ``path`` is the model zip, the run folder (its ``<env_id>.zip``, else ``best_model.zip``), or a packaged
    agent's folder (one with a config.json), which is rebuilt without pickle. A zip is a local file the user
    points at, so unpickling it is their own choice. When config.yml says the run normalizes, its
    vec_normalize.json must be there: without it the agent would see raw observations and score far below its
    level, so it is refused instead.
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
    config, seed = _read_config(run_dir / CONFIG_YML)
    model = _load_model(path, [config.algo] if config else list(ALGOS))
    stats = _read_stats(run_dir, config)
    command_path = run_dir / COMMAND_FILE
    command = command_path.read_text(encoding="utf-8", errors="replace").strip() if command_path.is_file() else None
    return Run(model, path, config, seed, stats, command or None)


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
    seed = data.get("seed")
    if seed is not None and not (is_integer(seed) and seed >= 0):
        raise ZooError(f"{path}: seed must be an integer >= 0, got {shown(seed)}")
    return config, seed


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


def _read_stats(run_dir: Path, config: RunConfig | None) -> VecNormalizeStats | None:
    """The run's vec_normalize.json, or None when the run does not normalize; a ZooError when config.yml says it
    does (or an old pickle says it did) and the statistics are not there."""
    path = run_dir / VEC_NORMALIZE_JSON
    if path.is_file():
        return VecNormalizeStats.from_json(read_json(path))
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
