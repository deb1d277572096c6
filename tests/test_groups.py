"""Same-start groups (``group_size``): rounds of groups dealt over the envs, one seed per group, the check that
the env's start really follows its seed, and the parameters kept by save/load.

The expected gradient with groups is checked in tests/test_baseline_gradient.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecNormalize

from sb3_reinforce import Reinforce
from sb3_reinforce.common.advantages import estimate_advantages
from tests.helpers import assert_unchanged, collect, policy_state

TINY = {"net_arch": [8]}


def grouped_model(env: Any, group_size: int = 2, n_episodes: int = 8, **kwargs: Any) -> Reinforce:
    return Reinforce(
        "MlpPolicy",
        env,
        baseline=kwargs.pop("baseline", "loo"),
        group_size=group_size,
        n_episodes=n_episodes,
        seed=0,
        device="cpu",
        policy_kwargs=TINY,
        **kwargs,
    )


def counted_episodes(model: Reinforce) -> list[tuple[int, int, int, int]]:
    """``(group, env, first row, last row)`` of each counted episode of the last collection."""
    buffer = model.rollout_buffer
    groups = buffer.episode_group[: buffer.n_steps]
    found = []
    for env in range(buffer.n_envs):
        first = None
        for t in range(buffer.n_steps):
            if groups[t, env] >= 0 and first is None:
                first = t
            if first is not None and buffer.episode_ends[t, env]:
                found.append((int(groups[t, env]), env, first, t))
                first = None
    return found


def first_observations(model: Reinforce, episodes: list[tuple[int, int, int, int]]) -> dict[int, list[np.ndarray]]:
    observations = model.rollout_buffer.observations
    assert isinstance(observations, np.ndarray)
    by_group: dict[int, list[np.ndarray]] = {}
    for group, env, first, _ in episodes:
        by_group.setdefault(group, []).append(observations[first, env])
    return by_group


@pytest.mark.parametrize(("n_envs", "group_size", "n_episodes"), [(4, 2, 8), (4, 4, 12), (2, 2, 6)])
def test_groups_are_dealt_in_rounds_of_members_that_start_together(
    n_envs: int, group_size: int, n_episodes: int
) -> None:
    model = grouped_model(make_vec_env("CartPole-v1", n_envs=n_envs, seed=1), group_size, n_episodes)
    collect(model)
    buffer = model.rollout_buffer
    episodes = counted_episodes(model)
    assert len(episodes) == n_episodes
    by_group = first_observations(model, episodes)
    assert sorted(by_group) == list(range(n_episodes // group_size))
    for group, starts in by_group.items():
        assert len(starts) == group_size
        for start in starts[1:]:
            np.testing.assert_array_equal(start, starts[0], err_msg=f"group {group}")
    # One seed per group: different groups start apart.
    assert len({tuple(starts[0]) for starts in by_group.values()}) == len(by_group)
    # A round's members are one slot of group_size consecutive envs, and all start on the round's first row.
    for group in by_group:
        rows_and_envs = [(env // group_size, first) for g, env, first, _ in episodes if g == group]
        assert len(set(rows_and_envs)) == 1, rows_and_envs
    round_starts = sorted({first for _, _, first, _ in episodes})
    assert round_starts[0] == 0
    assert len(round_starts) == -(-n_episodes // n_envs)
    for start in round_starts[1:]:
        # The reset between rounds ends whatever every env was running, and the round starts after the last of
        # the previous round's episodes ended.
        assert buffer.episode_ends[start - 1].all()
        assert max(last for _, _, first, last in episodes if first < start) == start - 1
    mask = buffer.valid_mask()
    assert mask.sum() == sum(last - first + 1 for *_, first, last in episodes)
    assert buffer.unused_fraction() == pytest.approx(1 - mask.sum() / mask.size)


def test_episode_groups_reach_the_estimator() -> None:
    # The update's loo advantages are the estimator's with the buffer's groups, and differ from a comparison over
    # the whole batch: the groups reach it and matter.
    model = grouped_model(make_vec_env("CartPole-v1", n_envs=4, seed=2))
    collect(model)
    buffer = model.rollout_buffer
    mask = buffer.valid_mask()
    advantages, _ = model._advantages(th.zeros(0), mask)
    grid = (buffer.rewards[: buffer.n_steps], buffer.episode_ends[: buffer.n_steps], mask, model.gamma)
    grouped, _ = estimate_advantages(model.baseline, *grid, groups=buffer.episode_group[: buffer.n_steps])
    whole_batch, _ = estimate_advantages(model.baseline, *grid)
    np.testing.assert_array_equal(advantages, grouped[mask])
    assert not np.allclose(advantages, whole_batch[mask])


class UnseededStartEnv(gym.Env[np.ndarray, int]):
    """Starts from its own generator, which reset(seed=...) does not touch: members of a group start apart."""

    observation_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
    action_space = spaces.Discrete(2)
    instances = 0

    def __init__(self) -> None:
        UnseededStartEnv.instances += 1
        self.own = np.random.default_rng(UnseededStartEnv.instances)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self.own.uniform(-1, 1, size=1).astype(np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.zeros(1, dtype=np.float32), 1.0, self.t >= 3, False, {}


def test_an_env_whose_start_ignores_the_seed_is_refused_before_any_update() -> None:
    model = grouped_model(DummyVecEnv([UnseededStartEnv] * 4), n_episodes=4)
    before = policy_state(model)
    with pytest.raises(ValueError, match=r"^group_size=2 needs an env whose start is fixed by reset\(seed=\.\.\.\): "):
        model.learn(100)
    assert_unchanged(model, before)
    assert model._n_updates == 0


def test_an_env_that_starts_equal_only_in_the_first_round_is_refused_in_the_second() -> None:
    class CountingEnv(UnseededStartEnv):
        """Its start is the number of resets it has had: equal until members have run different episodes."""

        def __init__(self) -> None:
            super().__init__()
            self.resets = 0
            # Lengths 1 and 3: the short one's env auto-resets twice more while the round waits on the long one.
            self.length = 1 + 2 * (UnseededStartEnv.instances % 2)

        def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
            super().reset(seed=seed)
            self.resets += 1
            return np.array([self.resets / 100], dtype=np.float32), {}

        def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
            self.t += 1
            return np.zeros(1, dtype=np.float32), 1.0, self.t >= self.length, False, {}

    model = grouped_model(DummyVecEnv([CountingEnv] * 2), n_episodes=4)
    with pytest.raises(ValueError, match="envs 0 and 1, reset with one seed, start from different observations"):
        collect(model)
    assert model.num_timesteps == 2 * 3  # the first round ran: 3 steps of 2 envs


def test_subprocess_envs_and_vec_normalize_keep_groups_together() -> None:
    env = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=3, vec_env_cls=SubprocVecEnv))
    try:
        model = grouped_model(env, n_episodes=4, baseline="grpo")
        collect(model)
        by_group = first_observations(model, counted_episodes(model))
        assert len(by_group) == 2
        for starts in by_group.values():
            np.testing.assert_array_equal(starts[1], starts[0])
        model.learn(300)
        assert model._n_updates >= 2
    finally:
        env.close()


def test_same_seed_same_parameters_and_save_load_keeps_the_groups(tmp_path: Path) -> None:
    def run() -> Reinforce:
        return grouped_model(make_vec_env("CartPole-v1", n_envs=2, seed=4), n_episodes=4, baseline="grpo").learn(400)

    first, second = run(), run()
    for (key, a), b in zip(first.policy.state_dict().items(), second.policy.state_dict().values(), strict=True):
        th.testing.assert_close(a, b, rtol=0, atol=0, msg=key)
    first.save(tmp_path / "model")
    loaded = Reinforce.load(tmp_path / "model", env=make_vec_env("CartPole-v1", n_envs=4, seed=5), device="cpu")
    assert (loaded.baseline, loaded.group_size) == ("grpo", 2)
    loaded.learn(200, reset_num_timesteps=False)
    assert len(first_observations(loaded, counted_episodes(loaded))) == 2
    with pytest.raises(ValueError, match=r"group_size=2 needs a number of envs that it divides .*, got n_envs=3$"):
        Reinforce.load(tmp_path / "model", env=make_vec_env("CartPole-v1", n_envs=3), device="cpu")
