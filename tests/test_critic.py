"""The critic fit of ``baseline="value"``: what moves, in what order, what is saved, and resuming."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_reinforce import Reinforce
from tests.envs import NeverEndingEnv
from tests.helpers import collect, policy_state

TINY = {"net_arch": [16]}


class LinearExtractor(BaseFeaturesExtractor):
    """A features extractor with parameters, so that sharing it or not matters."""

    def __init__(self, observation_space: gym.spaces.Box, features_dim: int = 8) -> None:
        super().__init__(observation_space, features_dim)
        self.linear = th.nn.Linear(int(np.prod(observation_space.shape)), features_dim)

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return th.tanh(self.linear(observations))


def snapshot(model: Reinforce) -> dict[str, th.Tensor]:
    return {name: value.detach().clone() for name, value in model.policy.named_parameters()}


def moved(before: dict[str, th.Tensor], model: Reinforce) -> set[str]:
    return {name for name, value in model.policy.named_parameters() if not th.equal(value, before[name])}


def cartpole_model(**kwargs: Any) -> Reinforce:
    # The critic's model (not the constructor's default, "loo"); the tests without one pass their baseline.
    arguments: dict[str, Any] = {
        "baseline": "value",
        "n_episodes": 4,
        "seed": 0,
        "device": "cpu",
        "policy_kwargs": TINY,
        **kwargs,
    }
    return Reinforce("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), **arguments)


@pytest.mark.parametrize(
    ("share", "critic_prefixes"),
    [
        (True, ("mlp_extractor.value_net", "value_net")),
        (False, ("mlp_extractor.value_net", "value_net", "vf_features_extractor")),
    ],
)
def test_the_fit_moves_the_critics_own_parameters_and_nothing_else(share: bool, critic_prefixes: tuple) -> None:
    policy_kwargs = {**TINY, "features_extractor_class": LinearExtractor, "share_features_extractor": share}
    model = cartpole_model(policy_kwargs=policy_kwargs, vf_n_epochs=5)
    collect(model)
    observations = th.as_tensor(model.rollout_buffer.flat_observations(model.rollout_buffer.valid_mask()))
    targets = th.linspace(-3.0, 3.0, len(observations))
    before = snapshot(model)
    model._fit_critic(observations, targets)

    changed = moved(before, model)
    critic = {name for name in before if name.startswith(critic_prefixes)}
    assert changed == critic, f"moved {sorted(changed)}, expected exactly {sorted(critic)}"
    # And the optimizers split the parameters the same way.
    assert {id(p) for p in model.critic_parameters()} == {
        id(p) for g in model.vf_optimizer.param_groups for p in g["params"]
    }
    actor_ids = {id(p) for g in model.policy.optimizer.param_groups for p in g["params"]}
    assert actor_ids.isdisjoint(id(p) for p in model.critic_parameters())
    assert len(actor_ids) + len(model.critic_parameters()) == len(list(model.policy.parameters()))


def test_the_policy_step_is_the_critic_free_step_and_the_fit_comes_after() -> None:
    """train(): the actor moves exactly as with the critic's loss left out; the critic then fits the batch."""
    fitted, joint = cartpole_model(vf_n_epochs=3), cartpole_model(vf_update="joint", vf_coef=0.0)
    for model in (fitted, joint):
        model.set_logger(configure(None, [""]))
        collect(model)
    before = snapshot(fitted)
    fitted.train()
    joint.train()
    actor = {name for name in before if not name.startswith(("mlp_extractor.value_net", "value_net"))}
    for name, value in fitted.policy.named_parameters():
        if name in actor:
            # Same advantages (critic as collected), same loss without the critic, same optimizer state.
            th.testing.assert_close(value, dict(joint.policy.named_parameters())[name], rtol=0, atol=0)
    assert moved(before, fitted) - actor, "the critic did not move"
    logged = fitted.logger.name_to_value
    assert logged["train/value_loss_after_fit"] < logged["train/value_loss"]


def test_more_passes_fit_the_targets_better() -> None:
    losses, gains = [], []
    for epochs in (1, 20, 200):
        model = cartpole_model(vf_n_epochs=epochs, vf_learning_rate=3e-2)
        model.set_logger(configure(None, [""]))
        collect(model)
        model.train()
        logged = model.logger.name_to_value
        losses.append(logged["train/value_loss_after_fit"])
        gains.append(logged["train/explained_variance_after_fit"] - logged["train/explained_variance"])
    assert losses[0] > losses[1] > losses[2], losses
    assert gains[2] > 0.3, f"200 passes explained only {gains[2]:.2f} more of the targets' variance"


@pytest.mark.parametrize("batch_size", [None, 7, 10_000])
def test_minibatches_cover_the_batch_and_a_large_size_is_the_full_batch(batch_size: int | None) -> None:
    model = cartpole_model(vf_n_epochs=2, vf_batch_size=batch_size)
    collect(model)
    size = int(model.rollout_buffer.valid_mask().sum())
    steps = []
    original_step = model.vf_optimizer.step

    def counting_step(*args: Any, **kwargs: Any) -> Any:
        steps.append(1)
        return original_step(*args, **kwargs)

    model.vf_optimizer.step = counting_step  # type: ignore[method-assign]
    model.set_logger(configure(None, [""]))
    model.train()
    per_epoch = 1 if batch_size is None or batch_size >= size else -(-size // batch_size)
    assert len(steps) == 2 * per_epoch


def test_the_critic_learning_rate_schedule_is_applied() -> None:
    model = cartpole_model(vf_learning_rate=lambda progress: 1e-3 * progress)
    model.learn(600)
    assert model.vf_optimizer.param_groups[0]["lr"] == pytest.approx(1e-3 * model._current_progress_remaining)
    assert model.vf_optimizer.param_groups[0]["lr"] < 1e-3


def test_the_joint_update_has_one_optimizer_over_every_parameter() -> None:
    model = cartpole_model(vf_update="joint")
    assert model.vf_optimizer is None
    assert len(list(model.policy.optimizer.param_groups[0]["params"])) == len(list(model.policy.parameters()))


@pytest.mark.parametrize("baseline", ["none", "mean", "loo"])
def test_without_a_critic_its_parameters_are_in_no_optimizer_and_never_move(baseline: str) -> None:
    model = cartpole_model(baseline=baseline)
    assert model.vf_optimizer is None
    critic_ids = {id(parameter) for parameter in model.critic_parameters()}
    optimized = [parameter for group in model.policy.optimizer.param_groups for parameter in group["params"]]
    assert critic_ids.isdisjoint(id(parameter) for parameter in optimized)
    assert len(optimized) + len(critic_ids) == len(list(model.policy.parameters()))
    before = [parameter.detach().clone() for parameter in model.critic_parameters()]
    model.learn(1500)
    for old, new in zip(before, model.critic_parameters(), strict=True):
        assert th.equal(old, new)


def test_save_load_keeps_both_optimizers(tmp_path: Path) -> None:
    model = cartpole_model(vf_n_epochs=3).learn(1500)
    model.save(tmp_path / "model")
    loaded = Reinforce.load(tmp_path / "model", device="cpu")
    for name in ("policy.optimizer", "vf_optimizer"):
        saved_state = model.get_parameters()[name]["state"]
        loaded_state = loaded.get_parameters()[name]["state"]
        assert saved_state, f"{name} has no state to compare"
        assert saved_state.keys() == loaded_state.keys()
        for key in saved_state:
            for field in ("exp_avg", "exp_avg_sq", "step"):
                th.testing.assert_close(loaded_state[key][field], saved_state[key][field], rtol=0, atol=0)


def test_set_parameters_without_the_critic_optimizer_raises_and_changes_nothing() -> None:
    # SB3's contract: with exact_match=True a dict that lacks one of the model's objects is refused, and the model
    # is left as it was (its own get_parameters() still loads).
    model = cartpole_model(vf_n_epochs=3).learn(600)
    before = model.get_parameters()
    without_critic_optimizer = {name: value for name, value in before.items() if name != "vf_optimizer"}
    with pytest.raises(ValueError, match="Names of parameters do not match"):
        model.set_parameters(without_critic_optimizer, exact_match=True, device="cpu")
    assert model.vf_n_epochs == 3
    assert model.vf_optimizer is not None
    model.set_parameters(before, exact_match=True, device="cpu")
    for name, value in model.policy.state_dict().items():
        assert th.equal(value, before["policy"][name]), name


def test_loading_weights_without_a_fitted_critic_keeps_the_fit() -> None:
    model = cartpole_model(vf_n_epochs=3)
    weights = cartpole_model(vf_update="joint", seed=1).get_parameters()["policy"]
    model.set_parameters({"policy": weights}, exact_match=False, device="cpu")
    for name, value in model.policy.state_dict().items():
        assert th.equal(value, weights[name]), name
    assert model.fits_critic
    assert model.vf_optimizer is not None


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("CartPole-v1", {"vf_n_epochs": 3, "vf_batch_size": 32}),  # the numpy actor, variable-length episodes
        ("Pendulum-v1", {"use_sde": True, "gae_lambda": 0.95}),  # the torch path
    ],
)
def test_a_loaded_model_continues_exactly_as_the_uninterrupted_run(
    env_id: str, kwargs: dict[str, Any], tmp_path: Path
) -> None:
    def fresh() -> Reinforce:
        env = make_vec_env(env_id, n_envs=2, seed=123)
        return Reinforce(
            "MlpPolicy", env, baseline="value", n_episodes=2, seed=7, device="cpu", policy_kwargs=TINY, **kwargs
        )

    uninterrupted = fresh().learn(1500)
    uninterrupted.learn(1500, reset_num_timesteps=False)

    first_half = fresh().learn(1500)
    first_half.save(tmp_path / "half")
    # Another env object, seeded differently: the model's saved generator decides the resets, not the env.
    resumed = Reinforce.load(tmp_path / "half", env=make_vec_env(env_id, n_envs=2, seed=999), device="cpu")
    resumed.learn(1500, reset_num_timesteps=False)

    assert resumed.num_timesteps == uninterrupted.num_timesteps
    assert resumed._n_updates == uninterrupted._n_updates
    expected = policy_state(uninterrupted)
    for name, value in policy_state(resumed).items():
        th.testing.assert_close(value, expected[name], rtol=0, atol=0, msg=f"{name} diverged after resuming")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"vf_learning_rate": 0.0}, "vf_learning_rate must be a finite number > 0"),
        ({"vf_learning_rate": -1e-3}, "vf_learning_rate must be a finite number > 0"),
        ({"vf_learning_rate": float("nan")}, "vf_learning_rate must be a finite number > 0"),
        ({"vf_learning_rate": float("inf")}, "vf_learning_rate must be a finite number > 0"),
        ({"vf_learning_rate": "fast"}, "vf_learning_rate must be a finite number > 0"),
        ({"vf_n_epochs": -1}, "vf_n_epochs must be an integer >= 1"),
        ({"vf_n_epochs": 2.5}, "vf_n_epochs must be an integer >= 1"),
        ({"vf_update": "both"}, r"vf_update must be one of \('fit', 'joint'\), got 'both'"),
        ({"vf_batch_size": 0}, "vf_batch_size must be an integer >= 1 or None"),
        ({"vf_batch_size": 3.0}, "vf_batch_size must be an integer >= 1 or None"),
    ],
)
def test_bad_critic_hyperparameters_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Reinforce("MlpPolicy", DummyVecEnv([NeverEndingEnv]), **kwargs)
