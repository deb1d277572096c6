"""zoo.agent_format: agents rebuilt without pickle from config.json + model.safetensors."""

from __future__ import annotations

import json
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.env_util import make_vec_env

from sb3_reinforce import Reinforce
from zoo.agent_format import load_agent, save_agent, space_from_json, space_to_json
from zoo.config import get_config
from zoo.errors import ZooError
from zoo.factories import make_model


def greedy(agent: Any, obs: np.ndarray) -> np.ndarray:
    return np.asarray(agent.predict(obs, deterministic=True)[0])


@pytest.mark.parametrize(
    "space",
    [
        spaces.Box(low=np.array([-1.0, -np.inf], np.float32), high=np.array([2.5, np.inf], np.float32)),
        spaces.Box(low=0, high=255, shape=(6, 5, 3), dtype=np.uint8),
        spaces.Box(low=-1.0, high=1.0, shape=(2, 3), dtype=np.float64),
        spaces.Discrete(5, start=-2),
        spaces.MultiDiscrete([3, 4], start=[1, -1]),
        spaces.MultiBinary(3),
        spaces.MultiBinary([2, 3]),
        spaces.Dict(OrderedDict(b=spaces.Discrete(2), a=spaces.Box(-1, 1, (3,), np.float32))),
    ],
)
def test_spaces_round_trip_through_strict_json(space: Any) -> None:
    data = json.loads(json.dumps(space_to_json(space), allow_nan=False))
    rebuilt: Any = space_from_json(data)
    assert rebuilt == space
    assert type(rebuilt) is type(space)
    if isinstance(space, spaces.Box):
        assert rebuilt.dtype == space.dtype
        np.testing.assert_array_equal(rebuilt.low, space.low)
        np.testing.assert_array_equal(rebuilt.high, space.high)
    if isinstance(space, spaces.Dict):
        assert list(rebuilt.spaces) == list(space.spaces)


@pytest.mark.parametrize("algo", ["ppo", "a2c"])
def test_sb3_algorithms_rebuild_without_pickle(algo: str, tmp_path: Path) -> None:
    env = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    if algo == "ppo":
        model: Any = PPO(
            "MlpPolicy",
            env,
            n_steps=16,
            batch_size=16,
            clip_range=0.15,
            learning_rate=3e-4,
            policy_kwargs={"net_arch": [8], "activation_fn": th.nn.ReLU},
            seed=0,
        )
    else:
        model = A2C("MlpPolicy", env, n_steps=4, policy_kwargs={"net_arch": [8]}, seed=0)
    config = save_agent(tmp_path, model, env_id="Pendulum-v1")
    rebuilt: Any
    rebuilt, _, stats = load_agent(tmp_path, device="cpu")
    assert type(rebuilt) is type(model)
    assert stats is None
    assert config["algo"] == algo
    assert config["policy"] == "MlpPolicy"
    obs = np.random.default_rng(1).normal(size=(16, 3)).astype(np.float32)
    np.testing.assert_array_equal(greedy(rebuilt, obs), greedy(model, obs))
    if algo == "ppo":
        assert config["hyperparams"]["clip_range"] == 0.15
        assert config["policy_kwargs"]["activation_fn"] == "relu"
        assert rebuilt.clip_range(1.0) == pytest.approx(0.15)
    else:
        assert config["policy_kwargs"]["optimizer_class"] == "rmsprop"


def test_gsde_agent_rebuilds_without_pickle(tmp_path: Path) -> None:
    env = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    model = Reinforce(
        "MlpPolicy", env, n_episodes=2, use_sde=True, sde_sample_freq=4, seed=0, device="cpu",
        policy_kwargs={"net_arch": [8], "log_std_init": -2.0, "squash_output": True},
    )  # fmt: skip
    config = save_agent(tmp_path, model, env_id="Pendulum-v1")
    rebuilt: Any
    rebuilt, _, _ = load_agent(tmp_path, device="cpu")
    assert config["hyperparams"]["use_sde"] is True
    assert rebuilt.use_sde
    assert rebuilt.sde_sample_freq == 4
    assert rebuilt.policy.squash_output
    obs = np.random.default_rng(1).normal(size=(16, 3)).astype(np.float32)
    np.testing.assert_array_equal(greedy(rebuilt, obs), greedy(model, obs))
    th.testing.assert_close(rebuilt.policy.log_std, model.policy.log_std)


def test_schedules_of_reinforce_rebuild_as_data(tmp_path: Path) -> None:
    run_config = get_config(
        "reinforce", "CartPole-v1", {"ent_coef": "lin_0.05", "vf_learning_rate": "lin_2e-3", "baseline": "value"}
    )
    built = make_model(run_config, make_vec_env("CartPole-v1", n_envs=2, seed=0), seed=0)
    config = save_agent(tmp_path, built, env_id="CartPole-v1")
    assert config["hyperparams"]["ent_coef"] == "lin_0.05"
    assert config["hyperparams"]["vf_learning_rate"] == "lin_0.002"
    rebuilt: Any
    rebuilt, _, _ = load_agent(tmp_path, device="cpu")
    assert rebuilt.ent_coef_schedule(0.5) == pytest.approx(0.025)
    assert rebuilt.vf_lr_schedule(0.5) == pytest.approx(1e-3)


def test_an_entropy_schedule_is_refused_for_sb3_algorithms() -> None:
    with pytest.raises(ZooError, match=r"ent_coef must be a number for ppo \(a schedule is Reinforce's\)"):
        get_config("ppo", "CartPole-v1", {"ent_coef": "lin_0.01"})


PACKAGED = sorted(path.parent for path in (Path(__file__).resolve().parents[1] / "hub_cards").glob("*/config.json"))


@pytest.mark.parametrize("folder", PACKAGED, ids=lambda folder: folder.name)
def test_packaged_agents_load_without_a_deprecation_warning(folder: Path) -> None:
    # Most config.json files (pinned by sha256) spell the hang guard max_episode_steps, its name before the rename;
    # agents packaged since spell it hang_guard_steps.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model: Any
        model, config, _ = load_agent(folder, device="cpu")
    hyperparams = config["hyperparams"]
    assert model.hang_guard_steps == hyperparams.get("hang_guard_steps", hyperparams.get("max_episode_steps"))
    assert model.vf_n_epochs == hyperparams["vf_n_epochs"]
    assert model.vf_update == "fit"


def test_an_agent_saved_in_the_old_spelling_loads_in_todays(tmp_path: Path) -> None:
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    model = Reinforce("MlpPolicy", env, n_episodes=2, vf_update="joint", hang_guard_steps=500, seed=0, device="cpu")
    config = save_agent(tmp_path, model, env_id="CartPole-v1")
    hyperparams = config["hyperparams"]
    # What the zoo wrote before vf_update and hang_guard_steps had their names.
    del hyperparams["vf_update"]
    hyperparams["vf_n_epochs"] = 0
    hyperparams["max_episode_steps"] = hyperparams.pop("hang_guard_steps")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rebuilt: Any
        rebuilt, _, _ = load_agent(tmp_path, device="cpu", config=config)
    assert rebuilt.vf_update == "joint"
    assert rebuilt.hang_guard_steps == 500
    obs = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    np.testing.assert_array_equal(greedy(rebuilt, obs), greedy(model, obs))
