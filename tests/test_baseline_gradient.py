"""The expected policy gradient of each baseline, computed exactly by enumerating every batch of a tiny MDP.

The leave-one-out baseline must leave the expected gradient of REINFORCE unchanged, with and without same-start
groups; the baselines that use an episode's own return (the batch mean, GRPO) must not, by a margin far above the
float32 rounding these sums carry, so the comparison can fail. A Monte Carlo run through Reinforce's own
collection, with and without groups, must agree with the enumeration. The exact variance of each estimator is
printed (``pytest -s``).

The MDP: states 0 and 1, the start drawn with probabilities ``START``; action 1 ends the episode, action 0 moves to
the other state; ``reward[s, a]`` follows each step; a time limit cuts the episode after ``horizon`` steps. So the
episodes have 1 to ``horizon`` steps, and at step 2 of a long episode the others of its batch have often ended:
the case where loo's baseline is 0. The policy is a linear softmax over the features ``[onehot(s), 1]``.
"""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from numpy.typing import NDArray
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_reinforce import Reinforce
from sb3_reinforce.common.advantages import (
    group_normalized_advantage,
    leave_one_out_baseline,
    reward_to_go,
)
from tests import reference

START = np.array([0.4, 0.6])
REWARD = np.array([[1.0, 0.0], [-0.5, 2.0]])
# Rewards of 10 in state 1 and at most 1 in state 0: the start state decides most of the return.
START_DECIDES = np.array([[0.0, 1.0], [10.0, 10.0]])
THETA = np.array([[0.5, -0.3, 0.1], [-0.2, 0.4, -0.1]])  # (actions, features): pi(1 | s) is 0.31 and 0.67


class Episode(NamedTuple):
    probability: float  # given its start state
    states: NDArray[np.int64]
    actions: NDArray[np.int64]
    rewards: NDArray[np.float64]


def features(states: NDArray[np.int64]) -> NDArray[np.float64]:
    return np.hstack([np.eye(2)[states], np.ones((len(states), 1))])


def episodes_from(
    start: int, theta: NDArray[np.float64], horizon: int, reward: NDArray[np.float64] = REWARD
) -> list[Episode]:
    """Every episode from ``start``, with its probability under the policy."""
    found: list[Episode] = []

    def extend(states: list[int], actions: list[int], probability: float) -> None:
        state = states[-1]
        pi = reference.policy_probabilities(theta, features(np.array([state])))[0]
        for action in (0, 1):
            taken = [*actions, action]
            if action == 1 or len(taken) == horizon:
                rewards = reward[states, taken]
                found.append(Episode(probability * pi[action], np.array(states), np.array(taken), rewards))
            else:
                extend([*states, 1 - state], taken, probability * pi[action])

    extend([start], [], 1.0)
    return found


class Batches(NamedTuple):
    """Every batch of episodes laid out as one time-major grid, one episode per column (padded with masked rows)."""

    probability: NDArray[np.float64]  # (batches,)
    rewards: NDArray[np.float32]  # (horizon, columns)
    ends: NDArray[np.bool_]
    mask: NDArray[np.bool_]
    groups: NDArray[np.int64]  # the batch's index: each batch is compared within itself
    states: NDArray[np.int64]  # 0 on padding
    scores: NDArray[np.float64]  # (horizon, columns, actions, features), 0 on padding
    per_batch: int


def lay_out(batches: list[tuple[float, list[Episode]]], theta: NDArray[np.float64], horizon: int) -> Batches:
    per_batch = len(batches[0][1])
    columns = len(batches) * per_batch
    rewards = np.zeros((horizon, columns), np.float32)
    ends = np.ones((horizon, columns), bool)  # a padded row is a masked one-step episode
    mask = np.zeros((horizon, columns), bool)
    groups = np.full((horizon, columns), -1, np.int64)
    states = np.zeros((horizon, columns), np.int64)
    scores = np.zeros((horizon, columns, *theta.shape))
    for index, (_, members) in enumerate(batches):
        for offset, episode in enumerate(members):
            column, length = index * per_batch + offset, len(episode.actions)
            rewards[:length, column] = episode.rewards
            ends[: length - 1, column] = False
            mask[:length, column] = True
            groups[:length, column] = index
            states[:length, column] = episode.states
            scores[:length, column] = reference.score(theta, features(episode.states), episode.actions)
    probability = np.array([weight for weight, _ in batches])
    return Batches(probability, rewards, ends, mask, groups, states, scores, per_batch)


def independent_batches(
    size: int, theta: NDArray[np.float64], horizon: int, reward: NDArray[np.float64] = REWARD
) -> Batches:
    """Every batch of ``size`` independent episodes, each from a start drawn from ``START``."""
    pool = [(START[s] * e.probability, e) for s in (0, 1) for e in episodes_from(s, theta, horizon, reward)]
    batches = [
        (float(np.prod([weight for weight, _ in chosen])), [episode for _, episode in chosen])
        for chosen in itertools.product(pool, repeat=size)
    ]
    return lay_out(batches, theta, horizon)


def group_batches(size: int, theta: NDArray[np.float64], horizon: int, reward: NDArray[np.float64] = REWARD) -> Batches:
    """Every same-start group of ``size`` episodes: one start drawn from ``START``, then independent episodes."""
    batches = []
    for start in (0, 1):
        pool = episodes_from(start, theta, horizon, reward)
        for chosen in itertools.product(pool, repeat=size):
            batches.append((START[start] * float(np.prod([e.probability for e in chosen])), list(chosen)))
    return lay_out(batches, theta, horizon)


def per_batch_gradients(batches: Batches, advantages: NDArray[np.float32]) -> NDArray[np.float64]:
    """``g = 1/n * sum_j sum_k A_k^j * grad log pi(a_k^j | s_k^j)`` of each batch: ``(batches, actions, features)``."""
    per_column = np.einsum("tc,tcaf->caf", np.where(batches.mask, advantages, 0.0), batches.scores)
    return per_column.reshape(-1, batches.per_batch, *per_column.shape[1:]).mean(axis=1)


def expectation(batches: Batches, advantages: NDArray[np.float32]) -> NDArray[np.float64]:
    return np.einsum("b,baf->af", batches.probability, per_batch_gradients(batches, advantages))


def variance(batches: Batches, advantages: NDArray[np.float32]) -> float:
    """``E ||g - E g||^2``, the trace of the estimator's covariance."""
    gradients = per_batch_gradients(batches, advantages)
    mean = np.einsum("b,baf->af", batches.probability, gradients)
    return float(np.einsum("b,b->", batches.probability, ((gradients - mean) ** 2).sum(axis=(1, 2))))


def estimate(name: str, batches: Batches, gamma: float) -> NDArray[np.float32]:
    """The advantages of every batch with one baseline (each batch is its own group)."""
    if name == "none":
        return reward_to_go(batches.rewards, batches.ends, gamma)[0]
    if name == "loo":
        return leave_one_out_baseline(batches.rewards, batches.ends, batches.mask, gamma, batches.groups)[0]
    if name == "grpo":
        return group_normalized_advantage(batches.rewards, batches.ends, batches.mask, gamma, batches.groups)[0]
    returns = reward_to_go(batches.rewards, batches.ends, gamma)[0]
    if name == "mean":  # the batch mean over all its steps, the episode's own included (batch_mean_baseline)
        labels = batches.groups[batches.mask]
        sums = np.bincount(labels, weights=returns[batches.mask])
        mean = sums / np.bincount(labels)
        return np.where(batches.mask, returns - mean[np.maximum(batches.groups, 0)], 0.0).astype(np.float32)
    if name == "centred":  # the group mean at step k, the episode's own return included (GRPO's numerator)
        counted = np.where(batches.mask, returns, 0.0)
        running_sum = counted.reshape(len(counted), -1, batches.per_batch).sum(axis=2)
        running = batches.mask.reshape(len(counted), -1, batches.per_batch).sum(axis=2)
        mean = np.repeat(running_sum / np.maximum(running, 1), batches.per_batch, axis=1)
        return np.where(batches.mask, returns - mean, 0.0).astype(np.float32)
    raise AssertionError(name)


def exact_gradient(theta: NDArray[np.float64], horizon: int) -> NDArray[np.float64]:
    """``grad J`` for ``J = E[sum_t r_t]``, by autograd through the probabilities of every episode: no score
    function involved."""
    weights = th.tensor(theta, requires_grad=True)
    objective = th.zeros((), dtype=th.float64)
    for start in (0, 1):
        for episode in episodes_from(start, theta, horizon):
            logits = th.tensor(features(episode.states)) @ weights.T
            log_p = th.log_softmax(logits, dim=1)[th.arange(len(episode.actions)), th.tensor(episode.actions)].sum()
            objective = objective + START[start] * th.exp(log_p) * float(episode.rewards.sum())
    objective.backward()
    assert weights.grad is not None
    return weights.grad.numpy()


# Float32 advantages summed over a few thousand float64 terms: the rounding stays far below this.
TOLERANCE = 1e-5


@pytest.mark.parametrize("gamma", [1.0, 0.9])
@pytest.mark.parametrize("grouped", [False, True], ids=["independent", "same-start group"])
def test_leave_one_out_keeps_the_expected_gradient(gamma: float, grouped: bool) -> None:
    batches = (group_batches if grouped else independent_batches)(3, THETA, horizon=3)
    plain = expectation(batches, estimate("none", batches, gamma))
    np.testing.assert_allclose(expectation(batches, estimate("loo", batches, gamma)), plain, atol=TOLERANCE)
    if gamma == 1.0:
        # REINFORCE itself against the gradient of J computed with no score function.
        np.testing.assert_allclose(plain, exact_gradient(THETA, horizon=3), atol=TOLERANCE)
    # The same sums detect the bias of a baseline that sees the episode's own return.
    for biased in ("mean", "grpo"):
        assert np.abs(expectation(batches, estimate(biased, batches, gamma)) - plain).max() > 100 * TOLERANCE, biased


def test_the_runs_where_no_other_episode_reaches_a_step_are_enumerated() -> None:
    # The case loo handles with a baseline of 0 must be in the batches above, with positive probability.
    batches = independent_batches(3, THETA, horizon=3)
    alone = batches.mask[2].reshape(-1, 3).sum(axis=1) == 1
    assert batches.probability[alone].sum() > 0.05


def test_centring_on_a_mean_that_includes_the_episode_shrinks_the_gradient_by_g_minus_one_over_g() -> None:
    # One-step episodes (a bandit): K = G - 1 others at every step, so the factor is exactly (G - 1) / G.
    size = 3
    batches = group_batches(size, THETA, horizon=1)
    plain = expectation(batches, estimate("none", batches, 1.0))
    centred = expectation(batches, estimate("centred", batches, 1.0))
    np.testing.assert_allclose(centred, (size - 1) / size * plain, atol=TOLERANCE)
    np.testing.assert_allclose(expectation(batches, estimate("loo", batches, 1.0)), plain, atol=TOLERANCE)


def oracle_value_advantages(
    batches: Batches, gamma: float, horizon: int, reward: NDArray[np.float64]
) -> NDArray[np.float32]:
    """``G_k - V_k(s_k)`` with the exact value of state ``s`` at step ``k`` (the time limit makes it depend on
    ``k``): the baseline of a perfect critic."""
    pi = reference.policy_probabilities(THETA, features(np.array([0, 1])))
    value = np.zeros((horizon + 1, 2))
    for k in reversed(range(horizon)):
        for s in (0, 1):
            moved = 0.0 if k + 1 == horizon else gamma * value[k + 1, 1 - s]
            value[k, s] = pi[s, 1] * reward[s, 1] + pi[s, 0] * (reward[s, 0] + moved)
    returns = reward_to_go(batches.rewards, batches.ends, gamma)[0]
    baseline = value[np.arange(horizon)[:, None], batches.states]
    return np.where(batches.mask, returns - baseline, 0.0).astype(np.float32)


def variance_table(reward: NDArray[np.float64], gamma: float, horizon: int, size: int) -> dict[str, float]:
    independent = independent_batches(size, THETA, horizon, reward)
    grouped = group_batches(size, THETA, horizon, reward)
    return {
        "none": variance(independent, estimate("none", independent, gamma)),
        "mean (biased)": variance(independent, estimate("mean", independent, gamma)),
        "value (exact V)": variance(independent, oracle_value_advantages(independent, gamma, horizon, reward)),
        "loo": variance(independent, estimate("loo", independent, gamma)),
        "none, same start": variance(grouped, estimate("none", grouped, gamma)),
        "loo, same start": variance(grouped, estimate("loo", grouped, gamma)),
    }


VARIANCE_CASES = {"mean return near 0": REWARD, "common offset": REWARD + 2.0, "the start decides": START_DECIDES}


@pytest.mark.parametrize("case", VARIANCE_CASES)
def test_exact_variance_of_each_baseline(case: str) -> None:
    gamma, horizon, size = 0.99, 3, 3
    table = variance_table(VARIANCE_CASES[case], gamma, horizon, size)
    # Shown with pytest -s (and on failure); docs/guide/algorithm.md quotes them.
    print(f"\n{case}: E||g - E g||^2 over batches of {size} episodes, gamma={gamma} (exact)")
    for name, value in table.items():
        print(f"  {name:18s} {value:8.3f}")
    if case == "mean return near 0":
        # Nothing shared to remove: loo only adds the variance of its mean of K = 2 returns.
        assert table["loo"] > table["none"]
        return
    # A baseline pays when the returns share a large part; a perfect critic still does better than 2 peers.
    assert table["loo"] < table["none"] / 2
    assert table["value (exact V)"] < table["loo"]
    if case == "the start decides":
        # Comparing only episodes from the same start removes the start's share of the variance.
        assert table["loo, same start"] < 0.75 * table["loo"]
    else:
        assert table["loo, same start"] > table["loo"]


class TwoStateEnv(gym.Env[np.ndarray, int]):
    """The MDP above as an env: the observation is ``onehot(s)``, the start is drawn from its seeded np_random."""

    observation_space = spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, horizon: int = 3) -> None:
        self.horizon = horizon
        self.state = 0
        self.t = 0

    def _obs(self) -> np.ndarray:
        return np.eye(2, dtype=np.float32)[self.state]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.state, self.t = int(self.np_random.choice(2, p=START)), 0
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        reward = float(REWARD[self.state, action])
        self.t += 1
        terminated = action == 1
        if not terminated:
            self.state = 1 - self.state
        return self._obs(), reward, terminated, not terminated and self.t >= self.horizon, {}


@pytest.mark.parametrize(
    ("group_size", "n_envs", "n_episodes"), [(1, 2, 3), (3, 3, 6)], ids=["dealt as they start", "same-start groups"]
)
def test_the_collection_and_update_inputs_keep_the_expected_gradient(
    group_size: int, n_envs: int, n_episodes: int
) -> None:
    # Monte Carlo through Reinforce's own collection (dealing, seeded groups, rounds) and its advantages: the mean
    # of loo's gradient estimates must sit within 4.5 standard errors of the enumerated expectation.
    gamma, collections = 0.9, 1000
    model = Reinforce(
        "MlpPolicy",
        DummyVecEnv([TwoStateEnv] * n_envs),
        baseline="loo",
        group_size=group_size,
        n_episodes=n_episodes,
        gamma=gamma,
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": []},
    )
    with th.no_grad():
        model.policy.action_net.weight.copy_(th.as_tensor(THETA[:, :2]))
        model.policy.action_net.bias.copy_(th.as_tensor(THETA[:, 2]))
    _, callback = model._setup_learn(10**9)
    assert model.env is not None
    estimates: dict[str, list[NDArray[np.float64]]] = {"loo": [], "none": [], "grpo": []}
    for _ in range(collections):
        assert model.collect_rollouts(model.env, callback, model.rollout_buffer)
        buffer = model.rollout_buffer
        mask = buffer.valid_mask()
        observations = np.asarray(buffer.flat_observations(mask), dtype=np.float64)
        scores = reference.score(
            THETA, np.hstack([observations, np.ones((len(observations), 1))]), buffer.actions[: buffer.n_steps][mask]
        )
        rewards, ends = buffer.rewards[: buffer.n_steps], buffer.episode_ends[: buffer.n_steps]
        groups = buffer.episode_group[: buffer.n_steps]
        advantages = {
            "loo": model._advantages(th.zeros(0), mask)[0],
            "none": reward_to_go(rewards, ends, gamma)[0][mask],
            "grpo": group_normalized_advantage(rewards, ends, mask, gamma, groups)[0][mask],
        }
        for name, advantage in advantages.items():
            estimates[name].append(np.einsum("b,baf->af", advantage, scores) / n_episodes)

    # Each counted episode, on its own, is an episode of the policy from START: the expectation is one episode's.
    single = independent_batches(1, THETA, horizon=3)
    exact = expectation(single, estimate("none", single, gamma))
    z = {}
    for name, values in estimates.items():
        sample = np.stack(values)
        standard_error = sample.std(axis=0, ddof=1) / np.sqrt(collections)
        assert standard_error.max() < 0.05 * np.abs(exact).max(), "too few collections for a sharp test"
        z[name] = np.abs((sample.mean(axis=0) - exact) / standard_error).max()
    assert z["loo"] < 4.5, z
    assert z["none"] < 4.5, z
    assert z["grpo"] > 10, z  # the same test rejects a biased estimator
