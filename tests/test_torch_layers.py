"""GridCNN, the MinAtar paper's trunk for channels-last grids: a hand-computed forward pass, every VecEnv, save and
load, and SB3's own A2C and PPO through policy_kwargs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from sb3_reinforce import GridCNN, GridCnnPolicy, Reinforce
from tests.envs import SpaceEnv

GRID = spaces.Box(0, 1, (4, 5, 2), bool)  # MinAtar's form: 0/1 object channels, channels last, bool


def test_the_forward_pass_is_the_hand_computed_one() -> None:
    """One filter of ones and a bias, one linear unit: every output is computed here by hand from the grid."""
    extractor = GridCNN(GRID, features_dim=1, filters=1)
    with th.no_grad():
        conv, linear = extractor.conv[0], extractor.linear[0]
        conv.weight.zero_()
        conv.weight[0, 1] = 1.0  # the filter reads channel 1 only
        conv.bias.fill_(-2.0)
        linear.weight.fill_(1.0)
        linear.bias.fill_(0.5)
    grid = np.zeros((4, 5, 2), dtype=bool)
    grid[0:3, 0:3, 1] = True  # a 3x3 block of channel 1: the top-left window holds 9 ones, its neighbours fewer
    grid[3, 4, 0] = True  # channel 0 is not read
    # By hand: each 3x3 window's count of channel-1 ones, minus 2, through a ReLU, summed, plus 0.5, through a ReLU.
    windows = [grid[r : r + 3, c : c + 3, 1].sum() for r in range(2) for c in range(3)]
    expected = max(sum(max(count - 2.0, 0.0) for count in windows) + 0.5, 0.0)
    assert windows == [9, 6, 3, 6, 4, 2]
    features = extractor(th.as_tensor(grid[None]))
    assert features.shape == (1, 1)
    assert features.item() == pytest.approx(expected)  # 7 + 4 + 1 + 4 + 2 + 0 + 0.5 = 18.5


@pytest.mark.parametrize("space", [spaces.Box(0, 1, (3, 2, 4), np.float32), spaces.Discrete(3)], ids=str)
def test_a_space_it_cannot_read_is_refused(space: spaces.Space) -> None:
    with pytest.raises(ValueError, match="GridCNN"):
        GridCNN(space)


@pytest.mark.parametrize("vec_env_cls", [DummyVecEnv, SubprocVecEnv], ids=lambda cls: cls.__name__)
def test_reinforce_learns_on_a_grid_on_every_vec_env_and_saves(vec_env_cls: type, tmp_path: Path) -> None:
    env = make_vec_env(lambda: SpaceEnv(GRID, spaces.Discrete(3)), n_envs=2, vec_env_cls=vec_env_cls, seed=0)
    model = Reinforce("GridCnnPolicy", env, n_episodes=4, seed=0, baseline="value")
    assert isinstance(model.policy, GridCnnPolicy)
    assert isinstance(model.policy.features_extractor, GridCNN)
    model.learn(200)
    assert model.rollout_buffer.observations.dtype == np.bool_  # the space's dtype, never assumed float32
    obs = env.reset()
    actions, _ = model.predict(obs, deterministic=True)
    model.save(tmp_path / "grid")
    loaded = Reinforce.load(tmp_path / "grid", device="cpu")
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], actions)
    env.close()


@pytest.mark.parametrize("algo", [A2C, PPO], ids=lambda cls: cls.__name__)
def test_sb3s_own_algorithms_take_it_through_policy_kwargs(algo: type, tmp_path: Path) -> None:
    env = make_vec_env(lambda: SpaceEnv(GRID, spaces.Discrete(3)), n_envs=2, seed=0)
    kwargs = {"n_steps": 16} | ({"batch_size": 16, "n_epochs": 1} if algo is PPO else {})
    model = algo("MlpPolicy", env, policy_kwargs={"features_extractor_class": GridCNN}, seed=0, **kwargs)
    assert isinstance(model.policy.features_extractor, GridCNN)
    model.learn(64)
    model.save(tmp_path / "grid")
    assert isinstance(algo.load(tmp_path / "grid", device="cpu").policy.features_extractor, GridCNN)
