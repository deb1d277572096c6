"""Agents saved without pickle: spaces and hyperparameters as JSON, weights as safetensors.

An SB3 zip is a pickle (cloudpickle, even): loading one runs whatever code it names, so it is only safe from a
source you trust. The files written here are plain data instead:

- ``config.json``: everything needed to rebuild the algorithm around the weights (algorithm name, constructor
  hyperparameters as data, observation and action spaces, policy alias and kwargs), a manifest of the weights
  (file size, sha256, the name, shape and dtype of every tensor) and the library versions that wrote it;
- ``model.safetensors``: the policy's ``state_dict``;
- ``vec_normalize.json``: VecNormalize statistics (:mod:`zoo.normalization`), when observations or rewards were
  normalized.

These files may come from a download, so loading trusts none of them. :func:`read_config` checks every field of
config.json before anything uses it (:func:`check_config`: a known format and version, numbers that are numbers,
names from the zoo's tables, an env id in gymnasium's registry form, spaces and ``n_envs`` within
:data:`MAX_SPACE_ELEMENTS` and :data:`MAX_N_ENVS`). :func:`load_agent` then checks the weights file against the
manifest (size, sha256), builds the policy on torch's ``meta`` device (no memory) and compares its tensors with
the manifest's and its size with the file's, so a small config cannot make it allocate a network its weights do
not hold; only then does it rebuild the model with ``cls(policy, env=None, _init_setup_model=False,
**hyperparams)``, ``_setup_model()`` and load the weights, checked once more against the built policy. Every
failure is one ZooError naming the file and field. This module knows neither the Hub nor the command line.

Its length is one job: the format, whose writer and checking reader live together so that they change together.
"""

from __future__ import annotations

import json
import math
import platform
from collections import OrderedDict
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import safetensors.torch
import torch as th
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecNormalize
from torch.distributions import Distribution

from sb3_reinforce.common.episodic import EpisodicOnPolicyAlgorithm
from zoo.algos import (
    ALGOS,
    TRAINING_ONLY,
    algo_name,
    constructor_keys,
    hyperparams_from_model,
    plain,
    policy_alias,
    resolve,
)
from zoo.bounds import ENV_ID_FORM, check_env_kwargs, check_value
from zoo.checks import (
    FILE_NAME,
    check_digest,
    check_format,
    file_record,
    flatten,
    integer,
    is_integer,
    is_real,
    read_json,
    sha256_file,
    shown,
)
from zoo.errors import ZooError, first_line
from zoo.normalization import JSON_FILE as VEC_NORMALIZE_JSON
from zoo.normalization import VecNormalizeStats, check_settings

FORMAT = "sb3-reinforce-agent"
FORMAT_VERSION = 1
CONFIG_JSON = "config.json"
WEIGHTS_FILE = "model.safetensors"
# Bounds on what a downloaded config.json may make the loader allocate before the weights are seen.
MAX_SPACE_ELEMENTS = 1 << 22  # entries of one space (an 84x84x4 image has 28,224)
MAX_N_ENVS = 1024
MAX_BUFFER_ELEMENTS = 1 << 28  # the rollout buffer's observations and actions, in entries
BOX_DTYPES = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"}
INT_DTYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
VERSION_PACKAGES = {
    "sb3_reinforce": "sb3-reinforce",
    "stable_baselines3": "stable-baselines3",
    "torch": "torch",
    "gymnasium": "gymnasium",
    "numpy": "numpy",
    "safetensors": "safetensors",
}
# Constructor keywords that config.json files written before a rename carry (hub_cards/ holds such files, pinned by
# sha256), and their names now. The library warns whoever writes the old names; a saved agent is not its reader's
# to rewrite, so it is read in today's spelling, silently.
RENAMED_KEYS = {"max_episode_steps": "hang_guard_steps"}


# ----------------------------------------------------------------------------------------------------------- spaces


def _number(value: float) -> float | str:
    # JSON has no inf/nan; strings keep them exact and are read back by float().
    return value if math.isfinite(value) else str(value)


def _array_to_json(array: np.ndarray) -> Any:
    """A constant array as one number (image bounds would otherwise take 100k entries), else nested lists."""
    flat = array.reshape(-1)
    if flat.size > 0 and bool(np.all(flat == flat[0])):
        return _number(flat[0].item())
    if np.issubdtype(array.dtype, np.floating):
        return np.vectorize(lambda x: _number(float(x)), otypes=[object])(array).tolist()
    return array.tolist()


def _integers(value: Any, where: str, low: int, high: int, min_len: int = 1) -> list[int]:
    if not (isinstance(value, list) and min_len <= len(value) <= 32):
        raise ZooError(f"{where} must be a list of {min_len} to 32 integers, got {shown(value)}")
    return [integer(item, f"{where}[{i}]", low, high) for i, item in enumerate(value)]


def _bound_number(value: Any) -> float | None:
    """A bound as JSON holds it: a number, or "inf"/"-inf" (JSON has no infinity); None for anything else."""
    if is_real(value) and not math.isnan(value):
        return float(value)
    return {"inf": math.inf, "-inf": -math.inf}.get(value) if isinstance(value, str) else None


def _array_from_json(value: Any, shape: tuple[int, ...], dtype: np.dtype, where: str) -> np.ndarray:
    """One bound of a Box: a single number (constant bounds) or nested lists of exactly ``shape``, every entry a
    number or an infinity."""
    if not isinstance(value, list):
        number = _bound_number(value)
        if number is None:
            raise ZooError(f"{where} must be a number, 'inf', '-inf' or nested lists of them, got {shown(value)}")
        return np.full(shape, number, dtype=dtype)
    level = flatten(value, shape, where)
    numbers = [_bound_number(item) for item in level]
    if any(number is None for number in numbers):
        raise ZooError(f"{where} must hold numbers or infinities, found {shown(level[numbers.index(None)])}")
    return np.asarray(numbers, dtype=np.float64).astype(dtype).reshape(shape)


def space_to_json(space: spaces.Space) -> dict[str, Any]:
    """A gymnasium space as JSON data; :func:`space_from_json` rebuilds an equal space."""
    if isinstance(space, spaces.Box):
        return {
            "type": "Box",
            "shape": list(space.shape),
            "dtype": np.dtype(space.dtype).name,
            "low": _array_to_json(space.low),
            "high": _array_to_json(space.high),
        }
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start), "dtype": np.dtype(space.dtype).name}
    if isinstance(space, spaces.MultiDiscrete):
        return {
            "type": "MultiDiscrete",
            "nvec": space.nvec.tolist(),
            "start": space.start.tolist(),
            "dtype": np.dtype(space.dtype).name,
        }
    if isinstance(space, spaces.MultiBinary):
        n = space.n
        return {"type": "MultiBinary", "n": n if isinstance(n, int) else [int(x) for x in n]}
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": [[key, space_to_json(sub)] for key, sub in space.spaces.items()]}
    raise ZooError(
        f"cannot store a {type(space).__name__} space as data (Box, Discrete, MultiDiscrete, MultiBinary, "
        "Dict are supported)"
    )


def space_from_json(data: Any, where: str = "space", *, nested: bool = False) -> spaces.Space:
    """A space written by :func:`space_to_json`, every field checked first: known type and dtype, integer sizes,
    at most :data:`MAX_SPACE_ELEMENTS` entries, a Dict of at most 64 non-Dict spaces."""
    if not isinstance(data, Mapping) or not isinstance(data.get("type"), str):
        raise ZooError(f"{where} must be a mapping with a type, got {shown(data)}")
    kind = data["type"]
    fields = {
        "Box": {"type", "shape", "dtype", "low", "high"},
        "Discrete": {"type", "n", "start", "dtype"},
        "MultiDiscrete": {"type", "nvec", "start", "dtype"},
        "MultiBinary": {"type", "n"},
        "Dict": {"type", "spaces"},
    }
    if kind not in fields or (kind == "Dict" and nested):
        raise ZooError(f"{where}: unknown space type {shown(kind)}; known: {', '.join(fields)} (a Dict not nested)")
    if set(data) != fields[kind]:
        raise ZooError(f"{where}: a {kind} space has exactly the fields {', '.join(sorted(fields[kind]))}")
    try:
        if kind == "Box":
            shape = tuple(_integers(data["shape"], f"{where}.shape", 0, MAX_SPACE_ELEMENTS, min_len=0))
            if math.prod(shape) > MAX_SPACE_ELEMENTS:
                raise ZooError(f"{where}.shape {list(shape)} has more than {MAX_SPACE_ELEMENTS} entries")
            if data["dtype"] not in BOX_DTYPES:
                raise ZooError(
                    f"{where}.dtype must be one of {', '.join(sorted(BOX_DTYPES))}, got {shown(data['dtype'])}"
                )
            dtype = np.dtype(data["dtype"])
            low = _array_from_json(data["low"], shape, dtype, f"{where}.low")
            high = _array_from_json(data["high"], shape, dtype, f"{where}.high")
            return spaces.Box(low=low, high=high, shape=shape, dtype=dtype)
        if kind in ("Discrete", "MultiDiscrete") and data["dtype"] not in INT_DTYPES:
            raise ZooError(f"{where}.dtype must be one of {', '.join(sorted(INT_DTYPES))}, got {shown(data['dtype'])}")
        if kind == "Discrete":
            n = integer(data["n"], f"{where}.n", 1, MAX_SPACE_ELEMENTS)
            start = integer(data["start"], f"{where}.start", -(2**62), 2**62)
            return spaces.Discrete(n, start=start, dtype=np.dtype(data["dtype"]).type)
        if kind == "MultiDiscrete":
            nvec = _integers(data["nvec"], f"{where}.nvec", 1, MAX_SPACE_ELEMENTS)
            starts = _integers(data["start"], f"{where}.start", -(2**62), 2**62)
            if len(starts) != len(nvec):
                raise ZooError(f"{where}: start and nvec must have the same length")
            return spaces.MultiDiscrete(np.array(nvec), dtype=np.dtype(data["dtype"]).type, start=np.array(starts))
        if kind == "MultiBinary":
            n = data["n"]
            sizes = _integers(n, f"{where}.n", 1, MAX_SPACE_ELEMENTS) if isinstance(n, list) else None
            count = math.prod(sizes) if sizes else integer(n, f"{where}.n", 1, MAX_SPACE_ELEMENTS)
            if count > MAX_SPACE_ELEMENTS:
                raise ZooError(f"{where}.n {shown(n)} has more than {MAX_SPACE_ELEMENTS} entries")
            return spaces.MultiBinary(sizes or count)
        items = data["spaces"]
        if not (isinstance(items, list) and 0 < len(items) <= 64):
            raise ZooError(f"{where}.spaces must be a list of 1 to 64 [name, space] pairs")
        pairs = []
        for item in items:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
                raise ZooError(f"{where}.spaces must hold [name, space] pairs, found {shown(item)}")
            pairs.append((item[0], space_from_json(item[1], f"{where}[{shown(item[0])}]", nested=True)))
        if len({name for name, _ in pairs}) != len(pairs):
            raise ZooError(f"{where}.spaces has a name twice")
        return spaces.Dict(OrderedDict(pairs))
    except ZooError:
        raise
    except (TypeError, ValueError, OverflowError) as error:  # gymnasium's own checks (low > high, ...)
        raise ZooError(f"invalid {where} in {CONFIG_JSON}: {first_line(error)}") from None


def space_elements(space: spaces.Space) -> int:
    """Entries of one observation or action (a Dict's added up)."""
    if isinstance(space, spaces.Dict):
        return sum(space_elements(sub) for sub in space.spaces.values())
    return max(math.prod(space.shape or ()), 1)


# -------------------------------------------------------------------------------------------------------- versions


def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for module, distribution in VERSION_PACKAGES.items():
        try:
            versions[module] = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            versions[module] = str(getattr(__import__(module), "__version__", "unknown"))
    return versions


# ---------------------------------------------------------------------------------------------------------- weights


def save_weights(model: BaseAlgorithm, path: Path) -> dict[str, Any]:
    """Write the policy's state_dict; return its manifest (size, sha256, tensors) for config.json."""
    # Cloned so that tensors sharing storage (a shared features extractor appears under three names) are saved
    # under every name: the file is then a plain state_dict that load_state_dict(strict=True) accepts.
    state = model.policy.state_dict()
    tensors = {name: tensor.detach().to("cpu").clone().contiguous() for name, tensor in state.items()}
    safetensors.torch.save_file(tensors, str(path), metadata={"format": "pt", "producer": FORMAT})
    return {
        "file": path.name,
        "size": path.stat().st_size,
        "sha256": sha256_file(path),
        "tensors": {
            name: {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")} for name, t in tensors.items()
        },
    }


def _describe(shape: Any, dtype: Any) -> str:
    return f"{tuple(shape)} {dtype}"


def _signature(tensors: dict[str, th.Tensor]) -> dict[str, tuple[list[int], str]]:
    return {name: (list(t.shape), str(t.dtype).removeprefix("torch.")) for name, t in tensors.items()}


def _compare(label: str, expected: dict[str, tuple[list[int], str]], other: dict[str, tuple[list[int], str]]) -> None:
    """ZooError unless ``other`` (the file's or the manifest's tensors) is exactly what the model needs."""
    missing, unexpected = sorted(expected.keys() - other.keys()), sorted(other.keys() - expected.keys())
    if missing or unexpected:
        raise ZooError(
            f"{label} does not match the model that {CONFIG_JSON} describes: "
            f"missing {shown(missing[:5]) if missing else 'none'}, "
            f"unexpected {shown(unexpected[:5]) if unexpected else 'none'}"
        )
    for name, (shape, dtype) in expected.items():
        if other[name] != (shape, dtype):
            raise ZooError(
                f"{label} does not match the model that {CONFIG_JSON} describes: {name} is "
                f"{_describe(*other[name])}, the model needs {_describe(shape, dtype)}"
            )


def load_weights(model: BaseAlgorithm, path: Path, manifest: dict[str, Any]) -> None:
    """Load ``path`` into ``model.policy`` after checking it against the manifest and the rebuilt policy."""
    check_digest(path, manifest.get("size"), manifest.get("sha256"), CONFIG_JSON)
    try:
        tensors = safetensors.torch.load_file(str(path), device="cpu")
    except Exception as error:  # safetensors raises its own SafetensorError, OSError, ValueError...
        raise ZooError(f"{path.name} is not a valid safetensors file: {first_line(error)}") from None
    expected = _signature(model.policy.state_dict())
    recorded = {name: (list(t["shape"]), t["dtype"]) for name, t in manifest.get("tensors", {}).items()}
    _compare("the weights file", expected, _signature(tensors))
    _compare(f"the manifest in {CONFIG_JSON}", expected, recorded)
    model.policy.load_state_dict(tensors, strict=True)


# ------------------------------------------------------------------------------------------------------ save / load


def write_json(path: Path, data: Any) -> None:
    # Sorted keys and a fixed layout: the same agent always gives the same bytes.
    path.write_text(json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")


def save_agent(
    folder: Path,
    model: BaseAlgorithm,
    *,
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    vec_normalize: VecNormalize | VecNormalizeStats | None = None,
    hyperparams_fallback: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write ``config.json``, ``model.safetensors`` and (when given) ``vec_normalize.json`` into ``folder``."""
    algo = algo_name(model)
    hyperparams = hyperparams_from_model(model, hyperparams_fallback)
    policy_kwargs = hyperparams.pop("policy_kwargs", {}) or {}
    stats = VecNormalizeStats.of(vec_normalize)
    config: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "algo": algo,
        "algo_class": f"{type(model).__module__}.{type(model).__qualname__}",
        "env_id": env_id,
        "env_kwargs": plain("env_kwargs", dict(env_kwargs or {})),
        "policy": policy_alias(model),
        "policy_class": f"{type(model.policy).__module__}.{type(model.policy).__qualname__}",
        "policy_kwargs": policy_kwargs,
        "hyperparams": hyperparams,
        "n_envs": int(model.n_envs or 1),
        "num_timesteps": int(model.num_timesteps),
        "observation_space": space_to_json(model.observation_space),
        "action_space": space_to_json(model.action_space),
        "normalize": stats.settings() if stats is not None else False,
        "versions": library_versions(),
        **(extra or {}),
    }
    if stats is not None:
        write_json(folder / VEC_NORMALIZE_JSON, stats.to_json())
    config["weights"] = save_weights(model, folder / WEIGHTS_FILE)
    write_json(folder / CONFIG_JSON, config)
    return config


def read_config(folder: Path) -> dict[str, Any]:
    """config.json of an agent folder, every field checked (:func:`check_config`)."""
    path = folder / CONFIG_JSON
    return check_config(read_json(path), str(path))


def _file_record(value: Any, where: str, suffix: str) -> dict[str, Any]:
    record = file_record(value, where)
    name = record.get("file")
    if not (isinstance(name, str) and FILE_NAME.match(name) and name.endswith(suffix)):
        raise ZooError(f"{where}.file must be a plain file name ending in {suffix} (no folder), got {shown(name)}")
    return record


def check_config(config: Any, source: str = CONFIG_JSON) -> dict[str, Any]:
    """Every field of a config.json checked before anything uses it; one ZooError naming the field otherwise."""
    check_format(config, source, FORMAT, FORMAT_VERSION)
    algo = config.get("algo")
    if not isinstance(algo, str) or algo not in ALGOS:
        raise ZooError(f"{source}: unknown algo {shown(algo)}; known: {', '.join(ALGOS)}")
    cls = ALGOS[algo]
    env_id = config.get("env_id")
    if not (isinstance(env_id, str) and len(env_id) <= 200 and ENV_ID_FORM.match(env_id)):
        raise ZooError(f"{source}: env_id {shown(env_id)} is not a gymnasium env id ([namespace/]name[-vN])")
    check_env_kwargs(config.get("env_kwargs", {}), f"{source}: env_kwargs")
    policy = config.get("policy")
    if not isinstance(policy, str) or policy not in cls.policy_aliases:
        raise ZooError(f"{source}: policy must be one of {', '.join(cls.policy_aliases)}, got {shown(policy)}")
    check_value("policy_kwargs", config.get("policy_kwargs") or {}, source)
    hyperparams = config.get("hyperparams")
    if not isinstance(hyperparams, dict):
        raise ZooError(f"{source}: hyperparams must be a mapping, got {shown(hyperparams)}")
    allowed = set(constructor_keys(cls)) - {"policy_kwargs"}
    for key, value in hyperparams.items():
        if key not in allowed:
            raise ZooError(f"{source}: hyperparams has an unknown key {shown(key)} for {algo}")
        if key in TRAINING_ONLY:
            if value not in (None, {}):
                raise ZooError(f"{source}: hyperparams.{key} must be null or {{}}, got {shown(value)}")
        else:
            check_value(key, value, f"{source}: hyperparams")
    integer(config.get("n_envs", 1), f"{source}: n_envs", 1, MAX_N_ENVS)
    integer(config.get("num_timesteps", 0), f"{source}: num_timesteps", 0, 2**62)
    for name in ("observation_space", "action_space"):
        space_from_json(config.get(name), f"{source}: {name}")
    normalize = config.get("normalize", False)
    if normalize is not False:
        check_settings(normalize, f"{source}: normalize", complete=True)
    config["weights"] = _file_record(config.get("weights"), f"{source}: weights", ".safetensors")
    tensors = config["weights"].get("tensors")
    if not (isinstance(tensors, dict) and len(tensors) <= 4096):
        raise ZooError(f"{source}: weights.tensors must be a mapping of at most 4096 tensors")
    for name, tensor in tensors.items():
        if not (isinstance(tensor, Mapping) and set(tensor) == {"shape", "dtype"} and isinstance(tensor["dtype"], str)):
            raise ZooError(f"{source}: weights.tensors[{shown(name)}] must hold a shape and a dtype")
        _integers(tensor["shape"], f"{source}: weights.tensors[{shown(name)}].shape", 0, 2**40, min_len=0)
    if config.get("sb3_zip") is not None:
        config["sb3_zip"] = _file_record(config["sb3_zip"], f"{source}: sb3_zip", ".zip")
    return config


def _meta_class(policy_class: type) -> type:
    """``policy_class`` whose modules all live on torch's meta device (they hold shapes, not memory)."""
    return type(policy_class.__name__, (policy_class,), {"device": property(lambda self: th.device("meta"))})


def _check_sizes(model: BaseAlgorithm, config: dict[str, Any], weights: Path) -> None:
    """Before anything is allocated: the rollout buffer within :data:`MAX_BUFFER_ELEMENTS`, and the policy, built
    on the meta device, exactly the tensors of the manifest and no larger than the weights file."""
    n_envs = int(model.n_envs)
    # What the rollout buffer allocates per env when the model is set up: SB3's n_steps, or an episodic model's own.
    rows = (
        model.initial_buffer_rows if isinstance(model, EpisodicOnPolicyAlgorithm) else int(getattr(model, "n_steps", 0))
    )
    entries = rows * n_envs * (space_elements(model.observation_space) + space_elements(model.action_space))
    if entries > MAX_BUFFER_ELEMENTS:
        raise ZooError(
            f"{CONFIG_JSON}: its rollout buffer ({rows} steps x {n_envs} envs of these spaces) would hold {entries} "
            f"entries, more than {MAX_BUFFER_ELEMENTS}"
        )
    model._setup_lr_schedule()
    validate = Distribution._validate_args
    Distribution.set_default_validate_args(False)  # nothing to validate in meta tensors
    try:
        with th.device("meta"):
            policy = _meta_class(model.policy_class)(
                model.observation_space,
                model.action_space,
                model.lr_schedule,
                use_sde=model.use_sde,
                **model.policy_kwargs,
            )
    finally:
        Distribution.set_default_validate_args(validate)
    state = policy.state_dict()
    expected = _signature(state)
    recorded = {name: (list(t["shape"]), t["dtype"]) for name, t in config["weights"]["tensors"].items()}
    _compare(f"the manifest in {CONFIG_JSON}", expected, recorded)
    nbytes = sum(tensor.numel() * tensor.element_size() for tensor in state.values())
    if nbytes > weights.stat().st_size:
        raise ZooError(
            f"the model {CONFIG_JSON} describes needs {nbytes} bytes of weights, but {weights.name} holds "
            f"{weights.stat().st_size}"
        )


def _setup(model: BaseAlgorithm, config: dict[str, Any], weights: Path | None) -> None:
    model.observation_space = space_from_json(config["observation_space"], "observation_space")
    model.action_space = space_from_json(config["action_space"], "action_space")
    model.n_envs = int(config.get("n_envs", 1))
    if weights is not None:
        _check_sizes(model, config, weights)
    model._setup_model()


def current_spelling(hyperparams: dict[str, Any]) -> dict[str, Any]:
    """A saved agent's hyperparameters in today's spelling: each of :data:`RENAMED_KEYS` under its new name, and
    the joint critic update, once written ``vf_n_epochs: 0``, as ``vf_update: joint``."""
    current = dict(hyperparams)
    for old, new in RENAMED_KEYS.items():
        if old in current and new not in current:
            value = current.pop(old)
            if value is not None:  # None: the old keyword left at its default
                current[new] = value
    vf_n_epochs = current.get("vf_n_epochs")
    if is_integer(vf_n_epochs) and vf_n_epochs == 0 and "vf_update" not in current:
        del current["vf_n_epochs"]
        current["vf_update"] = "joint"
    return current


def build_model(config: dict[str, Any], device: th.device | str = "auto", weights: Path | None = None) -> BaseAlgorithm:
    """An untrained model with the architecture and hyperparameters that ``config`` (checked by
    :func:`check_config`) describes; with ``weights``, its sizes are checked against them before it is built."""
    algo = config["algo"]
    cls: Any = ALGOS[algo]
    kwargs = {key: value for key, value in current_spelling(config["hyperparams"]).items() if key not in TRAINING_ONLY}
    try:
        kwargs = resolve({**kwargs, "policy_kwargs": config.get("policy_kwargs") or {}})
        model = cls(config["policy"], env=None, _init_setup_model=False, device=device, **kwargs)
        _setup(model, config, weights)
    except ZooError:
        raise
    except Exception as error:  # constructors raise ValueError, TypeError, AssertionError, KeyError...
        raise ZooError(f"{CONFIG_JSON} does not describe a valid {algo} model: {first_line(error)}") from None
    model.num_timesteps = int(config.get("num_timesteps", 0))
    return model


def load_agent(
    folder: Path, device: th.device | str = "auto", config: dict[str, Any] | None = None
) -> tuple[BaseAlgorithm, dict[str, Any], VecNormalizeStats | None]:
    """Rebuild ``(model, config, vec_normalize_stats)`` from a folder written by :func:`save_agent`."""
    config = check_config(config, CONFIG_JSON) if config is not None else read_config(folder)
    weights = folder / WEIGHTS_FILE
    if not weights.is_file():
        raise ZooError(f"{weights} not found")
    check_digest(weights, config["weights"]["size"], config["weights"]["sha256"], CONFIG_JSON)
    model = build_model(config, device, weights)
    load_weights(model, weights, config["weights"])
    return model, config, load_stats(folder, config)


def load_stats(folder: Path, config: dict[str, Any]) -> VecNormalizeStats | None:
    """The agent's VecNormalize statistics when ``config`` says it normalizes, else None; they must be the
    settings config.json records."""
    if not config.get("normalize"):
        return None
    path = folder / VEC_NORMALIZE_JSON
    missing = f"{CONFIG_JSON} says the agent uses VecNormalize, but {path.name} is missing"
    stats = VecNormalizeStats.from_json(read_json(path, missing))
    if stats.settings() != check_settings(config["normalize"], CONFIG_JSON, complete=True):
        raise ZooError(f"{path.name} does not hold the VecNormalize settings that {CONFIG_JSON} records")
    return stats
