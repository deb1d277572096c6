"""Returns-to-go and the batch of complete episodes, checked against hand-computed answers and plain loops."""

from __future__ import annotations

import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_reinforce import Reinforce
from sb3_reinforce.common.advantages import reward_to_go
from tests.envs import CoinLengthEnv, ScriptedEnv
from tests.helpers import batch_episodes, collect


def plain_returns(rewards: np.ndarray, gamma: float) -> np.ndarray:
    out, running = np.zeros(len(rewards)), 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def scripted_model(lengths: list[list[int]], n_episodes: int, gamma: float, **kwargs: object) -> Reinforce:
    env = DummyVecEnv([lambda spec=spec: ScriptedEnv(spec, **kwargs) for spec in lengths])  # type: ignore[misc]
    return Reinforce(
        "MlpPolicy",
        env,
        n_episodes=n_episodes,
        gamma=gamma,
        baseline="none",
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [8]},
    )


def test_returns_known_answer_two_envs() -> None:
    # env 0: episodes of 3 then 2 steps; env 1: 1 then 4 steps. Rewards r_t = 1 + t within each episode.
    model = scripted_model([[3, 2], [1, 4]], n_episodes=4, gamma=0.5)
    collect(model)
    buffer = model.rollout_buffer
    assert buffer.valid_len.tolist() == [5, 5]
    mask = buffer.valid_mask()
    returns = reward_to_go(buffer.rewards[: buffer.n_steps], buffer.episode_ends[: buffer.n_steps], 0.5)[0][mask]
    # Time-major flattening: row t holds (env 0, env 1).
    # env 0, episode 1: r = 1, 2, 3 -> G = 1 + .5*(2 + .5*3) = 2.75, 2 + 1.5 = 3.5, 3
    # env 0, episode 2: r = 1, 2 -> G = 2, 2
    # env 1, episode 1: r = 1 -> G = 1;  episode 2: r = 1, 2, 3, 4 -> 3.25, 4.5, 5, 4
    expected = np.array([[2.75, 1.0], [3.5, 3.25], [3.0, 4.5], [2.0, 5.0], [2.0, 4.0]])
    np.testing.assert_allclose(returns, expected.reshape(-1), rtol=1e-6)


@pytest.mark.parametrize("gamma", [0.0, 0.9, 1.0])
def test_returns_match_a_per_episode_loop(gamma: float) -> None:
    # Unequal quotas (3 envs, 7 episodes), unequal lengths, the last episode of each env ends on its last
    # counted step, and episodes of length 4 are truncated by a time limit.
    lengths = [[3, 6, 2], [1, 4, 5, 2], [7, 4]]
    model = scripted_model(lengths, n_episodes=7, gamma=gamma, truncate_at=4)
    collect(model)
    episodes = batch_episodes(model)
    assert len(episodes) == 7
    assert model.rollout_buffer.truncations, "the scripted batch should contain a truncated episode"
    buffer = model.rollout_buffer
    rows = buffer.n_steps
    returns = reward_to_go(buffer.rewards[:rows], buffer.episode_ends[:rows], gamma)[0]
    returns = returns[buffer.valid_mask()]
    # Rebuild the same time-major order from the per-episode loop.
    expected = np.zeros((buffer.n_steps, buffer.n_envs))
    for env in range(buffer.n_envs):
        start = 0
        for t in range(int(buffer.valid_len[env])):
            if buffer.episode_ends[t, env]:
                expected[start : t + 1, env] = plain_returns(buffer.rewards[start : t + 1, env], gamma)
                start = t + 1
    np.testing.assert_allclose(returns, expected[buffer.valid_mask()], rtol=1e-6)
    # Every counted episode is whole: observation t counts 0, 1, 2, ... and each episode is a new one.
    for observations, _, rewards in episodes:
        np.testing.assert_array_equal(observations[:, 1], np.arange(len(rewards)))
        assert len(set(observations[:, 0].tolist())) == 1


def test_an_env_whose_episodes_end_early_takes_the_next_episodes() -> None:
    # env 0's episodes last 1 step, env 1's 6. Episodes are dealt as they start: env 0 starts the 2nd at t=1 and
    # the 3rd at t=2, env 1 runs its single one to t=5. Fixed quotas of 2 each would have stepped 12 rows.
    model = scripted_model([[1], [6]], n_episodes=4, gamma=0.9)
    collect(model)
    buffer = model.rollout_buffer
    assert buffer.n_steps == 6
    assert buffer.valid_len.tolist() == [3, 6]
    assert len(batch_episodes(model)) == 4
    assert buffer.unused_fraction() == pytest.approx(3 / 12)


def test_batches_do_not_favour_short_episodes() -> None:
    # Episodes of 1 or 9 steps at even odds, return = length: the batch mean must average 5. Taking the first
    # 6 episodes to finish out of 4 envs would average about 3.8 (short ones end first). Over 1,500 batches the
    # mean's standard error is about 0.04; the bound is six of them.
    env = DummyVecEnv([CoinLengthEnv] * 4)
    model = Reinforce(
        "MlpPolicy", env, n_episodes=6, baseline="none", seed=0, device="cpu", policy_kwargs={"net_arch": [4]}
    )
    _, callback = model._setup_learn(10**9, None)
    means = []
    for _ in range(1500):
        assert model.collect_rollouts(env, callback, model.rollout_buffer)
        episodes = batch_episodes(model)
        assert len(episodes) == 6
        means.append(np.mean([len(rewards) for _, _, rewards in episodes]))
    assert abs(np.mean(means) - 5.0) < 0.25


def test_episodes_after_the_last_one_dealt_are_not_used() -> None:
    # env 0 finishes its single episode at once; env 1 takes 6 steps: env 0's steps 1..5 are wasted.
    model = scripted_model([[1], [6]], n_episodes=2, gamma=0.9)
    collect(model)
    buffer = model.rollout_buffer
    assert buffer.valid_len.tolist() == [1, 6]
    assert buffer.n_steps == 6
    assert buffer.unused_fraction() == pytest.approx(5 / 12)


def test_truncation_is_bootstrapped_with_the_critic_only_for_value_baseline() -> None:
    env = DummyVecEnv([lambda: ScriptedEnv([2], base=0.0, truncate_at=2, zero_reward=True)])
    model = Reinforce(
        "MlpPolicy",
        env,
        n_episodes=2,
        gamma=0.5,
        baseline="value",
        normalize_advantage=False,
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [8]},
    )
    collect(model)
    buffer = model.rollout_buffer
    assert len(buffer.truncations) == 2
    mask = buffer.valid_mask()
    values = np.zeros(int(mask.sum()), dtype=np.float32)
    import torch as th

    advantages, targets = model._advantages(th.as_tensor(values), mask)
    terminal = buffer.truncated_observations()
    with th.no_grad():
        v_terminal = model.policy.predict_values(th.as_tensor(terminal)).numpy().reshape(-1)
    # Zero rewards, V = 0 on the batch: G_1 = gamma * V(s_end), G_0 = gamma * G_1 per episode.
    expected = np.array(
        [[0.25 * v_terminal[0]], [0.5 * v_terminal[0]], [0.25 * v_terminal[1]], [0.5 * v_terminal[1]]]
    ).reshape(-1)
    assert np.abs(v_terminal).min() > 0
    np.testing.assert_allclose(targets, expected, rtol=1e-5)
    np.testing.assert_allclose(advantages, expected, rtol=1e-5)
