"""Agents saved without pickle: spaces and hyperparameters as JSON, weights as safetensors.

An SB3 zip is a pickle (cloudpickle, even): loading one runs whatever code it names, so it is only safe from a
source you trust. The files written here are plain data instead:

- ``config.json``: everything needed to rebuild the algorithm around the weights (algorithm name, constructor
  hyperparameters as data, observation and action spaces, policy alias and kwargs), a manifest of the weights
  (file size, sha256, the name, shape and dtype of every tensor) and the library versions that wrote it;
- ``model.safetensors``: the policy's ``state_dict``;
- ``vec_normalize.json``: VecNormalize statistics (:mod:`zoo.normalization`), when observations or rewards were
  normalized.

:func:`load_agent` rebuilds the model with ``cls(policy, env=None, _init_setup_model=False, **hyperparams)``, sets
the spaces, calls ``_setup_model()`` and loads the weights only after they were checked against the manifest and
against the freshly built policy, so a truncated, modified or mismatched file is an error rather than a model
that silently behaves differently. This module knows neither the Hub nor the command line.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
from collections import OrderedDict
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import safetensors.torch
import torch as th
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecNormalize

from zoo.algos import ALGOS, algo_name, hyperparams_from_model, plain, policy_alias, resolve
from zoo.errors import ZooError
from zoo.normalization import JSON_FILE as VEC_NORMALIZE_JSON
from zoo.normalization import VecNormalizeStats

FORMAT = "sb3-reinforce-agent"
FORMAT_VERSION = 1
CONFIG_JSON = "config.json"
WEIGHTS_FILE = "model.safetensors"
VERSION_PACKAGES = {
    "sb3_reinforce": "sb3-reinforce",
    "stable_baselines3": "stable-baselines3",
    "torch": "torch",
    "gymnasium": "gymnasium",
    "numpy": "numpy",
    "safetensors": "safetensors",
}


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


def _array_from_json(value: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if isinstance(value, list):
        array = np.array(value, dtype=object)
        floats = np.vectorize(float, otypes=[np.float64])(array) if array.size else np.zeros(0)
        return np.asarray(floats, dtype=dtype).reshape(shape)
    return np.full(shape, float(value), dtype=dtype)


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


def space_from_json(data: Any) -> spaces.Space:
    try:
        kind = data["type"]
        if kind == "Box":
            shape = tuple(int(x) for x in data["shape"])
            dtype = np.dtype(data["dtype"])
            low = _array_from_json(data["low"], shape, dtype)
            high = _array_from_json(data["high"], shape, dtype)
            return spaces.Box(low=low, high=high, shape=shape, dtype=dtype)
        if kind == "Discrete":
            return spaces.Discrete(int(data["n"]), start=int(data["start"]), dtype=np.dtype(data["dtype"]).type)
        if kind == "MultiDiscrete":
            return spaces.MultiDiscrete(
                np.array(data["nvec"]), dtype=np.dtype(data["dtype"]).type, start=np.array(data["start"])
            )
        if kind == "MultiBinary":
            return spaces.MultiBinary(data["n"])
        if kind == "Dict":
            return spaces.Dict(OrderedDict((key, space_from_json(sub)) for key, sub in data["spaces"]))
    except ZooError:
        raise
    except (KeyError, TypeError, ValueError) as error:
        raise ZooError(f"invalid space in {CONFIG_JSON}: {data!r} ({error})") from None
    raise ZooError(f"invalid space in {CONFIG_JSON}: unknown type {kind!r}")


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


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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


def _check_file(path: Path, manifest: dict[str, Any], what: str) -> None:
    size, digest = path.stat().st_size, sha256_file(path)
    if size != manifest.get("size") or digest != manifest.get("sha256"):
        raise ZooError(
            f"{what} {path.name} is corrupt or was modified: {size} bytes with sha256 {digest[:12]}..., but "
            f"{CONFIG_JSON} records {manifest.get('size')} bytes with sha256 {str(manifest.get('sha256'))[:12]}..."
        )


def _describe(shape: Any, dtype: Any) -> str:
    return f"{tuple(shape)} {dtype}"


def _signature(tensors: dict[str, th.Tensor]) -> dict[str, tuple[list[int], str]]:
    return {name: (list(t.shape), str(t.dtype).removeprefix("torch.")) for name, t in tensors.items()}


def load_weights(model: BaseAlgorithm, path: Path, manifest: dict[str, Any]) -> None:
    """Load ``path`` into ``model.policy`` after checking it against the manifest and the rebuilt policy."""
    _check_file(path, manifest, "weights file")
    try:
        tensors = safetensors.torch.load_file(str(path), device="cpu")
    except Exception as error:  # safetensors raises its own SafetensorError, OSError, ValueError...
        raise ZooError(f"{path.name} is not a valid safetensors file: {error}") from None
    expected = _signature(model.policy.state_dict())
    found = _signature(tensors)
    recorded = {name: (list(t["shape"]), t["dtype"]) for name, t in manifest.get("tensors", {}).items()}
    for label, other in (("the weights file", found), (f"the manifest in {CONFIG_JSON}", recorded)):
        missing, unexpected = sorted(expected.keys() - other.keys()), sorted(other.keys() - expected.keys())
        if missing or unexpected:
            raise ZooError(
                f"{label} does not match the model that {CONFIG_JSON} describes: missing {missing or 'none'}, "
                f"unexpected {unexpected or 'none'}"
            )
        for name, (shape, dtype) in expected.items():
            if other[name] != (shape, dtype):
                raise ZooError(
                    f"{label} does not match the model that {CONFIG_JSON} describes: {name} is "
                    f"{_describe(*other[name])}, the model needs {_describe(shape, dtype)}"
                )
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


def read_json(path: Path, missing: str | None = None) -> Any:
    """A downloaded or packaged JSON file, or a one-line ``ZooError`` (``missing`` replaces "not found")."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ZooError(missing or f"{path} not found") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ZooError(f"{path} is not valid JSON ({error}): truncated or modified?") from None


def read_config(folder: Path) -> dict[str, Any]:
    path = folder / CONFIG_JSON
    config = read_json(path)
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        found = config.get("format") if isinstance(config, dict) else None
        raise ZooError(f"{path} is not an {FORMAT} config (format={found!r})")
    if config.get("format_version", 0) > FORMAT_VERSION:
        raise ZooError(
            f"{path} has format_version {config['format_version']}; this zoo reads up to {FORMAT_VERSION}: "
            "upgrade sb3-reinforce"
        )
    return config


def build_model(config: dict[str, Any], device: th.device | str = "auto") -> BaseAlgorithm:
    """An untrained model with the architecture and hyperparameters that ``config`` describes."""
    algo = config.get("algo")
    if algo not in ALGOS:
        raise ZooError(f"{CONFIG_JSON}: unknown algo {algo!r}; known: {', '.join(ALGOS)}")
    cls: Any = ALGOS[algo]
    try:
        kwargs = resolve({**config["hyperparams"], "policy_kwargs": config.get("policy_kwargs") or {}})
        model = cls(config["policy"], env=None, _init_setup_model=False, device=device, **kwargs)
        model.observation_space = space_from_json(config["observation_space"])
        model.action_space = space_from_json(config["action_space"])
        model.n_envs = int(config.get("n_envs", 1))
        model._setup_model()
    except ZooError:
        raise
    except Exception as error:  # constructors raise ValueError, TypeError, AssertionError, KeyError...
        raise ZooError(
            f"{CONFIG_JSON} does not describe a valid {algo} model: {type(error).__name__}: {error}"
        ) from None
    model.num_timesteps = int(config.get("num_timesteps", 0))
    return model


def load_agent(
    folder: Path, device: th.device | str = "auto", config: dict[str, Any] | None = None
) -> tuple[BaseAlgorithm, dict[str, Any], VecNormalizeStats | None]:
    """Rebuild ``(model, config, vec_normalize_stats)`` from a folder written by :func:`save_agent`."""
    config = config if config is not None else read_config(folder)
    weights = folder / WEIGHTS_FILE
    if not weights.is_file():
        raise ZooError(f"{weights} not found")
    model = build_model(config, device)
    load_weights(model, weights, config.get("weights", {}))
    return model, config, load_stats(folder, config)


def load_stats(folder: Path, config: dict[str, Any]) -> VecNormalizeStats | None:
    """The agent's VecNormalize statistics when ``config`` says it normalizes, else None."""
    if not config.get("normalize"):
        return None
    path = folder / VEC_NORMALIZE_JSON
    missing = f"{CONFIG_JSON} says the agent uses VecNormalize, but {path.name} is missing"
    return VecNormalizeStats.from_json(read_json(path, missing))
