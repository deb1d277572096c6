"""The numpy actor samples exactly the policy's distribution: same logits, and chi-square tests on many draws."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from scipy import stats
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_reinforce import Reinforce
from sb3_reinforce.common.fast_actor import NumpyActor, unsupported_reason
from tests.envs import SpaceEnv

BOX = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)
N_ENVS = 4


def make_model(observation_space: spaces.Space, action_space: spaces.Space, **policy_kwargs: object) -> Reinforce:
    env = DummyVecEnv([lambda: SpaceEnv(observation_space, action_space)] * N_ENVS)
    kwargs = {"net_arch": [16, 16], "ortho_init": False, **policy_kwargs}
    return Reinforce("MlpPolicy", env, n_episodes=4, seed=0, device="cpu", policy_kwargs=kwargs)


def observations(space: spaces.Space, seed: int) -> np.ndarray:
    space.seed(seed)
    return np.stack([space.sample() for _ in range(N_ENVS)])


def draw(actor: NumpyActor, obs: np.ndarray, action_shape: tuple[int, ...], dtype: type, n: int) -> np.ndarray:
    out = np.empty((n, N_ENVS, *action_shape), dtype=dtype)
    for index in range(n):
        actor.act(obs, out[index])
    return out


@pytest.mark.parametrize("activation", [th.nn.Tanh, th.nn.ReLU])
@pytest.mark.parametrize("observation_space", [BOX, spaces.Discrete(6)])
def test_logits_equal_the_torch_policy(observation_space: spaces.Space, activation: type[th.nn.Module]) -> None:
    model = make_model(observation_space, spaces.Discrete(3), activation_fn=activation)
    actor = model.fast_actor
    assert actor is not None
    obs = observations(observation_space, 0)
    with th.no_grad():
        expected = model.policy.get_distribution(model.policy.obs_to_tensor(obs)[0]).distribution.logits
        expected = expected - th.logsumexp(expected, dim=1, keepdim=True)
    logits = actor.logits(obs)
    logits = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(logits, expected.numpy(), rtol=1e-5, atol=1e-6)


def test_sync_follows_parameter_changes() -> None:
    model = make_model(BOX, spaces.Discrete(3))
    actor = model.fast_actor
    assert actor is not None
    obs = observations(BOX, 1)
    before = actor.logits(obs).copy()
    with th.no_grad():
        model.policy.action_net.bias += 1.0
    np.testing.assert_array_equal(actor.logits(obs), before)  # a snapshot until synced
    actor.sync()
    np.testing.assert_allclose(actor.logits(obs), before + 1.0, rtol=1e-6)


def chi_square_p(counts: np.ndarray, probabilities: np.ndarray) -> float:
    """Pearson's test; categories expected fewer than 5 times are pooled, as the test's approximation needs."""
    expected = probabilities.astype(np.float64) * counts.sum()
    small = expected < 5
    if small.any():
        counts = np.append(counts[~small], counts[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
    return float(stats.chisquare(counts, expected * counts.sum() / expected.sum()).pvalue)


def test_categorical_sampling_matches_softmax() -> None:
    model = make_model(BOX, spaces.Discrete(5))
    actor = model.fast_actor
    assert actor is not None
    with th.no_grad():
        model.policy.action_net.weight.mul_(8.0)  # sharpen so the probabilities are far from uniform
    actor.sync()
    obs = observations(BOX, 2)
    with th.no_grad():
        probabilities = model.policy.get_distribution(th.as_tensor(obs)).distribution.probs.numpy()
    actions = draw(actor, obs, (), np.int64, 40_000)
    for env in range(N_ENVS):
        counts = np.bincount(actions[:, env], minlength=5)
        assert chi_square_p(counts, probabilities[env]) > 1e-4, (counts, probabilities[env])
    # A sampler that ignored the logits would fail the same test:
    uniform_counts = np.bincount(np.random.default_rng(0).integers(0, 5, 40_000), minlength=5)
    assert chi_square_p(uniform_counts, probabilities[0]) < 1e-6


def test_multidiscrete_sampling_matches_each_categorical() -> None:
    model = make_model(BOX, spaces.MultiDiscrete([3, 4]))
    actor = model.fast_actor
    assert actor is not None
    with th.no_grad():
        model.policy.action_net.weight.mul_(10.0)
    actor.sync()
    obs = observations(BOX, 3)
    with th.no_grad():
        parts = model.policy.get_distribution(th.as_tensor(obs)).distribution
    actions = draw(actor, obs, (2,), np.int64, 30_000)
    for index, part in enumerate(parts):
        probabilities = part.probs.numpy()
        for env in range(N_ENVS):
            counts = np.bincount(actions[:, env, index], minlength=probabilities.shape[1])
            assert chi_square_p(counts, probabilities[env]) > 1e-4


def test_bernoulli_sampling_matches_sigmoid() -> None:
    model = make_model(BOX, spaces.MultiBinary(3))
    actor = model.fast_actor
    assert actor is not None
    with th.no_grad():
        model.policy.action_net.weight.mul_(5.0)
    actor.sync()
    obs = observations(BOX, 4)
    with th.no_grad():
        probabilities = model.policy.get_distribution(th.as_tensor(obs)).distribution.probs.numpy()
    actions = draw(actor, obs, (3,), np.float32, 30_000)
    for env in range(N_ENVS):
        for bit in range(3):
            ones = actions[:, env, bit].sum()
            p = probabilities[env, bit]
            assert chi_square_p(np.array([len(actions) - ones, ones]), np.array([1 - p, p])) > 1e-4


def test_gaussian_sampling_matches_mean_and_std() -> None:
    action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
    model = make_model(BOX, action_space, log_std_init=-0.5)
    actor = model.fast_actor
    assert actor is not None
    obs = observations(BOX, 5)
    with th.no_grad():
        distribution = model.policy.get_distribution(th.as_tensor(obs)).distribution
    actions = draw(actor, obs, (2,), np.float32, 20_000)
    for env in range(N_ENVS):
        for dim in range(2):
            mean, std = float(distribution.mean[env, dim]), float(distribution.stddev[env, dim])
            # Kolmogorov-Smirnov against the exact normal: location, scale and shape at once.
            assert stats.kstest(actions[:, env, dim], "norm", args=(mean, std)).pvalue > 1e-4


def test_unsupported_policies_fall_back_with_a_reason() -> None:
    image = spaces.Box(0, 255, shape=(36, 36, 1), dtype=np.uint8)
    env = DummyVecEnv([lambda: SpaceEnv(image, spaces.Discrete(2))])
    model = Reinforce(
        "CnnPolicy", env, n_episodes=2, device="cpu", policy_kwargs={"features_extractor_kwargs": {"features_dim": 8}}
    )
    assert model.fast_actor is None
    assert model.fast_actor_reason == "features extractor NatureCNN"
    model = make_model(BOX, spaces.Discrete(2), activation_fn=th.nn.ELU)
    assert model.fast_actor is None
    assert "not Linear/Tanh/ReLU" in str(model.fast_actor_reason)
    assert unsupported_reason(th.nn.Linear(2, 2), BOX) == "policy Linear is not an ActorCriticPolicy"
    off = Reinforce("MlpPolicy", "CartPole-v1", n_episodes=2, device="cpu", use_fast_actor=False)
    assert off.fast_actor is None
    assert off.fast_actor_reason == "disabled by use_fast_actor=False"


class ZeroGenerator:
    """A generator whose draws are all exactly 0, the worst case for ``log`` in Gumbel-max."""

    def standard_exponential(self, size: tuple[int, ...]) -> np.ndarray:
        return np.zeros(size)

    def random(self, size: tuple[int, ...]) -> np.ndarray:
        return np.zeros(size)


def test_zero_draws_give_finite_noise_and_respect_the_logits() -> None:
    model = make_model(BOX, spaces.Discrete(3))
    actor = model.fast_actor
    assert actor is not None
    actor.rng = ZeroGenerator()  # type: ignore[assignment]
    with np.errstate(all="raise"):
        noise = actor._draw_noise()
    assert np.isfinite(noise).all()
    # With equal noise everywhere Gumbel-max reduces to argmax of the logits, never an arbitrary action.
    obs = observations(BOX, 6)
    actions = np.empty(N_ENVS, dtype=np.int64)
    actor.act(obs, actions)
    np.testing.assert_array_equal(actions, actor.logits(obs).argmax(axis=1))
