"""The advantage estimators of sb3_reinforce.common.advantages: known answers, special cases, and agreement with
plain per-episode loops over random batches of complete episodes (tests/test_baseline_gradient.py checks the
expected gradient of each baseline)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sb3_reinforce.common.advantages import (
    BASELINES,
    GRPO_EPS,
    batch_mean_baseline,
    estimate_advantages,
    generalized_advantage,
    group_normalized_advantage,
    leave_one_out_baseline,
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
    advantages, targets = reward_to_go(rewards, ends, 0.5)
    np.testing.assert_allclose(advantages[:, 0], [2.75, 3.5, 3.0, 2.0, 2.0])
    np.testing.assert_array_equal(advantages, targets)


def test_batch_mean_counts_only_the_masked_steps() -> None:
    rewards = np.array([[1.0, 5.0], [1.0, 100.0]], np.float32)
    ends = np.ones((2, 2), bool)  # every step is a one-step episode
    mask = np.array([[True, True], [True, False]])  # env 1's second step belongs to no update
    advantages, targets = batch_mean_baseline(rewards, ends, mask, 0.9)
    np.testing.assert_allclose(targets, rewards)
    np.testing.assert_allclose(advantages[mask], np.array([1.0, 5.0, 1.0]) - 7.0 / 3.0, rtol=1e-6)
    assert abs(float(advantages[mask].sum())) < 1e-5


def test_gae_with_lambda_one_is_return_minus_value() -> None:
    rewards = np.array([[1.0], [2.0], [3.0]], np.float32)
    values = np.array([[0.5], [-1.0], [2.0]], np.float32)
    ends = np.array([[0], [0], [1]], bool)
    advantages, targets = generalized_advantage(rewards, ends, values, 0.9, 1.0)
    returns = np.array([1 + 0.9 * 2 + 0.81 * 3, 2 + 0.9 * 3, 3.0])
    np.testing.assert_allclose(advantages[:, 0], returns - values[:, 0], rtol=1e-6)
    np.testing.assert_allclose(targets[:, 0], returns, rtol=1e-6)


def test_gae_with_lambda_zero_is_the_td_error_and_never_crosses_an_episode() -> None:
    rewards = np.array([[1.0], [2.0], [3.0]], np.float32)
    values = np.array([[0.5], [-1.0], [2.0]], np.float32)
    ends = np.array([[0], [1], [1]], bool)  # episodes [0, 1] and [2]
    advantages, _ = generalized_advantage(rewards, ends, values, 0.9, 0.0)
    np.testing.assert_allclose(advantages[:, 0], [1 + 0.9 * -1.0 - 0.5, 2 - -1.0, 3 - 2.0], rtol=1e-6)


@settings(max_examples=150, deadline=None)
@given(batch=batches(), gamma=st.sampled_from([0.0, 0.5, 0.99, 1.0]), lam=st.sampled_from([0.0, 0.9, 1.0]))
def test_gae_matches_the_per_episode_loop(batch: tuple[np.ndarray, ...], gamma: float, lam: float) -> None:
    rewards, values, ends = batch
    advantages, targets = generalized_advantage(rewards, ends, values, gamma, lam)
    expected = loop_gae(rewards.astype(np.float64), values.astype(np.float64), ends, gamma, lam)
    np.testing.assert_allclose(advantages, expected, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(targets, expected + values, rtol=1e-4, atol=1e-3)


@settings(max_examples=100, deadline=None)
@given(batch=batches(), gamma=st.sampled_from([0.0, 0.7, 1.0]))
def test_reward_to_go_is_gae_with_zero_values_and_lambda_one(batch: tuple[np.ndarray, ...], gamma: float) -> None:
    rewards, _, ends = batch
    returns, _ = reward_to_go(rewards, ends, gamma)
    zero = np.zeros_like(rewards)
    gae, _ = generalized_advantage(rewards, ends, zero, gamma, 1.0)
    np.testing.assert_allclose(returns, gae, rtol=1e-5, atol=1e-4)


# Three envs, gamma 1, a reward of 1 at every step, so G_k is the number of steps left. Env 0 runs episodes A (3
# steps) and B (1 step), env 1 runs C (2 steps) and D (2 steps); env 2's one episode is not counted (masked out),
# and its large rewards must change nothing.
KNOWN_REWARDS = np.array([[1, 1, 50], [1, 1, 50], [1, 1, 50], [1, 1, 50]], np.float32)
KNOWN_ENDS = np.array([[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 1]], bool)
KNOWN_MASK = np.array([[1, 1, 0]] * 4, bool)


def test_leave_one_out_known_answer_one_group() -> None:
    # Returns: A = 3, 2, 1 at k = 0, 1, 2; B = 1; C = 2, 1; D = 2, 1.
    # k = 0, all four run: A 3 - (1+2+2)/3 = 4/3, B 1 - (3+2+2)/3 = -4/3, C 2 - (3+1+2)/3 = 0, D likewise 0.
    # k = 1, A, C and D run: A 2 - (1+1)/2 = 1, C 1 - (2+1)/2 = -1/2, D likewise -1/2.
    # k = 2, only A runs: no other episode, baseline 0, A = G = 1.
    advantages, targets = leave_one_out_baseline(KNOWN_REWARDS, KNOWN_ENDS, KNOWN_MASK, 1.0)
    expected = np.array([[4 / 3, 0], [1, -1 / 2], [1, 0], [-4 / 3, -1 / 2]])
    np.testing.assert_allclose(advantages[:, :2], expected, rtol=1e-6)
    np.testing.assert_array_equal(advantages[:, 2], 0.0)  # unmasked entries
    np.testing.assert_array_equal(targets, reward_to_go(KNOWN_REWARDS, KNOWN_ENDS, 1.0)[0])


def test_leave_one_out_known_answer_two_groups() -> None:
    # Groups {A, C} and {B, D} (G = 2, as same-start pairs): each episode is compared with its partner only.
    # A: 3 - 2, 2 - 1, then alone at k = 2: 1. C: 2 - 3, 1 - 2. B: 1 - 2. D: 2 - 1, then alone at k = 1: 1.
    groups = np.array([[0, 0, -1], [0, 0, -1], [0, 1, -1], [1, 1, -1]])
    advantages, _ = leave_one_out_baseline(KNOWN_REWARDS, KNOWN_ENDS, KNOWN_MASK, 1.0, groups)
    np.testing.assert_allclose(advantages[:, :2], [[1, -1], [1, -1], [1, 1], [-1, 1]], rtol=1e-6)


def test_group_normalized_known_answer() -> None:
    # k = 0: returns 3, 1, 2, 2, mean 2, sample std sqrt(2/3); k = 1: returns 2, 1, 1, mean 4/3, sample std
    # sqrt(1/3); k = 2: A alone gets 0.
    advantages, _ = group_normalized_advantage(KNOWN_REWARDS, KNOWN_ENDS, KNOWN_MASK, 1.0)
    s0, s1 = np.sqrt(2 / 3) + GRPO_EPS, np.sqrt(1 / 3) + GRPO_EPS
    expected = np.array([[1 / s0, 0], [(2 / 3) / s1, (-1 / 3) / s1], [0, 0], [-1 / s0, (-1 / 3) / s1]])
    np.testing.assert_allclose(advantages[:, :2], expected, rtol=1e-6)
    # In the pairs {A, C} and {B, D} the returns differ by d = 1 wherever both run: each member is d/2 from the
    # mean, and the sample std of two values is d/sqrt(2). A alone at k = 2 and D alone at k = 1 get 0.
    groups = np.array([[0, 0, -1], [0, 0, -1], [0, 1, -1], [1, 1, -1]])
    paired, _ = group_normalized_advantage(KNOWN_REWARDS, KNOWN_ENDS, KNOWN_MASK, 1.0, groups)
    h = 0.5 / (np.sqrt(0.5) + GRPO_EPS)
    np.testing.assert_allclose(paired[:, :2], [[h, -h], [h, -h], [0, h], [-h, 0]], rtol=1e-6)


def loop_comparison(
    returns: np.ndarray, ends: np.ndarray, counted: np.ndarray, labels: np.ndarray, normalize: bool
) -> np.ndarray:
    """loo (or GRPO with ``normalize``) written from its definition: every counted episode, every step k, the
    other episodes of its group whose length exceeds k."""
    episodes = [
        (labels[first, env], returns[first : last + 1, env].astype(np.float64), env, first)
        for env in range(returns.shape[1])
        for first, last in episodes_of(ends, env)
        if counted[first, env]
    ]
    out = np.zeros(returns.shape)
    for index, (label, own, env, first) in enumerate(episodes):
        for k in range(len(own)):
            others = [g[k] for i, (lab, g, _, _) in enumerate(episodes) if i != index and lab == label and len(g) > k]
            if normalize:
                peers = [own[k], *others]
                value = (own[k] - np.mean(peers)) / (np.std(peers, ddof=1) + GRPO_EPS) if others else 0.0
            else:
                value = own[k] - (np.mean(others) if others else 0.0)
            out[first + k, env] = value
    return out


@st.composite
def grouped_batches(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A batch of :func:`batches`, each episode counted or not and labelled with one of three groups."""
    rewards, _, ends = draw(batches())
    counted = np.zeros(ends.shape, bool)
    labels = np.full(ends.shape, -1, np.int64)
    for env in range(ends.shape[1]):
        for first, last in episodes_of(ends, env):
            counted[first : last + 1, env] = draw(st.booleans())
            labels[first : last + 1, env] = draw(st.integers(0, 2))
    return rewards, ends, counted, labels


@settings(max_examples=150, deadline=None)
@given(batch=grouped_batches(), gamma=st.sampled_from([0.0, 0.9, 1.0]), normalize=st.booleans())
def test_loo_and_grpo_match_the_per_episode_loop(batch: tuple[np.ndarray, ...], gamma: float, normalize: bool) -> None:
    rewards, ends, counted, labels = batch
    estimator = group_normalized_advantage if normalize else leave_one_out_baseline
    advantages, targets = estimator(rewards, ends, counted, gamma, labels)
    # The returns are reward_to_go's (checked above against plain loops); the comparison is what is tested here.
    returns = reward_to_go(rewards, ends, gamma)[0]
    np.testing.assert_array_equal(targets, returns)
    expected = loop_comparison(returns, ends, counted, labels, normalize)
    np.testing.assert_allclose(advantages, expected, rtol=1e-5, atol=1e-5)


@settings(max_examples=100, deadline=None)
@given(batch=grouped_batches(), scale=st.sampled_from([-1, 1, 7, 10**9]), shift=st.integers(-(10**6), 10**6))
def test_group_labels_are_names_only(batch: tuple[np.ndarray, ...], scale: int, shift: int) -> None:
    # Any injective relabelling (sparse, negative, huge) compares the same episodes.
    rewards, ends, counted, labels = batch
    renamed = labels * scale + shift
    for estimator in (leave_one_out_baseline, group_normalized_advantage):
        expected, _ = estimator(rewards, ends, counted, 0.9, labels)
        np.testing.assert_array_equal(estimator(rewards, ends, counted, 0.9, renamed)[0], expected)


@settings(max_examples=100, deadline=None)
@given(batch=batches(), gamma=st.sampled_from([0.0, 0.7, 1.0]))
def test_an_episode_alone_in_its_group_keeps_its_return_under_loo_and_gets_nothing_under_grpo(
    batch: tuple[np.ndarray, ...], gamma: float
) -> None:
    rewards, _, ends = batch
    # A label per episode: the number of episodes ended before it in its column, times n_envs, plus the column.
    alone = (np.cumsum(ends, axis=0) - ends) * ends.shape[1] + np.arange(ends.shape[1])
    counted = np.ones_like(ends)
    returns, _ = reward_to_go(rewards, ends, gamma)
    np.testing.assert_array_equal(leave_one_out_baseline(rewards, ends, counted, gamma, alone)[0], returns)
    np.testing.assert_array_equal(group_normalized_advantage(rewards, ends, counted, gamma, alone)[0], 0)


@settings(max_examples=100, deadline=None)
@given(
    n_envs=st.integers(2, 5),
    n_steps=st.integers(1, 8),
    seed=st.integers(0, 2**31),
    gamma=st.sampled_from([0.5, 1.0]),
)
def test_loo_advantages_sum_to_zero_over_episodes_that_run_together(
    n_envs: int, n_steps: int, seed: int, gamma: float
) -> None:
    # One episode per env, all of n_steps steps: at each k every episode runs, and
    # sum_j (G^j - (S - G^j) / (n - 1)) = S - (n S - S) / (n - 1) = 0.
    rewards = np.random.default_rng(seed).normal(size=(n_steps, n_envs)).astype(np.float32)
    ends = np.zeros((n_steps, n_envs), bool)
    ends[-1] = True
    advantages, _ = leave_one_out_baseline(rewards, ends, np.ones_like(ends), gamma)
    np.testing.assert_allclose(advantages.sum(axis=1), 0.0, atol=1e-4)


def test_each_baseline_runs_its_estimator_on_what_it_reads() -> None:
    groups = np.where(KNOWN_MASK, np.arange(KNOWN_MASK.shape[1]) % 2, -1)
    values = np.linspace(-1.0, 1.0, KNOWN_REWARDS.size, dtype=np.float32).reshape(KNOWN_REWARDS.shape)
    expected = {
        "none": reward_to_go(KNOWN_REWARDS, KNOWN_ENDS, 0.9),
        "mean": batch_mean_baseline(KNOWN_REWARDS, KNOWN_ENDS, KNOWN_MASK, 0.9),
        "value": generalized_advantage(KNOWN_REWARDS, KNOWN_ENDS, values, 0.9, 0.8),
        "loo": leave_one_out_baseline(KNOWN_REWARDS, KNOWN_ENDS, KNOWN_MASK, 0.9, groups),
        "grpo": group_normalized_advantage(KNOWN_REWARDS, KNOWN_ENDS, KNOWN_MASK, 0.9, groups),
    }
    assert set(expected) == set(BASELINES)
    for baseline, (advantages, targets) in expected.items():
        got = estimate_advantages(
            baseline, KNOWN_REWARDS, KNOWN_ENDS, KNOWN_MASK, 0.9, values=values, gae_lambda=0.8, groups=groups
        )
        np.testing.assert_array_equal(got[0], advantages)
        np.testing.assert_array_equal(got[1], targets)


def test_bad_input_is_named() -> None:
    ends = np.ones((2, 1), bool)
    with pytest.raises(ValueError, match="needs the critic's values"):
        estimate_advantages("value", np.zeros((2, 1)), ends, ends, 0.9, gae_lambda=0.9)
    with pytest.raises(ValueError, match="values must have episode_ends' shape"):
        generalized_advantage(np.zeros((2, 1)), ends, np.zeros((3, 1)), 0.9, 0.9)
    with pytest.raises(ValueError, match="mask must have the rewards' shape"):
        batch_mean_baseline(np.zeros((2, 1)), ends, np.ones((2, 2), bool), 0.9)
    for estimator in (leave_one_out_baseline, group_normalized_advantage):
        with pytest.raises(ValueError, match="mask must have the rewards' shape"):
            estimator(np.zeros((2, 1)), ends, np.ones((2, 2), bool), 0.9)
        with pytest.raises(ValueError, match=r"groups must be integer labels of the rewards' shape \(2, 1\)"):
            estimator(np.zeros((2, 1)), ends, ends, 0.9, np.zeros((2, 2), np.int64))
        with pytest.raises(ValueError, match="groups must be integer labels"):
            estimator(np.zeros((2, 1)), ends, ends, 0.9, np.zeros((2, 1)))
        one_episode = np.array([[False], [True]])
        with pytest.raises(ValueError, match="groups must give every step of an episode the same label"):
            estimator(np.zeros((2, 1)), one_episode, ends, 0.9, np.array([[0], [1]]))
