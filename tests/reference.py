"""The reference REINFORCE: a linear softmax policy whose gradient is written in closed form, no autodiff.

This module is the oracle the library is tested against, so it depends on numpy and a Gymnasium env only.
With ``theta[a, i]`` the weight on feature ``i`` for action ``a``, the policy is
``pi(a | s) = softmax(theta @ s)[a]`` and its score has a closed form:

    d/d theta[b, i]  log pi(a | s)  =  (1[b == a] - pi(b | s)) * s[i]

Taking action ``a`` pushes ``a``'s weights towards ``s`` and every other action's away, in proportion to how
likely each was. The gradient estimate of one update over a batch of ``E`` episodes is

    g = 1/E * sum_episodes sum_t  (G_t - b) * (onehot(a_t) - pi(. | s_t)) outer s_t

with the reward-to-go ``G_t = r_t + gamma * G_{t+1}`` (an action is credited only with what followed it) and the
baseline ``b`` the mean of all ``G_t`` in the batch (any constant leaves the expected gradient unchanged, since
the expected score is zero). The update is ASCENT: ``theta += alpha * g``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray


def policy_probabilities(theta: NDArray[np.float64], states: NDArray[np.float64]) -> NDArray[np.float64]:
    """``pi(. | s)`` for a ``(B, features)`` batch: ``(B, actions)`` rows that sum to one."""
    scores = states @ theta.T
    # Subtracting the row maximum keeps exp from overflowing; softmax is invariant to it.
    scores = scores - scores.max(axis=1, keepdims=True)
    exponentials = np.exp(scores)
    return exponentials / exponentials.sum(axis=1, keepdims=True)


def returns_to_go(rewards: NDArray[np.float64], gamma: float) -> NDArray[np.float64]:
    """``G_t = r_t + gamma * G_{t+1}`` for one episode, ``G_T = 0``; one backward pass."""
    out = np.zeros(len(rewards), dtype=np.float64)
    running = 0.0
    for step in range(len(rewards) - 1, -1, -1):
        running = float(rewards[step]) + gamma * running
        out[step] = running
    return out


def score(theta: NDArray[np.float64], states: NDArray[np.float64], actions: NDArray[np.int64]) -> NDArray[np.float64]:
    """Closed-form ``d log pi(a_t | s_t) / d theta`` for each step: ``(B, actions, features)``."""
    probabilities = policy_probabilities(theta, states)
    indicator = np.zeros_like(probabilities)
    indicator[np.arange(len(actions)), actions] = 1.0
    return (indicator - probabilities)[:, :, None] * states[:, None, :]


def batch_gradient(
    theta: NDArray[np.float64],
    episodes: list[tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]],
    gamma: float,
) -> NDArray[np.float64]:
    """The policy-gradient estimate ``g`` above for ``[(states, actions, rewards), ...]`` of whole episodes."""
    states = np.concatenate([episode[0] for episode in episodes])
    actions = np.concatenate([episode[1] for episode in episodes])
    returns = np.concatenate([returns_to_go(episode[2], gamma) for episode in episodes])
    advantages = returns - returns.mean()
    return np.einsum("b,bij->ij", advantages, score(theta, states, actions)) / len(episodes)


def run_episode(
    env: gym.Env[Any, Any], theta: NDArray[np.float64], rng: np.random.Generator, max_steps: int = 10_000
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """One episode with actions sampled from ``pi``. The return exists only once the episode has ended, which
    is why this method needs episodes that end (or are cut, here at ``max_steps``)."""
    states, actions, rewards = [], [], []
    state, _ = env.reset(seed=int(rng.integers(2**31)))
    for _ in range(max_steps):
        features = np.asarray(state, dtype=np.float64).reshape(-1)
        probabilities = policy_probabilities(theta, features[None, :])[0]
        action = int(rng.choice(len(probabilities), p=probabilities))
        state, reward, terminated, truncated, _ = env.step(action)
        states.append(features)
        actions.append(action)
        rewards.append(float(reward))
        if terminated or truncated:
            break
    return np.array(states), np.array(actions, dtype=np.int64), np.array(rewards)


def train(
    env: gym.Env[Any, Any],
    episodes: int = 2_000,
    batch_episodes: int = 10,
    alpha: float = 0.01,
    gamma: float = 0.99,
    seed: int = 0,
) -> NDArray[np.float64]:
    """Train ``theta`` (``(actions, features)``, starting at zero) on a Box-observation, Discrete-action env.

    Batching matters for more than throughput: a single-episode gradient is noisy enough that the policy
    random-walks.
    """
    if not isinstance(env.observation_space, gym.spaces.Box) or not isinstance(env.action_space, gym.spaces.Discrete):
        raise TypeError("the reference needs a Box observation space and a Discrete action space")
    rng = np.random.default_rng(seed)
    theta = np.zeros((int(env.action_space.n), int(np.prod(env.observation_space.shape))))
    for _ in range(episodes // batch_episodes):
        batch = [run_episode(env, theta, rng) for _ in range(batch_episodes)]
        theta += alpha * batch_gradient(theta, batch, gamma)
    return theta
