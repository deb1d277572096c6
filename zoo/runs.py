"""Run folders: the files ``zoo train`` writes (their names defined here, once) and :func:`load_run` reading one.

``logs/<algo>/<env>_<k>/`` holds the final model ``<env>.zip``, ``best_model.zip`` (periodic evaluation),
``config.yml`` (:meth:`zoo.config.RunConfig.to_data`), ``command.txt``, ``vecnormalize.pkl`` when the run
normalizes, ``evaluations.npz``, ``progress.csv`` and TensorBoard events. A benchmark run folder
(``runs/<algo>/<env>/seed<k>/``) keeps the final model, config.yml and vecnormalize.pkl, plus ``result.json``.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecNormalize

from zoo.algos import ALGOS
from zoo.checks import clipped, is_integer, shown
from zoo.config import RunConfig, safe_yaml
from zoo.errors import ZooError, first_line
from zoo.normalization import VecNormalizeStats

CONFIG_YML = "config.yml"
VEC_NORMALIZE_PKL = "vecnormalize.pkl"
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
    stats: VecNormalizeStats | None  # vecnormalize.pkl, when present
    command: str | None  # command.txt, when present and not empty


def load_run(path: str | Path, env_id: str) -> Run:
    """A model written by ``zoo train`` with its run folder's config, VecNormalize statistics and command.

    ``path`` is the model zip or the run folder (its ``<env_id>.zip``, else ``best_model.zip``). These are local
    files the user made, so unpickling the zip and vecnormalize.pkl here is their own choice.
    """
    path = Path(path)
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
    stats = _read_vec_normalize(run_dir / VEC_NORMALIZE_PKL, env_id)
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


def _read_vec_normalize(path: Path, env_id: str) -> VecNormalizeStats | None:
    """SB3's pickled VecNormalize (``VecNormalize.save``) as statistics, or None when there is none."""
    if not path.is_file():
        return None
    try:
        with path.open("rb") as file:
            vec_normalize = pickle.load(file)  # what VecNormalize.load does, without an env to attach
        if not isinstance(vec_normalize, VecNormalize):
            raise TypeError(f"it holds a {type(vec_normalize).__name__}, not a VecNormalize")
        return VecNormalizeStats.from_vec_normalize(vec_normalize)
    except Exception as error:
        raise ZooError(f"cannot load {path} for {env_id}: {first_line(error)}") from None
