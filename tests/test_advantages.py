"""The advantage estimators of sb3_reinforce.common.advantages: known answers, special cases, and agreement with
plain per-episode loops over random batches of complete episodes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sb3_reinforce.common.advantages import (
    ADVANTAGE_ESTIMATORS,
    batch_mean_baseline,
    generalized_advantage,
    reward_to_go,
)


def episodes_of(ends: np.ndarray, env: int) -> list[tuple[int, int]]:
    """(first, last) rows of each episode of one env's column."""
    spans, start = [], 0
    for t in range(len(ends)):
        if ends[t, env]:
            spans.append((start, t))
            start = t + 1
    return spans


def loop_gae(rewards: np.ndarray, values: np.ndarray, ends: np.ndarray, gamma: float, lam: float) -> np.ndarray:
    """GAE written from its definition, one episode at a time, in float64."""
    out = np.zeros(rewards.shape)
    for env in range(rewards.shape[1]):
        for first, last in episodes_of(ends, env):
            advantage = 0.0
            for t in range(last, first - 1, -1):
                next_value = values[t + 1, env] if t < last else 0.0
                delta = rewards[t, env] + gamma * next_value - values[t, env]
                advantage = delta + (gamma * lam * advantage if t < last else 0.0)
                out[t, env] = advantage
    return out


@st.composite
def batches(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Complete episodes of random lengths in 1-3 envs, the last row ending every env's last episode."""
    n_envs = draw(st.integers(1, 3))
    n_steps = draw(st.integers(1, 12))
    ends = np.zeros((n_steps, n_envs), dtype=bool)
    for env in range(n_envs):
        for t in draw(st.lists(st.integers(0, n_steps - 1), max_size=4)):
            ends[t, env] = True
    ends[-1] = True
    finite = st.floats(-10, 10, allow_nan=False, width=32)
    rewards = np.array(draw(st.lists(finite, min_size=n_steps * n_envs, max_size=n_steps * n_envs)), np.float32)
    values = np.array(draw(st.lists(finite, min_size=n_steps * n_envs, max_size=n_steps * n_envs)), np.float32)
    return rewards.reshape(n_steps, n_envs), values.reshape(n_steps, n_envs), ends


def test_reward_to_go_known_answer() -> None:
    # One env, episodes [1, 2, 3] and [1, 2] with gamma 0.5.
    rewards = np.array([[1.0], [2.0], [3.0], [1.0], [2.0]], np.float32)
    ends = np.array([[0], [0], [1], [0], [1]], bool)
    advantages, targets = reward_to_go(rewards, ends, None, np.ones_like(ends), 0.5, 1.0)
    np.testing.assert_allclose(advantages[:, 0], [2.75, 3.5, 3.0, 2.0, 2.0])
    np.testing.assert_array_equal(advantages, targets)


def test_batch_mean_counts_only_the_masked_steps() -> None:
    rewards = np.array([[1.0, 5.0], [1.0, 100.0]], np.float32)
    ends = np.ones((2, 2), bool)  # every step is a one-step episode
    mask = np.array([[True, True], [True, False]])  # env 1's second step belongs to no update
    advantages, targets = batch_mean_baseline(rewards, ends, None, mask, 0.9, 1.0)
    np.testing.assert_allclose(targets, rewards)
    np.testing.assert_allclose(advantages[mask], np.array([1.0, 5.0, 1.0]) - 7.0 / 3.0, rtol=1e-6)
    assert abs(float(advantages[mask].sum())) < 1e-5


def test_gae_with_lambda_one_is_return_minus_value() -> None:
    rewards = np.array([[1.0], [2.0], [3.0]], np.float32)
    values = np.array([[0.5], [-1.0], [2.0]], np.float32)
    ends = np.array([[0], [0], [1]], bool)
    advantages, targets = generalized_advantage(rewards, ends, values, np.ones_like(ends), 0.9, 1.0)
    returns = np.array([1 + 0.9 * 2 + 0.81 * 3, 2 + 0.9 * 3, 3.0])
    np.testing.assert_allclose(advantages[:, 0], returns - values[:, 0], rtol=1e-6)
    np.testing.assert_allclose(targets[:, 0], returns, rtol=1e-6)


def test_gae_with_lambda_zero_is_the_td_error_and_never_crosses_an_episode() -> None:
    rewards = np.array([[1.0], [2.0], [3.0]], np.float32)
    values = np.array([[0.5], [-1.0], [2.0]], np.float32)
    ends = np.array([[0], [1], [1]], bool)  # episodes [0, 1] and [2]
    advantages, _ = generalized_advantage(rewards, ends, values, np.ones_like(ends), 0.9, 0.0)
    np.testing.assert_allclose(advantages[:, 0], [1 + 0.9 * -1.0 - 0.5, 2 - -1.0, 3 - 2.0], rtol=1e-6)


@settings(max_examples=150, deadline=None)
@given(batch=batches(), gamma=st.sampled_from([0.0, 0.5, 0.99, 1.0]), lam=st.sampled_from([0.0, 0.9, 1.0]))
def test_gae_matches_the_per_episode_loop(batch: tuple[np.ndarray, ...], gamma: float, lam: float) -> None:
    rewards, values, ends = batch
    advantages, targets = generalized_advantage(rewards, ends, values, np.ones_like(ends), gamma, lam)
    expected = loop_gae(rewards.astype(np.float64), values.astype(np.float64), ends, gamma, lam)
    np.testing.assert_allclose(advantages, expected, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(targets, expected + values, rtol=1e-4, atol=1e-3)


@settings(max_examples=100, deadline=None)
@given(batch=batches(), gamma=st.sampled_from([0.0, 0.7, 1.0]))
def test_reward_to_go_is_gae_with_zero_values_and_lambda_one(batch: tuple[np.ndarray, ...], gamma: float) -> None:
    rewards, _, ends = batch
    returns, _ = reward_to_go(rewards, ends, None, np.ones_like(ends), gamma, 1.0)
    zero = np.zeros_like(rewards)
    gae, _ = generalized_advantage(rewards, ends, zero, np.ones_like(ends), gamma, 1.0)
    np.testing.assert_allclose(returns, gae, rtol=1e-5, atol=1e-4)


def test_each_baseline_has_its_estimator() -> None:
    assert {"none": reward_to_go, "mean": batch_mean_baseline, "value": generalized_advantage} == ADVANTAGE_ESTIMATORS


def test_bad_input_is_named() -> None:
    ends = np.ones((2, 1), bool)
    with pytest.raises(ValueError, match="needs the critic's values"):
        generalized_advantage(np.zeros((2, 1)), ends, None, ends, 0.9, 0.9)
    with pytest.raises(ValueError, match="values must have episode_ends' shape"):
        generalized_advantage(np.zeros((2, 1)), ends, np.zeros((3, 1)), ends, 0.9, 0.9)
    with pytest.raises(ValueError, match="mask must have the rewards' shape"):
        batch_mean_baseline(np.zeros((2, 1)), ends, None, np.ones((2, 2), bool), 0.9, 1.0)
