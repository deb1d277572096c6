"""The advantage estimators of REINFORCE, as pure functions of a batch of complete episodes.

Every array is time-major, ``(T, N)``: row ``t`` holds step ``t`` of each of the ``N`` envs. ``episode_ends[t, n]``
is true when step ``t`` of env ``n`` ended an episode (terminated or cut by a time limit): no return crosses it.
Row ``T - 1`` always ends an episode in a batch of complete episodes; a step after an env's last counted episode
belongs to no update, and the caller masks it out (its values here are finite but meaningless).

Each estimator takes only what it reads, and returns ``(advantages, value_targets)``, both ``(T, N)`` float32:

- :func:`reward_to_go`: ``A_t = G_t``, with ``G_t = r_t + gamma * G_{t+1}`` and ``G`` = 0 after an episode's last step;
- :func:`batch_mean_baseline`: ``A_t = G_t - mean(G)``, the mean over the counted steps only (``mask``);
- :func:`generalized_advantage`: GAE(gamma, lambda) with a critic's values ``V(s_t)``,
  ``delta_t = r_t + gamma * V(s_{t+1}) * (1 - end_t) - V(s_t)`` and
  ``A_t = delta_t + gamma * lambda * (1 - end_t) * A_{t+1}``; for ``gae_lambda=1`` this is ``G_t - V(s_t)``.
  The targets are the lambda-returns ``A_t + V(s_t)``;
- :func:`leave_one_out_baseline`: ``A = G`` minus the mean of the other episodes' ``G`` at the same step of their
  episode, among the episodes of the same group (``groups``) still running there;
- :func:`group_normalized_advantage`: GRPO's ``(G - group mean) / group std`` at each step of the episode.

The last two compare episodes by the step index *within* the episode, ``k``, not by the row ``t``: the episodes of
a batch start at different rows. ``groups[t, n]`` labels the episode that step ``t`` of env ``n`` belongs to (the
same label over the whole episode); ``None`` puts every counted episode in one group.

:func:`estimate_advantages` runs the estimator of one of ``Reinforce``'s baselines on a batch.

A time-limit cut is not an ending: the caller adds ``gamma * V(terminal observation)`` to the reward of the cut step
before calling :func:`generalized_advantage` (only it has a critic to bootstrap with).
"""

from __future__ import annotations

from typing import Literal, NamedTuple, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sb3_reinforce.common.gae import compute_gae, discounted_cumsum

__all__ = [
    "BASELINES",
    "Baseline",
    "batch_mean_baseline",
    "estimate_advantages",
    "generalized_advantage",
    "group_normalized_advantage",
    "leave_one_out_baseline",
    "reward_to_go",
]

# Reinforce's baselines, each with its estimator: reward_to_go, batch_mean_baseline, generalized_advantage (a
# critic's), leave_one_out_baseline and group_normalized_advantage.
Baseline = Literal["none", "mean", "value", "loo", "grpo"]
BASELINES: tuple[Baseline, ...] = get_args(Baseline)
# The baselines that compare an episode with others, within its same-start group when there are groups.
COMPARING_BASELINES: tuple[Baseline, ...] = ("loo", "grpo")

Advantages = tuple[NDArray[np.float32], NDArray[np.float32]]


def reward_to_go(rewards: ArrayLike, episode_ends: ArrayLike, gamma: float) -> Advantages:
    """``A_t = G_t``, the discounted reward-to-go within the episode."""
    returns = discounted_cumsum(rewards, episode_ends, gamma)
    return returns, returns.copy()


def batch_mean_baseline(rewards: ArrayLike, episode_ends: ArrayLike, mask: ArrayLike, gamma: float) -> Advantages:
    """``A_t = G_t - mean(G)``, the mean taken over the steps ``mask`` counts (the batch of the update)."""
    returns = discounted_cumsum(rewards, episode_ends, gamma)
    counted = np.asarray(mask, dtype=bool)
    if counted.shape != returns.shape:
        raise ValueError(f"mask must have the rewards' shape {returns.shape}, got {counted.shape}")
    # The mean in float32, numpy's pairwise sum: the same number the update has always been computed with.
    mean = returns[counted].mean() if counted.any() else np.float32(0.0)
    return (returns - mean).astype(np.float32), returns


def generalized_advantage(
    rewards: ArrayLike, episode_ends: ArrayLike, values: ArrayLike, gamma: float, gae_lambda: float
) -> Advantages:
    """GAE(gamma, lambda) over complete episodes with the critic's ``values`` V(s_t), and the lambda-returns."""
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


# GRPO's guard against a zero standard deviation, TRL's GRPOTrainer's value: the advantage of a group whose returns
# are all equal is then 0 instead of nan.
GRPO_EPS = 1e-4


class _Comparison(NamedTuple):
    """The counted steps of a batch, flattened in the order of ``mask``, and the peers each is compared with.

    A step's *cell* is ``(group, k)``: its episode's group and its index ``k`` within the episode. The cell holds one
    step of every episode of the group that is still running at ``k``.
    """

    returns: NDArray[np.float32]  # (T, N) G of every row
    counted: NDArray[np.bool_]  # (T, N) the mask
    flat_returns: NDArray[np.float64]  # (B,) G_k^j of each counted step
    cell: NDArray[np.intp]  # (B,) index of the step's cell
    cell_sum: NDArray[np.float64]  # (cells,) sum of G_k over the cell's steps
    cell_count: NDArray[np.intp]  # (cells,) episodes of the group running at k, this one included


def _compare_within_groups(
    rewards: ArrayLike, episode_ends: ArrayLike, mask: ArrayLike, gamma: float, groups: ArrayLike | None
) -> _Comparison:
    returns = discounted_cumsum(rewards, episode_ends, gamma)
    ends = np.asarray(episode_ends, dtype=bool)
    counted = np.asarray(mask, dtype=bool)
    if counted.shape != returns.shape:
        raise ValueError(f"mask must have the rewards' shape {returns.shape}, got {counted.shape}")
    labels = np.zeros(returns.shape, dtype=np.int64) if groups is None else np.asarray(groups)
    if labels.shape != returns.shape or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"groups must be integer labels of the rewards' shape {returns.shape}, got {labels.shape}")
    n_steps = returns.shape[0]
    # step = k: the index of row t within its episode, counted from the row after the previous ending.
    rows = np.arange(n_steps)[:, None]
    starts = np.ones_like(ends)
    starts[1:] = ends[:-1]
    first_row = np.maximum.accumulate(np.where(starts, rows, 0), axis=0)
    step = (rows - first_row)[counted]
    # Consecutive counted rows of one episode must carry one label, or the episode's cells would mix groups.
    within = ~ends[:-1] & counted[:-1] & counted[1:]
    if not (labels[1:] == labels[:-1])[within].all():
        raise ValueError("groups must give every step of an episode the same label")
    # A cell's key is (label, k) in one integer, labels shifted to start at 0 (they are arbitrary integers).
    label = labels[counted].astype(np.int64)
    span = int(step.max()) + 1 if step.size else 1
    key = (label - (label.min() if label.size else 0)) * span + step
    if key.size == 0 or key.max() < 4 * key.size:
        # Dense labels (the collection numbers its groups 0, 1, ...): the keys index the cells directly, a pass
        # instead of a sort; the empty cells cost memory of the order of the batch's.
        cell, cells = key, int(key.max()) + 1 if key.size else 0
    else:
        uniques, inverse = np.unique(key, return_inverse=True)
        cell, cells = inverse.reshape(-1), len(uniques)
    flat_returns = returns[counted].astype(np.float64)
    return _Comparison(
        returns=returns,
        counted=counted,
        flat_returns=flat_returns,
        cell=cell,
        cell_sum=np.asarray(np.bincount(cell, weights=flat_returns, minlength=cells), dtype=np.float64),
        cell_count=np.bincount(cell, minlength=cells),
    )


def leave_one_out_baseline(
    rewards: ArrayLike, episode_ends: ArrayLike, mask: ArrayLike, gamma: float, groups: ArrayLike | None = None
) -> Advantages:
    """The leave-one-out baseline, time-indexed: each step is compared with the same step of the group's other
    episodes (RLOO, Ahmadian et al. 2024, for dense rewards).

    For episode ``j`` of length ``T_j``, ``G_k^j = r_k^j + gamma * G_{k+1}^j`` (``G_{T_j}^j = 0``) at its steps
    ``k = 0 .. T_j - 1``. With ``R_k(j)`` the *other* episodes of ``j``'s group still running at ``k`` (``T_i > k``)
    and ``K = |R_k(j)|``:

        b_k^j = 1/K * sum_{i in R_k(j)} G_k^i   if K >= 1,   0 if K = 0;      A_k^j = G_k^j - b_k^j.

    ``b_k^j`` is a function of the other episodes alone (their returns and which of them run at ``k``), which are
    independent of episode ``j`` given the policy (and, in a group, the seed that fixed its start), so
    ``E[b_k^j * grad log pi(a_k^j | s_k^j)] = 0``: the policy gradient stays unbiased. Where no other episode of the
    group runs at ``k``, the baseline is the constant 0 (plain REINFORCE at that step), unbiased for the same reason.
    A time-limit cut ends the return like a termination (no critic to bootstrap with). Unmasked entries of the
    advantages are 0; the targets are the returns ``G``.
    """
    comparison = _compare_within_groups(rewards, episode_ends, mask, gamma, groups)
    others = comparison.cell_count[comparison.cell] - 1
    own = comparison.flat_returns
    baseline = np.where(others > 0, (comparison.cell_sum[comparison.cell] - own) / np.maximum(others, 1), 0.0)
    advantages = np.zeros_like(comparison.returns)
    advantages[comparison.counted] = own - baseline
    return advantages, comparison.returns


def group_normalized_advantage(
    rewards: ArrayLike, episode_ends: ArrayLike, mask: ArrayLike, gamma: float, groups: ArrayLike | None = None
) -> Advantages:
    """GRPO's group-normalized advantage (Shao et al. 2024), time-indexed like :func:`leave_one_out_baseline`.

    With ``M_k(j)`` the episodes of ``j``'s group running at step ``k``, ``j`` included, and ``K + 1 = |M_k(j)|``:

        mu_k = 1/(K+1) * sum_{i in M_k(j)} G_k^i,     sigma_k^2 = 1/K * sum_{i in M_k(j)} (G_k^i - mu_k)^2,
        A_k^j = (G_k^j - mu_k) / (sigma_k + GRPO_EPS)   if K >= 1,   0 if K = 0,

    the sample standard deviation (``n - 1``) and epsilon of TRL's GRPOTrainer. Biased, on two counts:
    ``G_k^j - mu_k = K/(K+1) * (G_k^j - b_k^j)`` with ``b`` the leave-one-out baseline, so the mean alone weighs
    step ``k``'s term of the expected gradient by ``E[K/(K+1)]`` (a function of the other episodes' lengths):
    exactly ``(G-1)/G`` for groups of ``G`` equal-length episodes, a shorter step in the right direction; with
    unequal lengths the weight falls as fewer others reach step ``k``, which turns the direction too. And
    ``sigma_k`` is computed from ``G_k^j`` itself, so the division correlates the weight with the episode's own
    actions, a bias with no closed form. A step that no other episode of its group reaches gets no gradient.
    Unmasked entries are 0 and the targets are the returns ``G``.
    """
    comparison = _compare_within_groups(rewards, episode_ends, mask, gamma, groups)
    count = comparison.cell_count
    mean = comparison.cell_sum / np.maximum(count, 1)  # a cell with no step is never read
    deviation = comparison.flat_returns - mean[comparison.cell]
    squares = np.asarray(np.bincount(comparison.cell, weights=deviation**2, minlength=len(count)), dtype=np.float64)
    std = np.sqrt(squares / np.maximum(count - 1, 1))
    others = count[comparison.cell] - 1
    advantages = np.zeros_like(comparison.returns)
    advantages[comparison.counted] = np.where(others > 0, deviation / (std[comparison.cell] + GRPO_EPS), 0.0)
    return advantages, comparison.returns


def estimate_advantages(
    baseline: Baseline,
    rewards: ArrayLike,
    episode_ends: ArrayLike,
    mask: ArrayLike,
    gamma: float,
    *,
    values: ArrayLike | None = None,
    gae_lambda: float = 1.0,
    groups: ArrayLike | None = None,
) -> Advantages:
    """The advantages and value targets of ``baseline``'s estimator, given what it reads: ``values`` (``V(s_t)`` on
    the ``(T, N)`` grid) and ``gae_lambda`` for "value", ``groups`` for "loo" and "grpo"."""
    if baseline == "none":
        return reward_to_go(rewards, episode_ends, gamma)
    if baseline == "mean":
        return batch_mean_baseline(rewards, episode_ends, mask, gamma)
    if baseline == "value":
        if values is None:
            raise ValueError("baseline='value' needs the critic's values V(s_t)")
        return generalized_advantage(rewards, episode_ends, values, gamma, gae_lambda)
    if baseline == "loo":
        return leave_one_out_baseline(rewards, episode_ends, mask, gamma, groups)
    if baseline == "grpo":
        return group_normalized_advantage(rewards, episode_ends, mask, gamma, groups)
    raise ValueError(f"baseline must be one of {BASELINES}, got {baseline!r}")
