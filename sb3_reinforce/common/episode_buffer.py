"""Storage for a batch of complete episodes collected across the envs of a VecEnv.

The layout is time-major, ``(T, N, ...)`` with ``N = n_envs``: row ``t`` holds what every env saw and did at
its ``t``-th step of the current collection, so one vector step writes one row in place. ``episode_group`` marks
the rows of counted, whole episodes; the others are stepped (a VecEnv steps all envs together) but never used:
what an env does after its last counted episode, and, with same-start groups, what it does between the end of its
group's episode and the reset that starts the next round.

Arrays are allocated once and only grow (doubling) when a collection needs more rows than any before it, so a
long run reaches a fixed footprint after its longest collection instead of allocating on every step or update.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

# Observations and actions are stored in the dtype the env uses, not float32: an image env stays uint8.
_OBS_DTYPES = {spaces.Discrete: np.int64, spaces.MultiDiscrete: np.int64, spaces.MultiBinary: np.int8}


def _observation_layout(space: spaces.Space) -> tuple[tuple[int, ...], np.dtype]:
    assert space.shape is not None, f"{space!r} has no shape"
    for space_type, dtype in _OBS_DTYPES.items():
        if isinstance(space, space_type):
            return space.shape, np.dtype(dtype)
    if isinstance(space, spaces.Box):
        return space.shape, np.dtype(space.dtype)
    raise TypeError(f"unsupported observation space {space!r}: use Box, Discrete, MultiDiscrete, MultiBinary or Dict")


def _action_layout(space: spaces.Space) -> tuple[tuple[int, ...], np.dtype]:
    if isinstance(space, spaces.Discrete):
        return (), np.dtype(np.int64)
    if isinstance(space, spaces.MultiDiscrete):
        return (len(space.nvec),), np.dtype(np.int64)
    if isinstance(space, spaces.MultiBinary):
        # float, as SB3's Bernoulli distribution samples and scores floats
        return (int(np.prod(space.shape)),), np.dtype(np.float32)
    if isinstance(space, spaces.Box):
        return (int(np.prod(space.shape)),), np.dtype(np.float32)
    raise TypeError(f"unsupported action space {space!r}")


class EpisodeBuffer:
    """Complete episodes from ``n_envs`` envs, stored ``(T, n_envs, ...)`` and written one vector step at a time.

    Fields after a collection of ``T = self.n_steps`` vector steps (row ``t`` is the ``t``-th step of the
    collection in every env):

    - ``observations[t, n]``: the observation env ``n`` acted on at step ``t`` (a dict of arrays for Dict spaces)
    - ``actions[t, n]``: the action sampled there, unclipped (the one whose log-probability is scored)
    - ``rewards[t, n]``: the reward that followed it
    - ``episode_ends[t, n]``: True when step ``t`` was the last of its episode (terminated, truncated, or cut by a
      reset of the VecEnv between rounds of groups)
    - ``episode_group[t, n]``: the group of the counted episode that step ``t`` belongs to, -1 for a step of no
      counted episode (every counted episode is in group 0 without same-start groups)
    - ``valid_len[n]``: env ``n``'s counted steps all lie in its first ``valid_len[n]`` rows (without groups they
      fill them: counted episodes are a prefix of the column)
    - ``truncations``: ``(t, n, terminal_observation)`` for each counted episode that a time limit cut, so a
      value baseline can bootstrap it
    """

    def __init__(
        self, observation_space: spaces.Space, action_space: spaces.Space, n_envs: int, initial_capacity: int = 256
    ) -> None:
        self.observation_space = observation_space
        self.action_space = action_space
        self.n_envs = n_envs
        self.capacity = 0
        self.n_steps = 0
        self.valid_len = np.zeros(n_envs, dtype=np.int64)
        self.truncations: list[tuple[int, int, Any]] = []
        if isinstance(observation_space, spaces.Dict):
            self._obs_layout: dict[str, tuple[tuple[int, ...], np.dtype]] | tuple[tuple[int, ...], np.dtype] = {
                key: _observation_layout(sub) for key, sub in observation_space.spaces.items()
            }
        else:
            self._obs_layout = _observation_layout(observation_space)
        self._action_shape, self._action_dtype = _action_layout(action_space)
        self.observations: NDArray[Any] | dict[str, NDArray[Any]] = np.empty(0)
        self.actions: NDArray[Any] = np.empty(0)
        self.rewards: NDArray[np.float32] = np.empty(0, dtype=np.float32)
        self.episode_ends: NDArray[np.bool_] = np.empty(0, dtype=np.bool_)
        self.episode_group: NDArray[np.int64] = np.empty(0, dtype=np.int64)
        self._grow(initial_capacity)

    def _allocate(
        self, rows: int, shape: tuple[int, ...], dtype: np.dtype, old: NDArray[Any] | None, fill: int = 0
    ) -> NDArray[Any]:
        # np.zeros maps fresh zero pages lazily (an image buffer is not written until used); np.full writes them.
        array = np.zeros((rows, self.n_envs, *shape), dtype=dtype)
        if fill:
            array.fill(fill)
        if old is not None and old.size:
            array[: old.shape[0]] = old
        return array

    def _grow(self, rows: int) -> None:
        if isinstance(self._obs_layout, dict):
            old_obs = self.observations if isinstance(self.observations, dict) else {}
            self.observations = {
                key: self._allocate(rows, shape, dtype, old_obs.get(key))
                for key, (shape, dtype) in self._obs_layout.items()
            }
        else:
            assert not isinstance(self.observations, dict)
            shape, dtype = self._obs_layout
            self.observations = self._allocate(rows, shape, dtype, self.observations if self.capacity else None)
        keep = self.capacity > 0
        self.actions = self._allocate(rows, self._action_shape, self._action_dtype, self.actions if keep else None)
        self.rewards = self._allocate(rows, (), np.dtype(np.float32), self.rewards if keep else None)
        self.episode_ends = self._allocate(rows, (), np.dtype(np.bool_), self.episode_ends if keep else None)
        self.episode_group = self._allocate(rows, (), np.dtype(np.int64), self.episode_group if keep else None, fill=-1)
        self.capacity = rows

    def reset(self) -> None:
        # Only rows below n_steps were ever labelled since the last reset.
        self.episode_group[: self.n_steps] = -1
        self.n_steps = 0
        self.valid_len[:] = 0
        self.truncations.clear()

    def ensure_row(self, t: int) -> None:
        """Make row ``t`` writable, doubling the capacity if needed (copying what is already stored)."""
        while t >= self.capacity:
            self._grow(2 * self.capacity)

    def store_observation(self, t: int, observation: NDArray[Any] | dict[str, NDArray[Any]]) -> None:
        if isinstance(self.observations, dict):
            assert isinstance(observation, dict)
            for key, array in self.observations.items():
                array[t] = observation[key].reshape(array.shape[1:])
        else:
            self.observations[t] = np.asarray(observation).reshape(self.observations.shape[1:])

    def count_episode(self, env: int, first: int, last: int, group: int) -> None:
        """Record that env ``env``'s rows ``first .. last`` (inclusive) are one counted episode of ``group``."""
        self.episode_group[first : last + 1, env] = group
        self.valid_len[env] = last + 1

    def valid_mask(self) -> NDArray[np.bool_]:
        """``(T, N)`` mask of the steps that belong to counted episodes."""
        return self.episode_group[: self.n_steps] >= 0

    def unused_fraction(self) -> float:
        """Share of the env steps of this collection that were stepped but belong to no counted episode."""
        total = self.n_steps * self.n_envs
        return 0.0 if total == 0 else 1.0 - float(self.valid_mask().sum()) / total

    def flat_observations(self, mask: NDArray[np.bool_]) -> NDArray[Any] | dict[str, NDArray[Any]]:
        """Observations of the masked steps, flattened to ``(B, ...)`` in time-major order."""
        if isinstance(self.observations, dict):
            return {key: array[: self.n_steps][mask] for key, array in self.observations.items()}
        return self.observations[: self.n_steps][mask]

    def truncated_observations(self) -> NDArray[Any] | dict[str, NDArray[Any]]:
        """The terminal observations of ``truncations``, stacked to ``(len(truncations), ...)``."""
        observations = [obs for _, _, obs in self.truncations]
        if isinstance(self.observations, dict):
            return {key: np.stack([np.asarray(obs[key]) for obs in observations]) for key in self.observations}
        return np.stack([np.asarray(obs) for obs in observations])
