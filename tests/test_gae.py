"""Correctness of the GAE / discounted-sum kernels in ``sb3_reinforce.common.gae``.

References used here are written independently of the kernels: closed forms derived by hand, plain float64
Python loops, and Stable-Baselines3's own ``RolloutBuffer``.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.typing import NDArray
from stable_baselines3.common.buffers import RolloutBuffer

from sb3_reinforce.common import gae
from sb3_reinforce.common.gae import compute_gae, compute_gae_and_returns, discounted_cumsum

F64 = NDArray[np.float64]
F32 = NDArray[np.float32]


# ----------------------------------------------------------------------------------------------------------------
# Independent references
# ----------------------------------------------------------------------------------------------------------------


def reference_gae(
    rewards: np.ndarray,
    values: np.ndarray,
    starts: np.ndarray,
    last_values: np.ndarray,
    last_dones: np.ndarray,
    gamma: float,
    gae_lambda: float,
) -> F64:
    """Textbook float64 GAE, one env and one step at a time."""
    r, v, s = (np.asarray(a, dtype=np.float64) for a in (rewards, values, starts))
    lv, ld = np.asarray(last_values, dtype=np.float64), np.asarray(last_dones, dtype=np.float64)
    n_steps, n_envs = r.shape
    adv = np.zeros((n_steps, n_envs))
    for j in range(n_envs):
        running = 0.0
        for t in reversed(range(n_steps)):
            next_value, not_start = (lv[j], 1.0 - ld[j]) if t == n_steps - 1 else (v[t + 1, j], 1.0 - s[t + 1, j])
            delta = r[t, j] + gamma * next_value * not_start - v[t, j]
            running = delta + gamma * gae_lambda * not_start * running
            adv[t, j] = running
    return adv


def reference_cumsum(x: np.ndarray, cut: np.ndarray, discount: float) -> F64:
    xs, cs = np.asarray(x, dtype=np.float64), np.asarray(cut, dtype=np.float64)
    out = np.zeros_like(xs)
    for j in range(xs.shape[1]):
        running = 0.0
        for t in reversed(range(xs.shape[0])):
            running = xs[t, j] + discount * (1.0 - cs[t, j]) * running
            out[t, j] = running
    return out


def episode_returns_minus_values(
    rewards: np.ndarray,
    values: np.ndarray,
    starts: np.ndarray,
    last_values: np.ndarray,
    last_dones: np.ndarray,
    gamma: float,
) -> F64:
    """Monte Carlo advantage: split each env's column into episodes, discount each one, subtract V."""
    n_steps, n_envs = rewards.shape
    adv = np.zeros((n_steps, n_envs))
    for j in range(n_envs):
        bounds = [0, *[t for t in range(1, n_steps) if starts[t, j]], n_steps]
        for begin, end in itertools.pairwise(bounds):
            # Only the episode running at the rollout's end is bootstrapped, and only if it did not end there.
            ret = float(last_values[j]) if end == n_steps and not last_dones[j] else 0.0
            for t in reversed(range(begin, end)):
                ret = float(rewards[t, j]) + gamma * ret
                adv[t, j] = ret - float(values[t, j])
    return adv


def sb3_advantages(
    rewards: np.ndarray,
    values: np.ndarray,
    starts: np.ndarray,
    last_values: np.ndarray,
    last_dones: np.ndarray,
    gamma: float,
    gae_lambda: float,
) -> tuple[F32, F32]:
    n_steps, n_envs = rewards.shape
    buffer = RolloutBuffer(
        n_steps, spaces.Box(-1, 1, (1,)), spaces.Discrete(2), "cpu", gae_lambda=gae_lambda, gamma=gamma, n_envs=n_envs
    )
    buffer.rewards[:] = rewards
    buffer.values[:] = values
    buffer.episode_starts[:] = starts
    buffer.compute_returns_and_advantage(th.as_tensor(last_values).reshape(n_envs, 1), last_dones)
    return buffer.advantages, buffer.returns


def random_rollout(
    rng: np.random.Generator, n_steps: int, n_envs: int, done_prob: float
) -> tuple[F32, F32, F32, F32, NDArray[np.bool_]]:
    rewards = rng.standard_normal((n_steps, n_envs)).astype(np.float32)
    values = rng.standard_normal((n_steps, n_envs)).astype(np.float32)
    starts = (rng.random((n_steps, n_envs)) < done_prob).astype(np.float32)
    last_values = rng.standard_normal(n_envs).astype(np.float32)
    last_dones = rng.random(n_envs) < done_prob
    return rewards, values, starts, last_values, last_dones


def geometric_sum(ratio: float, n: int) -> float:
    """1 + ratio + ... + ratio^(n-1)."""
    return float(n) if ratio == 1.0 else (1.0 - ratio**n) / (1.0 - ratio)


# ----------------------------------------------------------------------------------------------------------------
# 1. Known answers
# ----------------------------------------------------------------------------------------------------------------

EPISODE_LENGTHS = [5, 3, 7]


def terminal_reward_rollout(
    lengths: list[int], tail: int, gamma: float, gae_lambda: float, critic: float, terminal_reward: float
) -> tuple[F32, F32, F32, float, bool, F64]:
    """One env: episodes of the given lengths, each paying ``terminal_reward`` on its last step and 0 otherwise,
    then ``tail`` steps of an episode cut by the rollout. The critic says ``critic`` everywhere.

    Closed form. Inside a finished episode, ``n`` steps before its terminal step, every delta is
    ``gamma * c - c`` except the terminal one, ``R - c`` (no bootstrap), so
    ``A = (gamma lambda)^n (R - c) + (gamma - 1) c S(n)`` with ``S(n) = 1 + gl + ... + gl^(n-1)``.
    In the cut episode every delta is ``(gamma - 1) c`` (the last is bootstrapped with ``last_values = c``), so
    with ``m`` steps left in the rollout ``A = (gamma - 1) c S(m)``.
    """
    gl = gamma * gae_lambda
    rewards: list[float] = []
    starts: list[float] = []
    expected: list[float] = []
    for length in lengths:
        for k in range(length):
            n = length - 1 - k
            rewards.append(terminal_reward if n == 0 else 0.0)
            starts.append(1.0 if k == 0 else 0.0)
            expected.append(gl**n * (terminal_reward - critic) + (gamma - 1.0) * critic * geometric_sum(gl, n))
    for k in range(tail):
        rewards.append(0.0)
        starts.append(1.0 if k == 0 else 0.0)
        expected.append((gamma - 1.0) * critic * geometric_sum(gl, tail - k))
    column = (np.array(rewards, np.float32)[:, None], np.full((len(rewards), 1), critic, np.float32))
    return column[0], column[1], np.array(starts, np.float32)[:, None], critic, tail == 0, np.array(expected)


@pytest.mark.parametrize("gamma", [0.9, 0.99, 1.0])
@pytest.mark.parametrize("gae_lambda", [0.0, 0.5, 0.95, 1.0])
@pytest.mark.parametrize("n_episodes", [1, 2, 3])
@pytest.mark.parametrize("tail", [0, 4])
def test_constant_critic_terminal_reward_closed_form(
    gamma: float, gae_lambda: float, n_episodes: int, tail: int
) -> None:
    critic, reward = 0.25, 2.0
    # Two envs hold the same episodes in opposite orders, so a mix-up between columns would show.
    col_a = terminal_reward_rollout(EPISODE_LENGTHS[:n_episodes], tail, gamma, gae_lambda, critic, reward)
    col_b = terminal_reward_rollout(EPISODE_LENGTHS[:n_episodes][::-1], tail, gamma, gae_lambda, critic, reward)
    rewards, values, starts = (np.hstack([col_a[i], col_b[i]]) for i in range(3))
    last_values = np.array([critic, critic], np.float32)
    last_dones = np.array([col_a[4], col_b[4]])
    expected = np.stack([col_a[5], col_b[5]], axis=1)

    adv = compute_gae(rewards, values, starts, last_values, last_dones, gamma, gae_lambda)

    assert adv.dtype == np.float32
    assert adv.shape == rewards.shape
    # Values are O(1); the only error is the final rounding to float32 (~1e-7).
    np.testing.assert_allclose(adv, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("gamma", [0.5, 0.9, 0.99])
@pytest.mark.parametrize("gae_lambda", [0.0, 0.7, 1.0])
@pytest.mark.parametrize("truncate_every", [None, 3, 10])
def test_infinite_horizon_exact_critic_has_zero_advantage(
    gamma: float, gae_lambda: float, truncate_every: int | None
) -> None:
    """Reward 1 forever: the true value is 1 / (1 - gamma), and an exact critic leaves nothing to explain.

    A time-limit truncation is a done for the buffer; SB3 then adds ``gamma * V(terminal_obs)`` to that
    step's reward, here ``1 + gamma / (1 - gamma) = 1 / (1 - gamma)``, and the advantage stays 0.
    """
    n_steps, n_envs = 30, 3
    v_true = 1.0 / (1.0 - gamma)
    rewards = np.ones((n_steps, n_envs), np.float32)
    starts = np.zeros((n_steps, n_envs), np.float32)
    if truncate_every is not None:
        truncated_steps = np.arange(truncate_every - 1, n_steps - 1, truncate_every)
        rewards[truncated_steps] = 1.0 + gamma * v_true
        starts[truncated_steps + 1] = 1.0
    values = np.full((n_steps, n_envs), v_true, np.float32)

    adv, ret = compute_gae_and_returns(
        rewards, values, starts, np.full(n_envs, v_true), np.zeros(n_envs, bool), gamma, gae_lambda
    )

    # Inputs like 1/(1-0.99) = 100 are rounded to float32 (relative 6e-8), so zero is met up to ~1e-5 * v_true.
    np.testing.assert_allclose(adv, 0.0, atol=1e-6 * v_true)
    np.testing.assert_allclose(ret, v_true, rtol=1e-6)


@pytest.mark.parametrize("gamma", [0.5, 0.9, 0.99])
@pytest.mark.parametrize("truncate_every", [None, 4])
def test_infinite_horizon_zero_critic_monte_carlo_return(gamma: float, truncate_every: int | None) -> None:
    """With V = 0 inside the rollout, lambda = 1 and the true value as bootstrap (at the rollout cut and folded
    into truncated steps), every advantage is the full discounted return 1 / (1 - gamma)."""
    n_steps = 25
    v_true = 1.0 / (1.0 - gamma)
    rewards = np.ones((n_steps, 1), np.float32)
    starts = np.zeros((n_steps, 1), np.float32)
    if truncate_every is not None:
        truncated_steps = np.arange(truncate_every - 1, n_steps - 1, truncate_every)
        rewards[truncated_steps] = 1.0 + gamma * v_true
        starts[truncated_steps + 1] = 1.0

    adv = compute_gae(rewards, np.zeros_like(rewards), starts, [v_true], [False], gamma, 1.0)

    np.testing.assert_allclose(adv, v_true, rtol=1e-6)


# ----------------------------------------------------------------------------------------------------------------
# 2. Agreement with Stable-Baselines3
# ----------------------------------------------------------------------------------------------------------------

SHAPES = [(1, 1), (1, 6), (9, 1), (64, 8), (256, 3), (33, 40)]  # (33, 40) runs the SIMD path (N >= 32)
DONE_PATTERNS = {"no_done": 0.0, "sparse": 0.05, "half": 0.5, "all_done": 1.0}


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"T{s[0]}xN{s[1]}")
@pytest.mark.parametrize("done_prob", DONE_PATTERNS.values(), ids=DONE_PATTERNS.keys())
@pytest.mark.parametrize(("gamma", "gae_lambda"), [(0.99, 0.95), (1.0, 1.0), (0.9, 0.0)])
def test_matches_sb3_rollout_buffer(shape: tuple[int, int], done_prob: float, gamma: float, gae_lambda: float) -> None:
    rng = np.random.default_rng(hash((shape, done_prob, gamma)) % 2**32)
    rollout = random_rollout(rng, *shape, done_prob)
    sb3_adv, sb3_ret = sb3_advantages(*rollout, gamma, gae_lambda)

    adv, ret = compute_gae_and_returns(*rollout, gamma, gae_lambda)

    # SB3 rounds to float32 at every step; over these horizons (<= 256 steps of O(1) terms) its accumulated error
    # is a few 1e-6 at most, so 1e-5 relative holds and atol=1e-5 only matters where A cancels to ~0.
    np.testing.assert_allclose(adv, sb3_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret, sb3_ret, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(ret, adv + rollout[1])  # SB3's returns: float32 advantages + values


# ----------------------------------------------------------------------------------------------------------------
# 3. lambda = 1 and lambda = 0
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1, 1), (50, 4), (40, 33)], ids=lambda s: f"T{s[0]}xN{s[1]}")
@pytest.mark.parametrize("gamma", [0.0, 0.9, 1.0])
@pytest.mark.parametrize("done_prob", [0.0, 0.1, 1.0])
def test_lambda_one_is_discounted_return_minus_value(shape: tuple[int, int], gamma: float, done_prob: float) -> None:
    rollout = random_rollout(np.random.default_rng(7), *shape, done_prob)

    adv = compute_gae(*rollout, gamma, 1.0)

    np.testing.assert_allclose(adv, episode_returns_minus_values(*rollout, gamma), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(1, 1), (50, 4), (40, 33)], ids=lambda s: f"T{s[0]}xN{s[1]}")
@pytest.mark.parametrize("gamma", [0.0, 0.9, 1.0])
@pytest.mark.parametrize("done_prob", [0.0, 0.1, 1.0])
def test_lambda_zero_is_one_step_td_error(shape: tuple[int, int], gamma: float, done_prob: float) -> None:
    rewards, values, starts, last_values, last_dones = random_rollout(np.random.default_rng(8), *shape, done_prob)
    next_values = np.vstack([values[1:], last_values[None]]).astype(np.float64)
    next_not_start = 1.0 - np.vstack([starts[1:], last_dones[None]]).astype(np.float64)
    td_error = rewards + gamma * next_values * next_not_start - values

    adv = compute_gae(rewards, values, starts, last_values, last_dones, gamma, 0.0)

    np.testing.assert_allclose(adv, td_error, rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------------------------------------------------------
# 4. Property-based: random shapes and done patterns against the float64 loop
# ----------------------------------------------------------------------------------------------------------------

finite32 = st.floats(-100, 100, width=32)
# The result is float32: what the float64 reference holds below float32's smallest normal number cannot survive.
FLOAT32_TINY = float(np.finfo(np.float32).tiny)


@st.composite
def rollouts(draw: st.DrawFn) -> tuple[F32, F32, NDArray[np.bool_], F32, NDArray[np.bool_]]:
    n_steps = draw(st.integers(1, 40))
    n_envs = draw(st.sampled_from([1, 2, 5, 31, 32, 37]))  # both sides of the SIMD threshold
    shape = (n_steps, n_envs)
    rewards = draw(hnp.arrays(np.float32, shape, elements=finite32))
    values = draw(hnp.arrays(np.float32, shape, elements=finite32))
    starts = draw(hnp.arrays(np.bool_, shape))
    last_values = draw(hnp.arrays(np.float32, (n_envs,), elements=finite32))
    last_dones = draw(hnp.arrays(np.bool_, (n_envs,)))
    return rewards, values, starts, last_values, last_dones


@settings(max_examples=60, deadline=None)
@given(rollout=rollouts(), gamma=st.floats(0, 1), gae_lambda=st.floats(0, 1))
def test_gae_property_vs_float64_loop(
    rollout: tuple[F32, F32, NDArray[np.bool_], F32, NDArray[np.bool_]], gamma: float, gae_lambda: float
) -> None:
    expected = reference_gae(*rollout, gamma, gae_lambda)

    adv = compute_gae(*rollout, gamma, gae_lambda)

    # Both sides compute in float64 from the same float32 inputs; ours is rounded to float32 once (6e-8 relative).
    np.testing.assert_allclose(adv, expected, rtol=1e-6, atol=FLOAT32_TINY)


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    n_steps=st.integers(1, 40),
    n_envs=st.sampled_from([1, 3, 31, 32, 40]),
    discount=st.floats(0, 1),
)
def test_cumsum_property_vs_float64_loop(data: st.DataObject, n_steps: int, n_envs: int, discount: float) -> None:
    x = data.draw(hnp.arrays(np.float32, (n_steps, n_envs), elements=finite32))
    cut = data.draw(hnp.arrays(np.bool_, (n_steps, n_envs)))

    expected = reference_cumsum(x, cut, discount)

    np.testing.assert_allclose(discounted_cumsum(x, cut, discount), expected, rtol=1e-6, atol=FLOAT32_TINY)


# ----------------------------------------------------------------------------------------------------------------
# 5. Long horizon
# ----------------------------------------------------------------------------------------------------------------


def test_long_horizon_stays_accurate() -> None:
    """T = 10,000 with gamma * lambda = 0.9999: returns reach ~3,000 and a float32 accumulator (SB3's) drifts by
    ~7e-5 relative here; the float64 carry keeps the result at float32 rounding."""
    n_steps, gamma = 10_000, 0.9999
    rng = np.random.default_rng(3)
    rewards = rng.random((n_steps, 2)).astype(np.float32)
    values = rng.random((n_steps, 2)).astype(np.float32)
    starts = np.zeros((n_steps, 2), np.float32)
    starts[rng.random(n_steps) < 5e-4, 1] = 1.0  # env 0 never resets, env 1 has a few long episodes
    rollout = (rewards, values, starts, rng.random(2).astype(np.float32), np.zeros(2, bool))
    expected = reference_gae(*rollout, gamma, 1.0)

    adv = compute_gae(*rollout, gamma, 1.0)

    np.testing.assert_allclose(adv, expected, rtol=1e-5)
    np.testing.assert_allclose(adv, expected, rtol=2e-7)  # in fact: one float32 rounding


# ----------------------------------------------------------------------------------------------------------------
# 6. discounted_cumsum
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("discount", [0.5, 0.9, 1.0])
@pytest.mark.parametrize("n_envs", [1, 40])
def test_cumsum_of_ones_is_geometric_series(discount: float, n_envs: int) -> None:
    n_steps = 20
    out = discounted_cumsum(np.ones((n_steps, n_envs), np.float32), np.zeros((n_steps, n_envs), bool), discount)

    expected = [geometric_sum(discount, n_steps - t) for t in range(n_steps)]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.repeat(np.array(expected)[:, None], n_envs, axis=1), rtol=1e-6)


def test_cumsum_hand_example() -> None:
    x = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
    cut = np.array([[False], [True], [False], [True]])  # the episode ends at step 1; cut[T-1] changes nothing

    # y3 = 4; y2 = 3 + 0.5 * 4 = 5; y1 = 2 (cut); y0 = 1 + 0.5 * 2 = 2
    np.testing.assert_array_equal(discounted_cumsum(x, cut, 0.5), [[2.0], [2.0], [5.0], [4.0]])


@pytest.mark.parametrize(
    ("shape", "cut_all", "discount"),
    [((1, 1), False, 0.9), ((1, 50), False, 1.0), ((30, 3), True, 0.9), ((30, 35), True, 1.0), ((30, 3), False, 0.0)],
    ids=["T1", "T1-wide", "cut_everywhere", "cut_everywhere-wide", "discount0"],
)
def test_cumsum_degenerate_cases_return_x(shape: tuple[int, int], cut_all: bool, discount: float) -> None:
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    cut = np.full(shape, cut_all)

    np.testing.assert_array_equal(discounted_cumsum(x, cut, discount), x)


def test_cumsum_discount_one_is_reverse_cumsum_per_segment() -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(-5, 6, (40, 4)).astype(np.float32)  # small integers: float32 sums are exact
    cut = rng.random((40, 4)) < 0.2
    expected = np.zeros_like(x)
    for j in range(4):
        ends = [-1, *np.flatnonzero(cut[:-1, j]), 39]
        for lo, hi in itertools.pairwise(ends):
            segment = x[lo + 1 : hi + 1, j]
            expected[lo + 1 : hi + 1, j] = np.cumsum(segment[::-1])[::-1]

    np.testing.assert_array_equal(discounted_cumsum(x, cut, 1.0), expected)


def test_cumsum_is_reinforce_returns_to_go() -> None:
    # Two episodes in one env: [1, 1, 1] then [2, 2]; G_t = r_t + gamma * (1 - end_t) * G_{t+1}.
    rewards = np.array([[1], [1], [1], [2], [2]], np.float32)
    ends = np.array([[0], [0], [1], [0], [1]], bool)

    returns = discounted_cumsum(rewards, ends, 0.5)

    np.testing.assert_array_equal(returns[:, 0], [1.75, 1.5, 1.0, 3.0, 2.0])


# ----------------------------------------------------------------------------------------------------------------
# Input handling: dtypes, layouts, out=, aliasing, errors, compile count, cache fallback
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_envs", [3, 36])
def test_gae_accepts_any_layout_and_dtype(n_envs: int) -> None:
    rewards, values, starts, last_values, last_dones = random_rollout(np.random.default_rng(4), 17, n_envs, 0.2)
    expected = compute_gae(rewards, values, starts, last_values, last_dones, 0.97, 0.9)

    variants = {
        "fortran": (np.asfortranarray(rewards), np.asfortranarray(values), np.asfortranarray(starts)),
        "strided": tuple(np.repeat(a, 2, axis=1)[:, ::2] for a in (rewards, values, starts)),
        "float64": (rewards.astype(np.float64), values.astype(np.float64), starts.astype(np.float64)),
        "bool_starts": (rewards, values, starts.astype(bool)),
        "int_starts": (rewards, values, starts.astype(np.int64)),
        "lists": (rewards.tolist(), values.tolist(), starts.tolist()),
    }
    for name, (r, v, s) in variants.items():
        adv = compute_gae(r, v, s, last_values.reshape(-1, 1), last_dones.astype(np.float32), np.float32(0.97), 0.9)
        assert adv.dtype == np.float32, name
        assert adv.flags.c_contiguous, name
        # float32(0.97) != 0.97: the gamma cast changes the last bits only.
        np.testing.assert_allclose(adv, expected, rtol=1e-6, atol=1e-6, err_msg=name)


def test_kernels_compile_at_most_two_signatures() -> None:
    """Normalising inputs bounds numba specialisations to one per mask dtype (bool, float32)."""
    rng = np.random.default_rng(5)
    rewards, values, starts, last_values, last_dones = random_rollout(rng, 8, 4, 0.3)
    for dtype in (np.float32, np.float64, np.int32):
        for mask in (starts, starts.astype(bool), starts.astype(np.float64)):
            compute_gae(rewards.astype(dtype), values.T.copy().T, mask, last_values.astype(dtype), last_dones, 0.9, 1)
            discounted_cumsum(rewards.astype(dtype)[::-1], mask, np.float64(0.9))
            compute_gae_and_returns(rewards, values, mask, last_values, last_dones.astype(int), 0.9, 0.5)

    assert 1 <= len(gae._gae_kernel.signatures) <= 2  # type: ignore[attr-defined]
    assert 1 <= len(gae._cumsum_kernel.signatures) <= 2  # type: ignore[attr-defined]


def test_simd_and_scalar_paths_agree_bitwise() -> None:
    """N >= 32 takes the vectorised step, N < 32 the inlined loop; columns are independent, so a column must not
    change when computed alone."""
    rollout = random_rollout(np.random.default_rng(6), 50, 40, 0.1)
    wide = compute_gae_and_returns(*rollout, 0.99, 0.95)
    wide_cumsum = discounted_cumsum(rollout[0], rollout[2], 0.9)
    for cols in (slice(0, 5), slice(17, 18), slice(9, 40)):
        narrow = compute_gae_and_returns(
            rollout[0][:, cols],
            rollout[1][:, cols],
            rollout[2][:, cols],
            rollout[3][cols],
            rollout[4][cols],
            0.99,
            0.95,
        )
        np.testing.assert_array_equal(narrow[0], wide[0][:, cols])
        np.testing.assert_array_equal(narrow[1], wide[1][:, cols])
        np.testing.assert_array_equal(
            discounted_cumsum(rollout[0][:, cols], rollout[2][:, cols], 0.9), wide_cumsum[:, cols]
        )


@pytest.mark.parametrize("n_envs", [2, 33])
def test_out_arguments_and_aliasing(n_envs: int) -> None:
    rewards, values, starts, last_values, last_dones = random_rollout(np.random.default_rng(9), 12, n_envs, 0.2)
    args = (0.95, 0.9)
    expected_adv, expected_ret = compute_gae_and_returns(rewards, values, starts, last_values, last_dones, *args)

    out = np.full_like(rewards, np.nan)
    assert compute_gae(rewards, values, starts, last_values, last_dones, *args, out=out) is out
    np.testing.assert_array_equal(out, expected_adv)

    # In place over the rewards (read before written) and over the values (read after written: needs a scratch).
    r_copy = rewards.copy()
    assert compute_gae(r_copy, values, starts, last_values, last_dones, *args, out=r_copy) is r_copy
    np.testing.assert_array_equal(r_copy, expected_adv)
    v_copy = values.copy()
    compute_gae(rewards, v_copy, starts, last_values, last_dones, *args, out=v_copy)
    np.testing.assert_array_equal(v_copy, expected_adv)

    # Non-contiguous outputs, and returns written over the values.
    adv_out = np.zeros((n_envs, 12), np.float32).T
    v_copy = values.copy()
    adv, ret = compute_gae_and_returns(rewards, v_copy, starts, last_values, last_dones, *args, adv_out, v_copy)
    assert adv is adv_out
    assert ret is v_copy
    np.testing.assert_array_equal(adv, expected_adv)
    np.testing.assert_array_equal(ret, expected_ret)

    x = rewards.copy()
    expected_cumsum = discounted_cumsum(rewards, starts, 0.9)
    assert discounted_cumsum(x, starts, 0.9, out=x) is x
    np.testing.assert_array_equal(x, expected_cumsum)
    strided_out = np.zeros((12, 2 * n_envs), np.float32)[:, ::2]
    discounted_cumsum(rewards, starts, 0.9, out=strided_out)
    np.testing.assert_array_equal(strided_out, expected_cumsum)


def test_empty_rollout() -> None:
    adv = compute_gae(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(3), np.zeros(3), 0.9, 0.9)
    assert adv.shape == (0, 3)
    assert adv.dtype == np.float32
    assert discounted_cumsum(np.zeros((0, 2)), np.zeros((0, 2), bool), 0.9).shape == (0, 2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rewards": np.zeros(5)}, "time-major"),
        ({"values": np.zeros((5, 3))}, "values must have the shape"),
        ({"episode_starts": np.zeros((4, 2))}, "episode_starts must have shape"),
        ({"last_values": np.zeros(3)}, "last_values must have one entry per env"),
        ({"last_dones": np.zeros(1)}, "last_dones must have one entry per env"),
        ({"out": np.zeros((5, 2), np.float64)}, "float32 array of shape"),
        ({"out": np.zeros((2, 5), np.float32)}, "float32 array of shape"),
    ],
)
def test_gae_rejects_bad_shapes(kwargs: dict[str, np.ndarray], message: str) -> None:
    call = {
        "rewards": np.zeros((5, 2)),
        "values": np.zeros((5, 2)),
        "episode_starts": np.zeros((5, 2)),
        "last_values": np.zeros(2),
        "last_dones": np.zeros(2),
        "gamma": 0.9,
        "gae_lambda": 0.9,
        **kwargs,
    }
    with pytest.raises(ValueError, match=message):
        compute_gae(**call)  # type: ignore[arg-type]


def test_cumsum_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError, match="cut must have shape"):
        discounted_cumsum(np.zeros((3, 2)), np.zeros((3, 1), bool), 0.9)
    out = np.zeros((3, 2), np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        discounted_cumsum(np.zeros((3, 2)), np.zeros((3, 2), bool), 0.9, out=out)


def test_works_without_a_writable_numba_cache(tmp_path: Path) -> None:
    """numba refuses ``cache=True`` when no cache directory is writable; the module must still import and work."""
    module_dir = tmp_path / "module"
    module_dir.mkdir()
    shutil.copy(gae.__file__, module_dir / "gae.py")
    (module_dir / "__pycache__").write_text("")  # a file where numba wants a directory: in-tree cache unusable
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")  # so are NUMBA_CACHE_DIR and the user-wide cache (even for root, unlike chmod)
    env = {
        **os.environ,
        "PYTHONPATH": str(module_dir),
        "PYTHONDONTWRITEBYTECODE": "1",
        "NUMBA_CACHE_DIR": str(blocker / "numba"),
        "XDG_CACHE_HOME": str(blocker / "xdg"),
        "HOME": str(blocker),
    }
    script = (
        "import warnings, numpy as np\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import gae\n"
        "assert any('numba cannot write a cache' in str(w.message) for w in caught), caught\n"
        "adv = gae.compute_gae(np.ones((3, 1)), np.zeros((3, 1)), np.zeros((3, 1)), [0.0], [True], 0.5, 1.0)\n"
        "assert adv.ravel().tolist() == [1.75, 1.5, 1.0], adv\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
