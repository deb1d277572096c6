"""Reinforce on a GPU: what A2C and PPO users get there (SB3's warning for an MLP), the torch collection path with
the numpy actor's reason, and models that move between devices. Skipped where torch sees no CUDA device."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.env_util import make_vec_env

from sb3_reinforce import GAERolloutBuffer, Reinforce
from tests.envs import SpaceEnv

pytestmark = pytest.mark.skipif(not th.cuda.is_available(), reason="needs a CUDA device")

TINY = {"net_arch": [16]}


def test_an_mlp_on_the_gpu_gets_sb3s_warning_and_collects_with_torch() -> None:
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    with pytest.warns(UserWarning, match="primarily intended to run on the CPU"):
        model = Reinforce("MlpPolicy", env, n_episodes=4, policy_kwargs=TINY, seed=0, device="auto")
    assert model.device.type == "cuda"
    assert model.fast_actor is None
    assert model.fast_actor_reason is not None
    assert "cpu" in model.fast_actor_reason.lower()
    model.learn(2_000)
    assert model._n_updates > 0
    assert all(parameter.device.type == "cuda" for parameter in model.policy.parameters())


def test_a_cnn_on_the_gpu_gets_no_warning() -> None:
    image = spaces.Box(0, 255, shape=(36, 36, 3), dtype=np.uint8)
    env = make_vec_env(lambda: SpaceEnv(image, spaces.Discrete(2)), n_envs=2, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model = Reinforce(
            "CnnPolicy",
            env,
            n_episodes=2,
            seed=0,
            device="cuda",
            policy_kwargs={"features_extractor_kwargs": {"features_dim": 16}},
        )
    model.learn(100)
    assert model._n_updates > 0


def test_a_model_trained_on_the_gpu_loads_on_the_cpu_with_the_same_actions(tmp_path: Path) -> None:
    env = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    model = Reinforce("MlpPolicy", env, n_episodes=2, policy_kwargs=TINY, seed=0, device="cuda").learn(1_000)
    model.save(tmp_path / "gpu")
    loaded = Reinforce.load(tmp_path / "gpu", device="cpu")
    assert loaded.fast_actor is not None, loaded.fast_actor_reason
    observations = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    np.testing.assert_allclose(
        loaded.predict(observations, deterministic=True)[0],
        model.predict(observations, deterministic=True)[0],
        rtol=1e-5,
        atol=1e-5,
    )


def test_ppo_with_the_gae_buffer_on_the_gpu_matches_sb3s_buffer_there() -> None:
    # Same device, same seed, same random stream: only the buffer differs (CUDA draws another stream than the CPU).
    def run(buffer_class: type[RolloutBuffer]) -> np.ndarray:
        env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
        model = PPO(
            "MlpPolicy",
            env,
            n_steps=64,
            batch_size=64,
            n_epochs=1,
            policy_kwargs=TINY,
            seed=0,
            device="cuda",
            rollout_buffer_class=buffer_class,
        )
        model.learn(128)
        return model.rollout_buffer.advantages.copy()

    np.testing.assert_allclose(run(GAERolloutBuffer), run(RolloutBuffer), rtol=1e-5, atol=1e-5)
