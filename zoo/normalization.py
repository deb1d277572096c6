"""VecNormalize statistics without the pickle: :class:`VecNormalizeStats`, the one form passed between modules.

A run folder (:mod:`zoo.runs`) and a packaged agent (:mod:`zoo.agent_format`) both keep ``vec_normalize.json``
(:meth:`VecNormalizeStats.to_json`), one format read by one reader (:meth:`VecNormalizeStats.from_json`).
Everything in between passes this dataclass, and :meth:`VecNormalizeStats.wrap` puts the statistics around an
env again.

``vec_normalize.json`` may come from a download, so :meth:`VecNormalizeStats.from_json` trusts none of it: a known
format and version, settings of the right type and range (:func:`check_settings`: ``clip_obs > 0``...), shapes of
at most :data:`MAX_ELEMENTS` entries, and statistics that are numbers (not strings), finite, with positive
variances and count. Anything else is one ZooError naming the field.
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from zoo.checks import check_format, flatten, is_integer, is_number, read_json, shown
from zoo.errors import ZooError, first_line

FORMAT = "sb3-reinforce-agent/vec-normalize"
FORMAT_VERSION = 1
JSON_FILE = "vec_normalize.json"
# The same statistics as SB3's own VecNormalize.save writes them, for SB3 and rl_zoo3 users who choose to unpickle;
# nothing in the zoo reads it.
PICKLE_FILE = "vec_normalize.pkl"
# The most entries one statistic may have (an 84x84x4 image has 28,224): a bound on what a file can allocate.
MAX_ELEMENTS = 1 << 22
MAX_DIMENSIONS = 8
# VecNormalize's keyword arguments (``normalize:`` in a config) and what each must be.
SETTINGS = ("norm_obs", "norm_reward", "clip_obs", "clip_reward", "gamma", "epsilon", "norm_obs_keys")


def check_settings(settings: Any, source: str, *, complete: bool = False) -> dict[str, Any]:
    """VecNormalize's keyword arguments, checked: booleans are booleans, ``clip_obs``, ``clip_reward`` and
    ``epsilon`` finite and > 0, ``gamma`` in [0, 1], ``norm_obs_keys`` None or a list of names. ``complete``:
    every setting must be there (a vec_normalize.json); otherwise a subset (a config's ``normalize:``)."""
    if not isinstance(settings, Mapping):
        raise ZooError(f"{source} must be a mapping of VecNormalize settings, got {shown(settings)}")
    unknown = [key for key in settings if key not in SETTINGS]
    if unknown:
        raise ZooError(f"{source}: unknown key {shown(unknown[0])}; allowed: {', '.join(SETTINGS)}")
    missing = [key for key in SETTINGS if key not in settings] if complete else []
    if missing:
        raise ZooError(f"{source}: {missing[0]} is missing")
    checked: dict[str, Any] = {}
    for key, value in settings.items():
        if key in ("norm_obs", "norm_reward"):
            ok = isinstance(value, bool)
            wanted = "true or false"
        elif key == "gamma":
            ok = is_number(value) and 0.0 <= value <= 1.0
            wanted = "a number in [0, 1]"
        elif key == "norm_obs_keys":
            ok = value is None or (isinstance(value, list) and all(isinstance(item, str) for item in value))
            wanted = "null or a list of observation keys"
        else:
            ok = is_number(value) and value > 0
            wanted = "a finite number > 0"
        if not ok:
            raise ZooError(f"{source}: {key} must be {wanted}, got {shown(value)}")
        checked[key] = float(value) if is_number(value) else value
    return checked


def _rms_to_json(rms: RunningMeanStd, where: str) -> dict[str, Any]:
    mean, var = np.asarray(rms.mean, dtype=np.float64), np.asarray(rms.var, dtype=np.float64)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(var)) and math.isfinite(float(rms.count))):
        raise ZooError(f"VecNormalize {where} statistics are not finite; they cannot be published")
    # float64 -> Python float -> JSON repr is exact, so the statistics round trip bit for bit.
    return {"shape": list(mean.shape), "mean": mean.tolist(), "var": var.tolist(), "count": float(rms.count)}


def _shape(value: Any, where: str) -> tuple[int, ...]:
    if not (
        isinstance(value, list)
        and len(value) <= MAX_DIMENSIONS
        and all(is_integer(n) and 0 <= n <= MAX_ELEMENTS for n in value)
        and math.prod(value) <= MAX_ELEMENTS
    ):
        raise ZooError(
            f"{where}.shape must be a list of at most {MAX_DIMENSIONS} sizes with at most {MAX_ELEMENTS} "
            f"entries in all, got {shown(value)}"
        )
    return tuple(value)


def _array(value: Any, shape: tuple[int, ...], where: str) -> np.ndarray:
    """Nested lists of exactly ``shape`` holding finite numbers, as float64."""
    level = flatten(value, shape, where)
    if not all(is_number(item) for item in level):
        bad = next(item for item in level if not is_number(item))
        raise ZooError(f"{where} must hold finite numbers, found {shown(bad)}")
    return np.asarray(level, dtype=np.float64).reshape(shape)


def _rms_from_json(data: Any, where: str) -> RunningMeanStd:
    if not isinstance(data, Mapping) or set(data) != {"shape", "mean", "var", "count"}:
        raise ZooError(f"{where} must be a mapping with exactly shape, mean, var and count")
    shape = _shape(data["shape"], where)
    mean = _array(data["mean"], shape, f"{where}.mean")
    var = _array(data["var"], shape, f"{where}.var")
    if not np.all(var > 0):
        raise ZooError(f"{where}.var must be positive, found {shown(float(var.min()))}")
    count = data["count"]
    if not (is_number(count) and count > 0):
        raise ZooError(f"{where}.count must be a finite number > 0, got {shown(count)}")
    rms = RunningMeanStd(shape=shape)
    rms.mean, rms.var, rms.count = mean, var, float(count)
    return rms


@dataclass
class VecNormalizeStats:
    """VecNormalize's statistics and settings, without the pickle; :meth:`wrap` puts them around a VecEnv."""

    norm_obs: bool
    norm_reward: bool
    clip_obs: float
    clip_reward: float
    gamma: float
    epsilon: float
    norm_obs_keys: list[str] | None
    obs_rms: RunningMeanStd | dict[str, RunningMeanStd] | None
    ret_rms: RunningMeanStd

    @classmethod
    def from_vec_normalize(cls, vec_normalize: VecNormalize) -> VecNormalizeStats:
        obs_rms: RunningMeanStd | dict[str, RunningMeanStd] | None = None
        if vec_normalize.norm_obs:
            obs_rms = copy.deepcopy(vec_normalize.obs_rms)
        keys = getattr(vec_normalize, "norm_obs_keys", None)
        return cls(
            norm_obs=bool(vec_normalize.norm_obs),
            norm_reward=bool(vec_normalize.norm_reward),
            clip_obs=float(vec_normalize.clip_obs),
            clip_reward=float(vec_normalize.clip_reward),
            gamma=float(vec_normalize.gamma),
            epsilon=float(vec_normalize.epsilon),
            norm_obs_keys=list(keys) if keys is not None else None,
            obs_rms=obs_rms,
            ret_rms=copy.deepcopy(vec_normalize.ret_rms),
        )

    @classmethod
    def of(cls, vec_normalize: VecNormalize | VecNormalizeStats | None) -> VecNormalizeStats | None:
        """Statistics from either form (the edge of the public API), or None."""
        if isinstance(vec_normalize, VecNormalize):
            return cls.from_vec_normalize(vec_normalize)
        return vec_normalize

    def settings(self) -> dict[str, Any]:
        """The VecNormalize constructor arguments (as in a config's ``normalize:`` mapping)."""
        return {
            "norm_obs": self.norm_obs,
            "norm_reward": self.norm_reward,
            "clip_obs": self.clip_obs,
            "clip_reward": self.clip_reward,
            "gamma": self.gamma,
            "epsilon": self.epsilon,
            "norm_obs_keys": self.norm_obs_keys,
        }

    def to_json(self) -> dict[str, Any]:
        obs_rms: Any = None
        if isinstance(self.obs_rms, dict):
            obs_rms = {key: _rms_to_json(rms, f"obs_rms[{shown(key)}]") for key, rms in self.obs_rms.items()}
        elif self.obs_rms is not None:
            obs_rms = _rms_to_json(self.obs_rms, "obs_rms")
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            **self.settings(),
            "obs_rms": obs_rms,
            "ret_rms": _rms_to_json(self.ret_rms, "ret_rms"),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str | os.PathLike[str]) -> VecNormalizeStats:
        """Statistics from ``vec_normalize.json``, every field checked (see the module doc): the parsed mapping,
        the file's text, or its path (``VecNormalizeStats.from_json("vec_normalize.json").wrap(venv)``)."""
        source = JSON_FILE
        if isinstance(data, os.PathLike) or (isinstance(data, str) and not data.lstrip().startswith("{")):
            source = str(data)
            data = read_json(Path(data))
        elif isinstance(data, str):
            try:
                data = json.loads(data)
            except ValueError as error:
                raise ZooError(f"the text given as {source} is not valid JSON ({first_line(error)})") from None
        data = check_format(data, source, FORMAT, FORMAT_VERSION)
        unknown = [key for key in data if key not in {"format", "format_version", "obs_rms", "ret_rms", *SETTINGS}]
        if unknown:
            raise ZooError(f"{source}: unknown key {shown(unknown[0])}")
        settings = check_settings({key: data[key] for key in SETTINGS if key in data}, source, complete=True)
        if "obs_rms" not in data or "ret_rms" not in data:
            raise ZooError(f"{source}: obs_rms and ret_rms are required")
        raw = data["obs_rms"]
        obs_rms: RunningMeanStd | dict[str, RunningMeanStd] | None
        if raw is None:
            obs_rms = None
        elif isinstance(raw, Mapping) and "shape" in raw:
            obs_rms = _rms_from_json(raw, f"{source}: obs_rms")
        elif isinstance(raw, Mapping) and 0 < len(raw) <= 64:
            obs_rms = {str(key): _rms_from_json(item, f"{source}: obs_rms[{shown(key)}]") for key, item in raw.items()}
        else:
            raise ZooError(f"{source}: obs_rms must be null, statistics, or a mapping of at most 64 keys to them")
        if settings["norm_obs"] and obs_rms is None:
            raise ZooError(f"{source}: norm_obs is true but obs_rms is null")
        ret_rms = _rms_from_json(data["ret_rms"], f"{source}: ret_rms")
        if ret_rms.mean.shape != ():
            raise ZooError(f"{source}: ret_rms.shape must be [] (one return per env), got {list(ret_rms.mean.shape)}")
        return cls(obs_rms=obs_rms, ret_rms=ret_rms, **settings)

    def save_sb3_pickle(self, path: Path, venv: VecEnv) -> None:
        """Write ``path`` with SB3's own ``VecNormalize.save`` (a pickle, what ``VecNormalize.load`` and rl_zoo3
        read): these statistics around ``venv`` (whose env the pickle leaves out), frozen, as after training but
        with ``training=False``; an evaluation also sets ``norm_reward = False``, as rl_zoo3's enjoy does."""
        wrapped = self.wrap(venv, norm_reward=self.norm_reward)
        wrapped.save(str(path))

    def wrap(self, venv: VecEnv, *, training: bool = False, norm_reward: bool | None = None) -> VecNormalize:
        """``venv`` wrapped in a VecNormalize with these statistics, frozen by default (``training=False``).

        ``norm_reward`` defaults to False when not training, so evaluation reports the env's own rewards.
        """
        try:
            wrapped = VecNormalize(
                venv,
                training=training,
                norm_obs=self.norm_obs,
                norm_reward=(training and self.norm_reward) if norm_reward is None else norm_reward,
                clip_obs=self.clip_obs,
                clip_reward=self.clip_reward,
                gamma=self.gamma,
                epsilon=self.epsilon,
                norm_obs_keys=self.norm_obs_keys,
            )
        except (ValueError, KeyError, TypeError) as error:  # norm_obs_keys that the env's observations do not have
            raise ZooError(f"VecNormalize settings do not fit the env: {type(error).__name__}: {error}") from None
        if self.norm_obs:
            stored: Any = self.obs_rms
            current: Any = wrapped.obs_rms
            if isinstance(stored, dict) != isinstance(current, dict):
                raise ZooError("VecNormalize statistics do not fit the env's observation space (Dict vs not Dict)")
            pairs = (
                [(key, stored[key], current.get(key)) for key in stored]
                if isinstance(stored, dict)
                else [("observations", stored, current)]
            )
            for key, mine, theirs in pairs:
                if theirs is None or mine.mean.shape != theirs.mean.shape:
                    raise ZooError(
                        f"VecNormalize statistics of {key} have shape {mine.mean.shape}, the env's "
                        f"{None if theirs is None else theirs.mean.shape}"
                    )
            wrapped.obs_rms = copy.deepcopy(stored)
        wrapped.ret_rms = copy.deepcopy(self.ret_rms)
        return wrapped
