"""The advantage estimators of REINFORCE, as pure functions of a batch of complete episodes.

Every array is time-major, ``(T, N)``: row ``t`` holds step ``t`` of each of the ``N`` envs. ``episode_ends[t, n]``
is true when step ``t`` of env ``n`` ended an episode (terminated or cut by a time limit): no return crosses it.
Row ``T - 1`` always ends an episode in a batch of complete episodes; a step after an env's last counted episode
belongs to no update, and the caller masks it out (its values here are finite but meaningless).

Each estimator returns ``(advantages, value_targets)``, both ``(T, N)`` float32:

- :func:`reward_to_go`: ``A_t = G_t``, with ``G_t = r_t + gamma * G_{t+1}`` and ``G`` = 0 after an episode's last step;
- :func:`batch_mean_baseline`: ``A_t = G_t - mean(G)``, the mean over the counted steps only (``mask``);
- :func:`generalized_advantage`: GAE(gamma, lambda) with a critic's values ``V(s_t)``,
  ``delta_t = r_t + gamma * V(s_{t+1}) * (1 - end_t) - V(s_t)`` and
  ``A_t = delta_t + gamma * lambda * (1 - end_t) * A_{t+1}``; for ``gae_lambda=1`` this is ``G_t - V(s_t)``.
  The targets are the lambda-returns ``A_t + V(s_t)``.

A time-limit cut is not an ending: the caller adds ``gamma * V(terminal observation)`` to the reward of the cut step
before calling :func:`generalized_advantage` (only it has a critic to bootstrap with).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sb3_reinforce.common.gae import compute_gae, discounted_cumsum

__all__ = ["ADVANTAGE_ESTIMATORS", "AdvantageEstimator", "batch_mean_baseline", "generalized_advantage", "reward_to_go"]


class AdvantageEstimator(Protocol):
    def __call__(
        self,
        rewards: ArrayLike,
        episode_ends: ArrayLike,
        values: ArrayLike | None,
        mask: ArrayLike,
        gamma: float,
        gae_lambda: float,
    ) -> tuple[NDArray[np.float32], NDArray[np.float32]]: ...


def reward_to_go(
    rewards: ArrayLike,
    episode_ends: ArrayLike,
    values: ArrayLike | None,
    mask: ArrayLike,
    gamma: float,
    gae_lambda: float,
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """``A_t = G_t``, the discounted reward-to-go within the episode (``values``, ``mask`` and ``gae_lambda``
    are not used: there is no critic)."""
    returns = discounted_cumsum(rewards, episode_ends, gamma)
    return returns, returns.copy()


def batch_mean_baseline(
    rewards: ArrayLike,
    episode_ends: ArrayLike,
    values: ArrayLike | None,
    mask: ArrayLike,
    gamma: float,
    gae_lambda: float,
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """``A_t = G_t - mean(G)``, the mean taken over the steps ``mask`` counts (the batch of the update)."""
    returns = discounted_cumsum(rewards, episode_ends, gamma)
    counted = np.asarray(mask, dtype=bool)
    if counted.shape != returns.shape:
        raise ValueError(f"mask must have the rewards' shape {returns.shape}, got {counted.shape}")
    # The mean in float32, numpy's pairwise sum: the same number the update has always been computed with.
    mean = returns[counted].mean() if counted.any() else np.float32(0.0)
    return (returns - mean).astype(np.float32), returns


def generalized_advantage(
    rewards: ArrayLike,
    episode_ends: ArrayLike,
    values: ArrayLike | None,
    mask: ArrayLike,
    gamma: float,
    gae_lambda: float,
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """GAE(gamma, lambda) over complete episodes with the critic's ``values`` V(s_t), and the lambda-returns."""
    if values is None:
        raise ValueError("generalized_advantage needs the critic's values V(s_t)")
    grid_values = np.ascontiguousarray(values, dtype=np.float32)
    ends = np.asarray(episode_ends, dtype=bool)
    if grid_values.shape != ends.shape:
        raise ValueError(f"values must have episode_ends' shape {ends.shape}, got {grid_values.shape}")
    # compute_gae takes SB3's convention: starts[t + 1] marks that step t ended its episode, and the last row's
    # ending comes as `dones` beside a (here unused) bootstrap value.
    starts = np.zeros_like(ends)
    starts[1:] = ends[:-1]
    n_envs = ends.shape[1]
    last_ends = ends[-1] if len(ends) else np.zeros(n_envs, dtype=bool)
    advantages = compute_gae(
        rewards, grid_values, starts, np.zeros(n_envs, dtype=np.float32), last_ends, gamma, gae_lambda
    )
    return advantages, (advantages + grid_values).astype(np.float32)


# The estimator of each of Reinforce's baselines.
ADVANTAGE_ESTIMATORS: dict[str, AdvantageEstimator] = {
    "none": reward_to_go,
    "mean": batch_mean_baseline,
    "value": generalized_advantage,
}
