"""What SB3's own A2C and PPO give their users, checked on Reinforce beside them: each case runs on all three, so
a case that does not hold for SB3's algorithms is a wrong case, not a finding."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import (
    BaseCallback,
    CallbackList,
    CheckpointCallback,
    EvalCallback,
    EveryNTimesteps,
    StopTrainingOnMaxEpisodes,
)
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import (
    FakeImageEnv,
    IdentityEnv,
    IdentityEnvBox,
    IdentityEnvMultiBinary,
    IdentityEnvMultiDiscrete,
    SimpleMultiObsEnv,
)
from stable_baselines3.common.evaluation import evaluate_policy
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
    # The critic's keys come from a critic: Reinforce's, baseline="value" (the default, "loo", has none).
    critic = {"baseline": "value"} if algo is Reinforce else {}
    model = make_model(algo, make_vec_env(env_id, n_envs=2, seed=0), **critic)
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


# ------------------------------------------------------------------------------------ SB3's generic cases
# What SB3's test_save_load, test_predict, test_spaces, test_dict_env, test_cnn, test_deterministic,
# test_custom_policy, test_sde, test_identity and test_callbacks check, written for the three algorithms. SB3's
# versions pass n_steps; Reinforce's small update is SMALL's n_episodes instead (its batches are episodes).


@pytest.mark.parametrize("algo", ALGOS)
def test_save_load_keeps_parameters_predictions_and_continues(algo: type[BaseAlgorithm], tmp_path: Any) -> None:
    env = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    model = make_model(algo, env).learn(600)
    observations = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    before = model.predict(observations, deterministic=True)[0]
    model.save(tmp_path / "model")
    loaded = algo.load(tmp_path / "model", env=env, device="cpu")
    for name, value in model.policy.state_dict().items():
        assert th.equal(value, loaded.policy.state_dict()[name]), name
    np.testing.assert_array_equal(loaded.predict(observations, deterministic=True)[0], before)
    loaded.learn(600, reset_num_timesteps=False)
    assert loaded.num_timesteps > model.num_timesteps


@pytest.mark.parametrize("algo", ALGOS)
def test_predict_accepts_one_observation_and_a_batch(algo: type[BaseAlgorithm]) -> None:
    model = make_model(algo, make_vec_env("CartPole-v1", n_envs=2, seed=0))
    single, state = model.predict(np.zeros(4, dtype=np.float32), deterministic=True)
    assert np.shape(single) == ()
    assert state is None
    batch, _ = model.predict(np.zeros((3, 4), dtype=np.float32))
    assert batch.shape == (3,)


@pytest.mark.parametrize(
    "env_factory",
    [
        lambda: IdentityEnv(5, ep_length=10),
        lambda: IdentityEnvBox(ep_length=10),
        lambda: IdentityEnvMultiDiscrete(3, ep_length=10),
        lambda: IdentityEnvMultiBinary(3, ep_length=10),
    ],
    ids=["discrete", "box", "multidiscrete", "multibinary"],
)
@pytest.mark.parametrize("algo", ALGOS)
def test_every_action_space_trains(algo: type[BaseAlgorithm], env_factory: Any) -> None:
    model = make_model(algo, make_vec_env(env_factory, n_envs=2, seed=0)).learn(200)
    assert model.num_timesteps >= 200


@pytest.mark.parametrize("algo", ALGOS)
def test_dict_and_image_observations_train(algo: type[BaseAlgorithm]) -> None:
    dict_env = make_vec_env(lambda: SimpleMultiObsEnv(random_start=False), n_envs=2, seed=0)
    algo("MultiInputPolicy", dict_env, **{**SMALL[algo], "seed": 0, "device": "cpu"}).learn(100)
    image_env = make_vec_env(lambda: FakeImageEnv(screen_height=36, screen_width=36), n_envs=2, seed=0)
    extractor = {"features_extractor_kwargs": {"features_dim": 16}}
    algo("CnnPolicy", image_env, **{**SMALL[algo], "policy_kwargs": extractor, "seed": 0, "device": "cpu"}).learn(50)


@pytest.mark.parametrize("algo", ALGOS)
def test_the_same_seed_gives_the_same_parameters(algo: type[BaseAlgorithm]) -> None:
    def trained() -> dict[str, th.Tensor]:
        return make_model(algo, make_vec_env("Pendulum-v1", n_envs=2, seed=0)).learn(600).policy.state_dict()

    first, second = trained(), trained()
    assert all(th.equal(first[name], second[name]) for name in first)


@pytest.mark.parametrize("algo", ALGOS)
def test_custom_policy_arguments(algo: type[BaseAlgorithm]) -> None:
    policy_kwargs = {
        "net_arch": {"pi": [8, 8], "vf": [4]},
        "activation_fn": th.nn.ReLU,
        "optimizer_class": th.optim.RMSprop,
        "optimizer_kwargs": {"eps": 1e-5},
    }
    model = make_model(algo, make_vec_env("CartPole-v1", n_envs=2, seed=0), policy_kwargs=policy_kwargs)
    assert isinstance(model.policy.optimizer, th.optim.RMSprop)
    assert [
        layer.out_features for layer in model.policy.mlp_extractor.policy_net if hasattr(layer, "out_features")
    ] == [
        8,
        8,
    ]
    model.learn(200)


@pytest.mark.parametrize("algo", ALGOS)
def test_gsde_trains_and_resamples(algo: type[BaseAlgorithm]) -> None:
    model = make_model(algo, make_vec_env("Pendulum-v1", n_envs=2, seed=0), use_sde=True, sde_sample_freq=4)
    model.learn(600)
    assert model.policy.use_sde


@pytest.mark.parametrize("algo", ALGOS)
def test_identity_is_learned(algo: type[BaseAlgorithm]) -> None:
    # SB3's test_identity: the action that repeats the observation earns 1; random play earns 1/2 of 10.
    env = make_vec_env(lambda: IdentityEnv(2, ep_length=10), n_envs=4, seed=0)
    settings: dict[type[BaseAlgorithm], dict[str, Any]] = {
        A2C: {"n_steps": 5, "learning_rate": 3e-3},
        PPO: {"n_steps": 64, "batch_size": 64, "n_epochs": 4, "learning_rate": 3e-3},
        Reinforce: {"n_episodes": 8, "learning_rate": 1e-2},
    }
    model = algo("MlpPolicy", env, **settings[algo], policy_kwargs={"net_arch": [16]}, seed=0, device="cpu")
    model.learn(8_000)
    mean, _ = evaluate_policy(model, make_vec_env(lambda: IdentityEnv(2, ep_length=10), n_envs=1, seed=1), 20)
    assert mean >= 9.0


@pytest.mark.parametrize("algo", ALGOS)
def test_sb3_callbacks_work(algo: type[BaseAlgorithm], tmp_path: Any) -> None:
    eval_env = make_vec_env("CartPole-v1", n_envs=1, seed=1)
    stop_at_episodes = StopTrainingOnMaxEpisodes(max_episodes=6)
    callbacks = CallbackList(
        [
            CheckpointCallback(save_freq=50, save_path=str(tmp_path / "checkpoints"), name_prefix="model"),
            EvalCallback(eval_env, eval_freq=50, n_eval_episodes=2, log_path=str(tmp_path / "eval")),
            EveryNTimesteps(n_steps=100, callback=LocalsRecorder()),
            stop_at_episodes,
        ]
    )
    model = make_model(algo, make_vec_env("CartPole-v1", n_envs=2, seed=0))
    model.learn(50_000, callback=callbacks)
    assert model.num_timesteps < 50_000  # stopped by StopTrainingOnMaxEpisodes
    assert list((tmp_path / "checkpoints").glob("model_*_steps.zip"))
    assert (tmp_path / "eval" / "evaluations.npz").is_file()
