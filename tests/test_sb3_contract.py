"""What SB3's own A2C and PPO give their users, checked on Reinforce beside them: each case runs on all three, so
a case that does not hold for SB3's algorithms is a wrong case, not a finding."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import Logger, configure

from sb3_reinforce import Reinforce
from tests.envs import SpaceEnv

TINY = {"net_arch": [8]}
# Per algorithm, what makes one small update: SB3's count steps, Reinforce's episodes.
SMALL: dict[type[BaseAlgorithm], dict[str, Any]] = {
    A2C: {"n_steps": 8},
    PPO: {"n_steps": 16, "batch_size": 16, "n_epochs": 1},
    Reinforce: {"n_episodes": 2},
}
ALGOS = list(SMALL)


def make_model(algo: type[BaseAlgorithm], env: Any, **kwargs: Any) -> BaseAlgorithm:
    arguments = {**SMALL[algo], "policy_kwargs": TINY, "seed": 0, "device": "cpu", **kwargs}
    return algo("MlpPolicy", env, **arguments)


class LocalsRecorder(BaseCallback):
    """Keeps the shapes and types of the collection's locals that SB3 callbacks read."""

    NAMES = ("actions", "clipped_actions", "new_obs", "rewards", "dones", "infos", "n_steps")

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[dict[str, Any]] = []

    def _on_step(self) -> bool:
        self.seen.append(
            {name: np.shape(self.locals[name]) if name in self.locals else "missing" for name in self.NAMES}
        )
        return True


ACTION_SPACES = {
    "box_2x2": spaces.Box(-1.0, 1.0, shape=(2, 2), dtype=np.float32),
    "discrete": spaces.Discrete(3),
    "multidiscrete": spaces.MultiDiscrete([2, 3]),
    "multibinary": spaces.MultiBinary(3),  # SB3 refuses a multi-dimensional MultiBinary
}


@pytest.mark.parametrize("space_name", list(ACTION_SPACES))
@pytest.mark.parametrize("algo", ALGOS)
def test_callbacks_see_the_collection_locals_with_sb3_shapes(algo: type[BaseAlgorithm], space_name: str) -> None:
    space = ACTION_SPACES[space_name]
    observation_space = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)
    env = make_vec_env(lambda: SpaceEnv(observation_space, space), n_envs=2, seed=0)
    recorder = LocalsRecorder()
    make_model(algo, env).learn(40, callback=recorder)
    first = recorder.seen[0]
    assert "missing" not in first.values(), first
    assert first["actions"] == (2, *space.shape)
    assert first["clipped_actions"] == (2, *space.shape)
    assert first["new_obs"] == (2, 3)
    assert first["rewards"] == first["dones"] == first["infos"] == (2,)
    assert first["n_steps"] == ()


@pytest.mark.parametrize("algo", ALGOS)
def test_n_steps_in_the_locals_counts_the_steps_of_this_collection(algo: type[BaseAlgorithm]) -> None:
    counts: list[int] = []

    class Count(BaseCallback):
        def _on_step(self) -> bool:
            counts.append(int(self.locals["n_steps"]))
            return True

        def _on_rollout_end(self) -> None:
            counts.append(-1)

    make_model(algo, make_vec_env("CartPole-v1", n_envs=2, seed=0)).learn(100, callback=Count())
    first_collection = counts[: counts.index(-1)]
    assert first_collection == list(range(len(first_collection)))


class KeyRecorder(Logger):
    def __init__(self) -> None:
        super().__init__(folder=None, output_formats=[])
        self.keys: set[str] = set()

    def record(self, key: str, value: Any, exclude: Any = None) -> None:
        self.keys.add(key)
        super().record(key, value, exclude)


# The keys that A2C and PPO both log (SB3's dashboards read them); "train/std" only for Gaussian policies.
SB3_TRAIN_KEYS = {"train/entropy_loss", "train/value_loss", "train/explained_variance"}


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
@pytest.mark.parametrize("algo", ALGOS)
def test_the_logger_keys_of_a2c_and_ppo_are_there(algo: type[BaseAlgorithm], env_id: str) -> None:
    model = make_model(algo, make_vec_env(env_id, n_envs=2, seed=0))
    logger = KeyRecorder()
    model.set_logger(logger)
    model.learn(450, log_interval=1)
    expected = SB3_TRAIN_KEYS | {"train/learning_rate", "train/n_updates", "time/fps", "time/total_timesteps"}
    if env_id == "Pendulum-v1":
        expected |= {"train/std"}
    assert expected <= logger.keys, expected - logger.keys


def test_n_steps_is_not_a_hyperparameter_of_reinforce() -> None:
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_steps'"):
        Reinforce("MlpPolicy", env, n_steps=5)  # type: ignore[call-arg]
    model = make_model(Reinforce, env)
    assert model.n_steps == 0  # nothing collected yet
    model.learn(100)
    # What the last collection took per env: the longest quota of episodes, as the buffer holds it.
    assert model.n_steps == model.rollout_buffer.n_steps > 0


def test_the_logger_still_writes_where_sb3_writes(tmp_path: Any) -> None:
    model = make_model(Reinforce, make_vec_env("CartPole-v1", n_envs=2, seed=0))
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(300)
    header = (tmp_path / "progress.csv").read_text().splitlines()[0].split(",")
    assert {"train/entropy_loss", "train/entropy", "rollout/unused_frac"} <= set(header)
