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

import io
import json
import pickle
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gymnasium.spaces import Space
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecNormalize

from zoo.agent_format import CONFIG_JSON, WEIGHTS_FILE, build_model, load_agent, read_config, space_to_json, write_json
from zoo.algos import ALGOS
from zoo.checks import clipped, is_integer, read_bounded, read_json, shown
from zoo.config import RunConfig
from zoo.errors import ZooError, first_line
from zoo.factories import vec_env
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


# A VecNormalize pickle is a few kB (statistics of at most MAX_ELEMENTS entries, zoo.normalization).
MAX_PICKLE_BYTES = 64 << 20
# What SB3's VecNormalize pickle holds (VecNormalize.save, venv left out), measured on SB3 2.9 with numpy 1.x and
# 2.x: the wrapper and its statistics, the spaces (below), numpy's arrays, dtypes, scalars and the generators of
# the spaces. Nothing else of numpy: it has functions that would run code.
PICKLE_CLASSES = {
    ("stable_baselines3.common.vec_env.vec_normalize", "VecNormalize"),
    ("stable_baselines3.common.running_mean_std", "RunningMeanStd"),
    ("collections", "OrderedDict"),
    ("numpy", "dtype"),
    ("numpy", "ndarray"),
    *(
        (module, name)
        for module in ("numpy.core.multiarray", "numpy._core.multiarray")
        for name in ("_reconstruct", "scalar")
    ),
    ("numpy.random._pickle", "__bit_generator_ctor"),
    ("numpy.random._pickle", "__generator_ctor"),
    ("numpy.random._pickle", "__randomstate_ctor"),
    ("numpy.random._pcg64", "PCG64"),
    ("numpy.random._mt19937", "MT19937"),
    ("numpy.random.bit_generator", "SeedSequence"),
    ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"),
}
SPACES_PACKAGE = "gymnasium.spaces."


class StatisticsUnpickler(pickle.Unpickler):
    """An unpickler of SB3's VecNormalize pickle and nothing else: a class or function outside
    :data:`PICKLE_CLASSES` and gymnasium's spaces is refused before it is called, so a hostile file runs nothing."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in PICKLE_CLASSES:
            return super().find_class(module, name)
        if module.startswith(SPACES_PACKAGE) and not name.startswith("_"):
            found = super().find_class(module, name)  # importing gymnasium's own modules runs nothing of the file's
            if isinstance(found, type) and issubclass(found, Space):
                return found
        raise ZooError(
            f"the pickle names {shown(f'{module}.{name}')}, which is not part of SB3's VecNormalize statistics: "
            "refused, and nothing of the file was run"
        )


def save_stats(vec_normalize: VecNormalize, path: Path) -> None:
    """A run's VecNormalize statistics as ``vec_normalize.json`` (what :func:`load_run` reads back)."""
    write_json(path, VecNormalizeStats.from_vec_normalize(vec_normalize).to_json())


def convert_pickled_stats(pickled: Path) -> Path:
    """Write the statistics of SB3's pickle ``pickled`` as ``vec_normalize.json`` beside it (atomically), check that
    the file reads back as the same statistics, and return it; the pickle is left for the caller to keep or delete.

    Only the two commands that convert a folder the user made call this, never a loader (see
    :data:`PICKLED_VEC_NORMALIZE`), and even they read the pickle through :class:`StatisticsUnpickler`: a file that
    names anything but what SB3's VecNormalize pickle holds is refused before any of it runs."""
    try:
        data = read_bounded(pickled, MAX_PICKLE_BYTES)
        vec_normalize = StatisticsUnpickler(io.BytesIO(data)).load()  # VecNormalize.load, without an env to attach
    except ZooError:
        raise
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


def trained_env_id(path: str | Path) -> str | None:
    """The env a saved agent was trained on, as its own files say: a packaged folder's config.json, else the
    config.yml of the run folder (``path`` itself, or the folder of a model zip); None when neither is there."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    if (folder / CONFIG_JSON).is_file():
        return str(read_config(folder)["env_id"])
    config, _ = _read_config(folder / CONFIG_YML)
    return config.env_id if config is not None else None


def load_run(path: str | Path, env_id: str, *, allow_pickle: bool = False) -> Run:
    """A model written by ``zoo train`` with its run folder's config, VecNormalize statistics and command, or a
    packaged agent.

    ``path`` is the model zip, the run folder (its ``<env_id>.zip``, else ``best_model.zip``), or a packaged
    agent's folder (one with a config.json), which is rebuilt without pickle. SB3 keeps in a zip, as base64
    cloudpickle, whatever it cannot write as JSON (the spaces, the policy class, schedules), and its ``load``
    unpickles all of it, so a zip can run any code it holds. A zip with the run's config.yml beside it is rebuilt
    without unpickling (:func:`rebuild_from_zip`); any other (a bare zip, an rl_zoo3 run) is loaded with SB3's
    ``load`` only with ``allow_pickle``, for a file the user trusts, and refused otherwise. When config.yml says the
    run normalizes (or rl_zoo3's pickle says it does), its vec_normalize.json must be there: without it the agent
    would see raw observations and score far below its level, so it is refused instead.
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
    if config is not None:
        model = rebuild_from_zip(path, config)
    elif allow_pickle:
        model = _load_model(path, list(ALGOS))
    else:
        raise ZooError(
            f"{path} has no config.yml beside it to rebuild it from, and loading it as it is unpickles it, which runs "
            "any code it holds: pass --allow-pickle (allow_pickle=True) for a file you trust"
        )
    # rl_zoo3 writes the command that trained the run into its parameter folder.
    params = rl_zoo3_params(run_dir, env_id)
    places = [run_dir / COMMAND_FILE, *([params / COMMAND_FILE] if params is not None else [])]
    command_path = next((place for place in places if place.is_file()), None)
    command = command_path.read_text(encoding="utf-8", errors="replace").strip() if command_path else None
    return Run(model, path, config, seed, stats, command or None)


def rebuild_from_zip(path: Path, config: RunConfig) -> BaseAlgorithm:
    """The model of a run's SB3 zip, rebuilt without unpickling anything: its algorithm, policy and
    hyperparameters from the run's config.yml, its spaces from the env, every tensor (the policy's and the
    optimizers' state) from the zip's ``.pth`` files, which SB3's ``set_parameters`` reads with torch's
    ``weights_only`` loader, and its step count from the zip's JSON."""
    data = _zip_data(path)
    env = vec_env(config.env_id, config.env_kwargs)
    try:
        description = {
            "algo": config.algo,
            "policy": config.policy,
            "hyperparams": {key: value for key, value in config.hyperparams.items() if key != "policy_kwargs"},
            "policy_kwargs": config.hyperparams.get("policy_kwargs") or {},
            "observation_space": space_to_json(env.observation_space),
            "action_space": space_to_json(env.action_space),
            "n_envs": config.n_envs,
            "num_timesteps": _natural(data.get("num_timesteps")) or 0,
        }
    finally:
        env.close()
    model = build_model(description, device="cpu")
    try:
        model.set_parameters(str(path), exact_match=True, device="cpu")
    except Exception as error:  # a zip of another architecture: KeyError, RuntimeError (shapes), ValueError...
        raise ZooError(f"{path} is not the model its config.yml describes ({first_line(error)})") from None
    model.seed = _natural(data.get("seed"))  # the model's own record, as SB3's load would set it
    return model


def _zip_data(path: Path) -> dict[str, Any]:
    """The JSON ``data`` of an SB3 zip, read as text: none of its serialized entries is unpickled."""
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data").decode("utf-8"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise ZooError(f"{path} is not a model this zoo can load ({first_line(error)})") from None
    return data if isinstance(data, dict) else {}


def _natural(value: Any) -> int | None:
    """``value`` if it is an integer >= 0 (a step count, a seed), else None."""
    return int(value) if is_integer(value) and value >= 0 else None


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
