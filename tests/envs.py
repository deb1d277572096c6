"""Small hand-made environments whose episodes are known in advance."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class ScriptedEnv(gym.Env[np.ndarray, int]):
    """Episodes of given lengths (cycled) with reward ``r_t = base + t`` at step ``t`` of the episode.

    The observation is ``[episode index, t]`` so tests can tell which step produced which transition.
    ``truncate_at`` makes episodes of that length end by truncation instead of termination.
    """

    def __init__(
        self, lengths: list[int], base: float = 1.0, truncate_at: int | None = None, zero_reward: bool = False
    ) -> None:
        self.lengths = lengths
        self.base = base
        self.truncate_at = truncate_at
        self.zero_reward = zero_reward
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.episode = -1
        self.t = 0

    def _obs(self) -> np.ndarray:
        return np.array([self.episode, self.t], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.episode += 1
        self.t = 0
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        reward = 0.0 if self.zero_reward else self.base + self.t
        self.t += 1
        length = self.lengths[self.episode % len(self.lengths)]
        over = self.t >= length
        truncated = over and self.truncate_at == length
        return self._obs(), reward, over and not truncated, truncated, {}


class CoinLengthEnv(gym.Env[np.ndarray, int]):
    """Episodes of ``short`` or ``long`` steps, drawn with even odds at each reset; reward 1 a step, so an
    episode's return is its length and the expected return is ``(short + long) / 2``."""

    observation_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, short: int = 1, long: int = 9) -> None:
        self.choices = (short, long)
        self.length = short
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.length = self.choices[int(self.np_random.integers(2))]
        self.t = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.zeros(1, dtype=np.float32), 1.0, self.t >= self.length, False, {}


class NeverEndingEnv(gym.Env[np.ndarray, int]):
    observation_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        return np.zeros(1, dtype=np.float32), 0.0, False, False, {}


class SpaceEnv(gym.Env[Any, Any]):
    """Random observations of any space, any action space, episodes of 5-9 steps, reward = 1."""

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        self.observation_space = observation_space
        self.action_space = action_space
        self.t = 0
        self.length = 5

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.observation_space.seed(int(self.np_random.integers(2**31)))
        self.t = 0
        self.length = int(self.np_random.integers(5, 10))
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        assert self.action_space.contains(np.asarray(action, dtype=self.action_space.dtype)), action
        self.t += 1
        return self.observation_space.sample(), 1.0, self.t >= self.length, False, {}


class TargetEnv(gym.Env[np.ndarray, np.ndarray]):
    """A continuous bandit: observe ``x ~ U(-1, 1)``, get ``-(a - x)^2``; the best action is ``a = x``.

    Episodes last ``length`` steps (cut by truncation); the actions the env received are kept in ``received``.
    """

    observation_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
    action_space = spaces.Box(-2.0, 2.0, shape=(1,), dtype=np.float32)

    def __init__(self, length: int = 5) -> None:
        self.length = length
        self.received: list[float] = []
        self.t = 0
        self.x = np.zeros(1, dtype=np.float32)

    def _draw(self) -> np.ndarray:
        self.x = self.np_random.uniform(-1.0, 1.0, size=1).astype(np.float32)
        return self.x

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._draw(), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.received.append(float(action[0]))
        reward = -float((action[0] - self.x[0]) ** 2)
        self.t += 1
        return self._draw(), reward, False, self.t >= self.length, {}
