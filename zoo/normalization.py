"""VecNormalize statistics without the pickle: :class:`VecNormalizeStats`, the one form passed between modules.

A run folder keeps SB3's ``vecnormalize.pkl`` (:mod:`zoo.runs` converts it on reading); a packaged agent keeps
``vec_normalize.json`` (:meth:`VecNormalizeStats.to_json`). Everything in between passes this dataclass, and
:meth:`VecNormalizeStats.wrap` puts the statistics around an env again.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from zoo.errors import ZooError

FORMAT = "sb3-reinforce-agent/vec-normalize"
FORMAT_VERSION = 1
JSON_FILE = "vec_normalize.json"


def _rms_to_json(rms: RunningMeanStd, where: str) -> dict[str, Any]:
    mean, var = np.asarray(rms.mean, dtype=np.float64), np.asarray(rms.var, dtype=np.float64)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(var)) and math.isfinite(float(rms.count))):
        raise ZooError(f"VecNormalize {where} statistics are not finite; they cannot be published")
    # float64 -> Python float -> JSON repr is exact, so the statistics round trip bit for bit.
    return {"shape": list(mean.shape), "mean": mean.tolist(), "var": var.tolist(), "count": float(rms.count)}


def _rms_from_json(data: dict[str, Any]) -> RunningMeanStd:
    shape = tuple(int(x) for x in data["shape"])
    rms = RunningMeanStd(shape=shape)
    rms.mean = np.asarray(data["mean"], dtype=np.float64).reshape(shape)
    rms.var = np.asarray(data["var"], dtype=np.float64).reshape(shape)
    rms.count = float(data["count"])
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
            obs_rms = {key: _rms_to_json(rms, f"obs_rms[{key!r}]") for key, rms in self.obs_rms.items()}
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
    def from_json(cls, data: dict[str, Any]) -> VecNormalizeStats:
        try:
            raw = data["obs_rms"]
            obs_rms: RunningMeanStd | dict[str, RunningMeanStd] | None
            if raw is None:
                obs_rms = None
            elif "shape" in raw:
                obs_rms = _rms_from_json(raw)
            else:
                obs_rms = {key: _rms_from_json(item) for key, item in raw.items()}
            keys = data.get("norm_obs_keys")
            return cls(
                norm_obs=bool(data["norm_obs"]),
                norm_reward=bool(data["norm_reward"]),
                clip_obs=float(data["clip_obs"]),
                clip_reward=float(data["clip_reward"]),
                gamma=float(data["gamma"]),
                epsilon=float(data["epsilon"]),
                norm_obs_keys=list(keys) if keys is not None else None,
                obs_rms=obs_rms,
                ret_rms=_rms_from_json(data["ret_rms"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ZooError(f"invalid {JSON_FILE}: {error!r}") from None

    def wrap(self, venv: VecEnv, *, training: bool = False, norm_reward: bool | None = None) -> VecNormalize:
        """``venv`` wrapped in a VecNormalize with these statistics, frozen by default (``training=False``).

        ``norm_reward`` defaults to False when not training, so evaluation reports the env's own rewards.
        """
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
