"""Reinforce against the closed-form reference, special cases, bad input, and SB3's machinery."""

from __future__ import annotations

import json
import warnings
import zipfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecNormalize

from sb3_reinforce import Reinforce
from sb3_reinforce.variants import VARIANTS
from tests import reference
from tests.envs import NeverEndingEnv, ScriptedEnv, SpaceEnv, TargetEnv
from tests.helpers import assert_unchanged, batch_episodes, collect, policy_state

TINY = {"net_arch": [16]}


def linear_parameters(model: Reinforce) -> np.ndarray:
    """``[W | b]`` of the linear softmax head, ``(actions, features + 1)``."""
    head = model.policy.action_net
    return th.cat([head.weight, head.bias[:, None]], dim=1).detach().numpy().astype(np.float64).copy()


@pytest.mark.parametrize(("n_envs", "n_episodes"), [(1, 4), (3, 5), (4, 8)])
def test_reference_update_follows_the_closed_form_gradient(n_envs: int, n_episodes: int) -> None:
    kwargs = {**VARIANTS["reference"], "n_episodes": n_episodes}
    model = Reinforce("MlpPolicy", make_vec_env("CartPole-v1", n_envs=n_envs, seed=3), seed=3, device="cpu", **kwargs)
    before = linear_parameters(model)
    collect(model)
    model.train()
    step = linear_parameters(model) - before

    # The same batch through the reference, with the bias as the weight of a constant feature 1.
    episodes = [
        (np.hstack([obs.astype(np.float64), np.ones((len(obs), 1))]), actions.astype(np.int64), rewards)
        for obs, actions, rewards in batch_episodes(model)
    ]
    lengths = {len(rewards) for _, _, rewards in episodes}
    assert len(episodes) == n_episodes
    assert len(lengths) > 1, "episodes of unequal lengths are the interesting case"
    gradient = reference.batch_gradient(before, episodes, kwargs["gamma"])

    cosine = float((step * gradient).sum() / (np.linalg.norm(step) * np.linalg.norm(gradient)))
    assert cosine > 0.9999
    # Documented normalization: Reinforce averages over the B steps, the reference divides by the episodes.
    batch_steps = sum(len(rewards) for _, _, rewards in episodes)
    rescaled = step / kwargs["learning_rate"] * batch_steps / n_episodes
    np.testing.assert_allclose(rescaled, gradient, rtol=1e-4, atol=1e-6 * np.abs(gradient).max())


def test_reference_module_learns_cartpole_a_little() -> None:
    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(0)
    theta = reference.train(env, episodes=300, batch_episodes=10, alpha=0.01, seed=0)
    lengths = [len(reference.run_episode(env, theta, rng)[2]) for _ in range(20)]
    # A zero (uniform) policy lasts about 22 steps on CartPole; 300 episodes of ascent must beat it clearly.
    assert np.mean(lengths) > 60


def test_score_matches_autograd() -> None:
    rng = np.random.default_rng(1)
    theta, states, actions = rng.normal(size=(3, 5)), rng.normal(size=(7, 5)), rng.integers(0, 3, size=7)
    theta_t = th.tensor(theta, requires_grad=True)
    for index in range(7):
        log_pi = th.log_softmax(th.tensor(states[index]) @ theta_t.T, dim=0)[actions[index]]
        (grad,) = th.autograd.grad(log_pi, theta_t)
        np.testing.assert_allclose(reference.score(theta, states, actions)[index], grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("normalize", [False, True])
def test_zero_rewards_leave_the_policy_unchanged(normalize: bool) -> None:
    env = DummyVecEnv([lambda: ScriptedEnv([3, 5], zero_reward=True)] * 2)
    model = Reinforce(
        "MlpPolicy",
        env,
        baseline="mean",
        ent_coef=0.0,
        normalize_advantage=normalize,
        n_episodes=4,
        seed=0,
        device="cpu",
        policy_kwargs=TINY,
    )
    before = policy_state(model)
    model.learn(200)
    assert model._n_updates >= 2
    for key, value in policy_state(model).items():
        assert th.isfinite(value).all()
        th.testing.assert_close(value, before[key], rtol=0, atol=0, msg=key)


def test_zero_rewards_with_entropy_bonus_raise_the_entropy() -> None:
    env = DummyVecEnv([lambda: ScriptedEnv([3, 5], zero_reward=True)] * 2)
    # Plain SGD with a small step: an ascent step on the entropy alone must raise it.
    model = Reinforce(
        "MlpPolicy",
        env,
        baseline="mean",
        ent_coef=0.1,
        n_episodes=4,
        learning_rate=0.05,
        seed=0,
        device="cpu",
        policy_kwargs={**TINY, "ortho_init": False, "optimizer_class": th.optim.SGD},
    )
    for _ in range(3):
        collect(model)
        batch = th.as_tensor(model.rollout_buffer.flat_observations(model.rollout_buffer.valid_mask()))

        def entropy(batch: th.Tensor = batch) -> float:
            with th.no_grad():
                return float(model.policy.get_distribution(batch).entropy().mean())

        before = entropy()
        model.train()
        assert np.log(2) >= entropy() > before


def entropy_model(ent_coef: Any) -> Reinforce:
    env = DummyVecEnv([lambda: ScriptedEnv([3, 5])] * 2)
    return Reinforce(
        "MlpPolicy", env, baseline="mean", ent_coef=ent_coef, n_episodes=4, seed=0, device="cpu", policy_kwargs=TINY
    )


def test_an_entropy_schedule_weighs_the_bonus_by_its_value_at_each_update() -> None:
    def trained(ent_coef: Any) -> dict[str, th.Tensor]:
        model = entropy_model(ent_coef)
        model.learn(120)
        return policy_state(model)

    constant, scheduled, none = trained(0.3), trained(lambda progress: 0.3), trained(0.0)
    for key, value in constant.items():
        th.testing.assert_close(scheduled[key], value, rtol=0, atol=0, msg=key)
    assert any(not th.equal(none[key], value) for key, value in constant.items())

    decaying = entropy_model(lambda progress: 0.3 * progress)
    logger = configure(None, [])
    decaying.set_logger(logger)
    collect(decaying)
    decaying._current_progress_remaining = 0.5
    decaying.train()
    assert logger.name_to_value["train/ent_coef"] == pytest.approx(0.15)


def test_the_last_update_sees_progress_zero_not_below() -> None:
    # The last collection ends on whole episodes past total_timesteps; a schedule is never asked below 0.
    seen: list[float] = []
    model = entropy_model(lambda progress: seen.append(progress) or 0.0)
    model.learn(50)
    assert model.num_timesteps > 50
    assert min(seen) == 0.0


@pytest.mark.parametrize("bad", [-0.01, float("nan"), float("inf")])
def test_an_entropy_schedule_that_leaves_its_range_raises_before_the_parameters_change(bad: float) -> None:
    model = entropy_model(lambda progress: 0.01 if progress >= 1.0 else bad)
    before = policy_state(model)
    with pytest.raises(FloatingPointError, match=r"the ent_coef schedule gave .* at update 1 .* finite number >= 0"):
        model.learn(60)
    assert_unchanged(model, before)


def test_same_seed_same_parameters_and_save_load_round_trip(tmp_path: Path) -> None:
    def run() -> Reinforce:
        model = Reinforce(
            "MlpPolicy",
            make_vec_env("CartPole-v1", n_envs=2, seed=5),
            n_episodes=4,
            seed=5,
            device="cpu",
            policy_kwargs=TINY,
        )
        return model.learn(600)

    first, second = run(), run()
    for (key, a), b in zip(first.policy.state_dict().items(), second.policy.state_dict().values(), strict=True):
        th.testing.assert_close(a, b, rtol=0, atol=0, msg=key)

    first.save(tmp_path / "model")
    loaded = Reinforce.load(tmp_path / "model", device="cpu")
    observations = np.random.default_rng(0).normal(size=(50, 4)).astype(np.float32)
    np.testing.assert_array_equal(
        first.predict(observations, deterministic=True)[0], loaded.predict(observations, deterministic=True)[0]
    )
    assert loaded.n_episodes == 4
    assert loaded.baseline == "loo"  # the default, saved and restored
    assert loaded.fast_actor is not None

    # Continue training, loaded with an env, without resetting the step counter.
    resumed = Reinforce.load(tmp_path / "model", env=make_vec_env("CartPole-v1", n_envs=3, seed=6), device="cpu")
    steps = resumed.num_timesteps
    assert steps == first.num_timesteps
    resumed.learn(300, reset_num_timesteps=False)
    assert resumed.num_timesteps > steps
    assert resumed.rollout_buffer.n_envs == 3


def test_the_generator_state_is_plain_data_that_restores_the_draws() -> None:
    # What a checkpoint saves of the algorithm's own generator, and restores into the model it resumes.
    model = Reinforce("MlpPolicy", "CartPole-v1", n_episodes=2, seed=3, device="cpu")
    state = model.generator_state
    assert json.loads(json.dumps(state)) == state
    seeds = [model._env_seed() for _ in range(3)]
    assert model.generator_state != state
    model.generator_state = state
    assert [model._env_seed() for _ in range(3)] == seeds
    unset = Reinforce("MlpPolicy", "CartPole-v1", _init_setup_model=False)
    with pytest.raises(RuntimeError, match="call _setup_model"):
        unset.generator_state = state


BOX = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)
SPACE_CASES: list[tuple[str, spaces.Space, spaces.Space]] = [
    ("MlpPolicy", BOX, spaces.Discrete(3)),
    ("MlpPolicy", BOX, spaces.Box(-2.0, 2.0, shape=(2,), dtype=np.float32)),
    ("MlpPolicy", BOX, spaces.MultiDiscrete([2, 3])),
    ("MlpPolicy", BOX, spaces.MultiBinary(3)),
    ("MlpPolicy", spaces.Discrete(5), spaces.Discrete(2)),
    ("CnnPolicy", spaces.Box(0, 255, shape=(36, 36, 1), dtype=np.uint8), spaces.Discrete(2)),
    ("MultiInputPolicy", spaces.Dict({"a": BOX, "b": spaces.Discrete(4)}), spaces.Box(-1, 1, shape=(2,))),
]


@pytest.mark.parametrize(("policy", "observation_space", "action_space"), SPACE_CASES)
@pytest.mark.parametrize("baseline", ["mean", "value", "loo"])
def test_every_supported_space_learns_briefly(
    policy: str, observation_space: spaces.Space, action_space: spaces.Space, baseline: str
) -> None:
    env = DummyVecEnv([lambda: SpaceEnv(observation_space, action_space)] * 2)
    kwargs: dict[str, Any] = {"net_arch": [8]}
    if policy == "CnnPolicy":
        kwargs["features_extractor_kwargs"] = {"features_dim": 8}
    model = Reinforce(policy, env, n_episodes=2, baseline=baseline, seed=0, device="cpu", policy_kwargs=kwargs)
    before = policy_state(model)
    model.learn(40)
    assert model._n_updates >= 1
    changed = [key for key, value in policy_state(model).items() if not th.equal(value, before[key])]
    assert any("action_net" in key for key in changed)
    expect_fast = policy == "MlpPolicy"
    assert (model.fast_actor is not None) == expect_fast, model.fast_actor_reason


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"gamma": 1.5}, "gamma must be a number in"),
        ({"gamma": -0.1}, "gamma must be a number in"),
        ({"n_episodes": 1}, r"n_episodes must be an integer in \[2, 100,000\]"),
        ({"n_episodes": 2.5}, r"n_episodes must be an integer in \[2, 100,000\]"),
        ({"ent_coef": -0.01}, "ent_coef must be a finite number >= 0 or a schedule"),
        ({"ent_coef": float("inf")}, "ent_coef must be a finite number >= 0 or a schedule"),
        ({"ent_coef": "0.01"}, "ent_coef must be a finite number >= 0 or a schedule"),
        ({"baseline": "median"}, "baseline must be one of"),
        ({"baseline": "mean", "gae_lambda": 0.95}, "gae_lambda=0.95 needs baseline='value'"),
        ({"baseline": "loo", "gae_lambda": 0.95}, "gae_lambda=0.95 needs baseline='value'"),
        ({"baseline": "loo", "group_size": 0}, r"group_size must be an integer >= 1 that divides n_episodes=16"),
        ({"baseline": "loo", "group_size": 1.5}, r"group_size must be an integer >= 1 that divides n_episodes"),
        ({"baseline": "loo", "group_size": True}, r"group_size must be an integer >= 1 that divides n_episodes"),
        ({"baseline": "grpo", "group_size": 3}, r"group_size must be .* divides n_episodes=16 .*, got 3"),
        ({"baseline": "value", "group_size": 2}, "group_size=2 needs baseline 'loo' or 'grpo'"),
        ({"baseline": "mean", "group_size": 2}, "group_size=2 needs baseline 'loo' or 'grpo'"),
        ({"baseline": "none", "group_size": 4}, "group_size=4 needs baseline 'loo' or 'grpo'"),
        ({"baseline": "loo", "group_size": 2}, "group_size=2 needs a number of envs that it divides"),
        ({"gae_lambda": 1.5}, "gae_lambda must be a number in"),
        ({"vf_coef": -1.0}, "vf_coef must be >= 0"),
        ({"max_grad_norm": 0.0}, "max_grad_norm must be > 0"),
        ({"learning_rate": -1e-3}, "learning_rate must be > 0"),
        ({"hang_guard_steps": 0}, "hang_guard_steps must be an integer >= 1"),
        ({"sde_sample_freq": 0}, "sde_sample_freq must be -1"),
        ({"use_sde": True}, "gSDE.*can only be used with continuous actions"),
    ],
)
def test_bad_hyperparameters_fail_before_the_env_is_touched(kwargs: dict[str, Any], message: str) -> None:
    class Untouchable(NeverEndingEnv):
        def reset(self, **_: Any) -> Any:
            raise AssertionError("the env must not be reset before validation")

    with pytest.raises(ValueError, match=message):
        Reinforce("MlpPolicy", DummyVecEnv([Untouchable]), **kwargs)


def test_an_env_that_never_ends_raises() -> None:
    model = Reinforce(
        "MlpPolicy",
        DummyVecEnv([NeverEndingEnv] * 2),
        n_episodes=2,
        hang_guard_steps=1000,
        device="cpu",
        policy_kwargs=TINY,
    )
    with pytest.raises(RuntimeError, match=r"without ending an episode \(hang_guard_steps=1000\)"):
        model.learn(10_000)


def test_nan_rewards_stop_training_with_the_update_named() -> None:
    class NanEnv(ScriptedEnv):
        def step(self, action: int) -> Any:
            obs, _, terminated, truncated, info = super().step(action)
            return obs, float("nan"), terminated, truncated, info

    model = Reinforce("MlpPolicy", DummyVecEnv([lambda: NanEnv([3])]), n_episodes=2, device="cpu", policy_kwargs=TINY)
    before = policy_state(model)
    with pytest.raises(FloatingPointError, match=r"non-finite loss \(nan\) at update 1 \(num_timesteps=6\)"):
        model.learn(100)
    assert_unchanged(model, before)


def test_sb3_machinery_works_unchanged(tmp_path: Path) -> None:
    env = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=0))
    eval_env = VecNormalize(make_vec_env("CartPole-v1", n_envs=1, seed=1), training=False)
    model = Reinforce(
        "MlpPolicy",
        env,
        n_episodes=4,
        baseline="value",  # the critic's keys are checked in the csv too
        seed=0,
        device="auto",
        verbose=0,
        policy_kwargs=TINY,
        tensorboard_log=str(tmp_path / "tb"),
    )
    callbacks = [
        EvalCallback(eval_env, eval_freq=200, n_eval_episodes=2, best_model_save_path=str(tmp_path / "best")),
        CheckpointCallback(save_freq=300, save_path=str(tmp_path / "ckpt")),
    ]
    model.learn(1200, callback=callbacks, progress_bar=True)
    assert (tmp_path / "best" / "best_model.zip").exists()
    assert list((tmp_path / "ckpt").glob("*.zip"))
    events = list((tmp_path / "tb").rglob("events.out.tfevents.*"))
    assert events
    assert events[0].parent.name.startswith("Reinforce")
    mean, _ = evaluate_policy(model, model.get_env(), n_eval_episodes=3)  # type: ignore[arg-type]
    assert mean > 0
    model.set_logger(configure(str(tmp_path / "csv"), ["csv"]))
    model.learn(400, reset_num_timesteps=False)
    header = (tmp_path / "csv" / "progress.csv").read_text().splitlines()[0].split(",")
    for key in (
        "train/entropy",
        "train/grad_norm",
        "train/policy_loss",
        "train/value_loss",
        "train/explained_variance",
        "rollout/unused_frac",
        "rollout/ep_rew_mean",
    ):
        assert key in header, key


def test_subprocess_envs() -> None:
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0, vec_env_cls=SubprocVecEnv)
    try:
        model = Reinforce("MlpPolicy", env, n_episodes=2, seed=0, device="cpu", policy_kwargs=TINY).learn(100)
        assert model._n_updates >= 1
    finally:
        env.close()


def test_string_env_and_gym_env() -> None:
    assert Reinforce("MlpPolicy", "CartPole-v1", n_episodes=2, device="cpu").learn(50).num_timesteps >= 50
    assert (
        Reinforce("MlpPolicy", gym.make("Acrobot-v1", max_episode_steps=20), n_episodes=2, device="cpu")
        .learn(50)
        .num_timesteps
        >= 40
    )


def test_gsde_learns_a_continuous_target_and_round_trips(tmp_path: Path) -> None:
    # With a new noise matrix every step, gSDE's draws are independent and the policy mean must reach a = x.
    model = Reinforce(
        "MlpPolicy", TargetEnv(), n_episodes=16, gamma=0.0, learning_rate=3e-3, use_sde=True, sde_sample_freq=1,
        seed=0, device="cpu", policy_kwargs={"net_arch": [32]},
    )  # fmt: skip
    assert model.fast_actor is None
    assert model.fast_actor_reason == "gSDE/squashed actions"
    model.learn(30_000)
    targets = np.linspace(-0.9, 0.9, 7, dtype=np.float32)[:, None]
    actions, _ = model.predict(targets, deterministic=True)
    assert np.abs(actions - targets).max() < 0.15, actions.ravel()
    model.save(tmp_path / "sde")
    loaded = Reinforce.load(tmp_path / "sde", device="cpu")
    assert loaded.use_sde
    assert loaded.sde_sample_freq == 1
    np.testing.assert_array_equal(loaded.predict(targets, deterministic=True)[0], actions)


@pytest.mark.parametrize("sde_sample_freq", [-1, 1, 3])
def test_gsde_noise_is_drawn_at_each_collection_and_every_sde_sample_freq_steps(sde_sample_freq: int) -> None:
    model = Reinforce(
        "MlpPolicy", DummyVecEnv([lambda: TargetEnv(length=7)] * 2), n_episodes=4, use_sde=True,
        sde_sample_freq=sde_sample_freq, seed=0, device="cpu", policy_kwargs=TINY,
    )  # fmt: skip
    draws: list[int] = []
    original = model.policy.reset_noise

    def counting_reset_noise(n_envs: int = 1) -> None:
        draws.append(n_envs)
        original(n_envs)

    model.policy.reset_noise = counting_reset_noise  # type: ignore[method-assign]
    collect(model)
    steps = model.rollout_buffer.n_steps
    assert steps == 14
    expected = 1 if sde_sample_freq == -1 else 1 + (steps - 1) // sde_sample_freq
    assert draws == [2] * expected


def test_squashed_gsde_actions_are_rescaled_to_the_bounds_not_clipped() -> None:
    env = TargetEnv()
    model = Reinforce(
        "MlpPolicy", env, n_episodes=4, use_sde=True, seed=0, device="cpu",
        policy_kwargs={**TINY, "squash_output": True, "log_std_init": 1.0},
    )  # fmt: skip
    collect(model)
    buffer = model.rollout_buffer
    stored = buffer.actions[: buffer.n_steps, 0, 0]
    assert np.abs(stored).max() <= 1.0
    # The env gets the squashed action mapped from [-1, 1] onto its bounds [-2, 2].
    np.testing.assert_allclose(env.received, 2.0 * stored, rtol=1e-6)
    assert np.abs(env.received).max() > 1.0


# SB3's load() builds the model with the constructor's defaults and then writes the saved data and its own keyword
# arguments over the attributes, so the constructor's checks never see them: these cases went through unchecked.
LOAD_CASES: list[tuple[dict[str, Any], str]] = [
    ({"n_episodes": -3}, r"n_episodes must be an integer in \[2, 100,000\] .*got -3"),
    ({"learning_rate": float("nan")}, r"learning_rate must be > 0 and finite, or a schedule, got nan"),
    ({"baseline": "bogus"}, r"baseline must be one of \('none', 'mean', 'value', 'loo', 'grpo'\), got 'bogus'"),
    ({"gamma": 2}, r"gamma must be a number in \[0, 1\], got 2"),
    ({"vf_coef": "abc"}, r"vf_coef must be >= 0 and finite, got 'abc'"),
    ({"max_grad_norm": [0.5]}, r"max_grad_norm must be > 0 or None \(no clipping\), got \[0.5\]"),
    ({"group_size": 2}, r"group_size=2 needs baseline 'loo' or 'grpo'"),  # the saved model's baseline is "value"
    ({"hang_guard_steps": 0}, r"hang_guard_steps must be an integer >= 1, got 0"),
    ({"vf_batch_size": 0}, r"vf_batch_size must be an integer >= 1 or None"),
]


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("saved") / "model.zip"
    # With the critic: the group_size case checks a keyword against the saved baseline, which must refuse groups.
    model = Reinforce("MlpPolicy", "CartPole-v1", n_episodes=4, baseline="value", device="cpu", policy_kwargs=TINY)
    model.save(path)
    return path


@pytest.mark.parametrize(("kwargs", "message"), LOAD_CASES, ids=lambda value: str(value))
def test_load_checks_the_hyperparameters_it_is_given_as_the_constructor_does(
    saved_model: Path, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Reinforce.load(saved_model, device="cpu", **kwargs)
    # With an env too: rl_zoo3's --trained-agent loads so, with the entry's hyperparameters as keywords.
    with pytest.raises(ValueError, match=message):
        Reinforce.load(saved_model, env=make_vec_env("CartPole-v1", n_envs=2), device="cpu", **kwargs)


def test_load_takes_valid_hyperparameters_and_trains_with_them(saved_model: Path) -> None:
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    model = Reinforce.load(saved_model, env=env, device="cpu", n_episodes=2, gamma=0.9, vf_coef=np.float32(1.0))
    assert (model.n_episodes, model.gamma, model.vf_coef) == (2, 0.9, 1.0)
    model.learn(20)
    assert model._n_updates >= 1
    assert len(batch_episodes(model)) == 2


def test_a_saved_model_with_an_unknown_baseline_is_a_value_error_naming_it(saved_model: Path, tmp_path: Path) -> None:
    edited = tmp_path / "edited.zip"
    with zipfile.ZipFile(saved_model) as source, zipfile.ZipFile(edited, "w") as target:
        for item in source.infolist():
            content = source.read(item)
            if item.filename == "data":
                data = json.loads(content)
                assert data["baseline"] == "value"
                data["baseline"] = "bogus"
                content = json.dumps(data).encode()
            target.writestr(item, content)
    with pytest.raises(ValueError, match=r"baseline must be one of .*, got 'bogus'"):
        Reinforce.load(edited, device="cpu")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"vf_coef": "abc"}, r"vf_coef must be >= 0 and finite, got 'abc'"),
        ({"vf_coef": None}, r"vf_coef must be >= 0 and finite, got None"),
        ({"vf_coef": [0.5]}, r"vf_coef must be >= 0 and finite, got \[0.5\]"),
        ({"vf_coef": float("inf")}, r"vf_coef must be >= 0 and finite, got inf"),
        ({"vf_coef": True}, r"vf_coef must be >= 0 and finite, got True"),
        ({"max_grad_norm": "abc"}, r"max_grad_norm must be > 0 or None \(no clipping\), got 'abc'"),
        ({"max_grad_norm": [0.5]}, r"max_grad_norm must be > 0 or None \(no clipping\), got \[0.5\]"),
        ({"max_grad_norm": float("nan")}, r"max_grad_norm must be > 0 or None \(no clipping\), got nan"),
        ({"max_grad_norm": True}, r"max_grad_norm must be > 0 or None \(no clipping\), got True"),
        ({"vf_n_epochs": True}, r"vf_n_epochs must be an integer >= 1"),
        ({"vf_batch_size": True}, r"vf_batch_size must be an integer >= 1 or None"),
    ],
    ids=lambda value: str(value),
)
def test_a_value_that_is_not_a_number_is_named(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Reinforce("MlpPolicy", DummyVecEnv([NeverEndingEnv]), **kwargs)


def test_load_takes_the_frozen_learning_rate_of_sb3s_custom_objects(saved_model: Path) -> None:
    # rl_zoo3's enjoy loads every agent so, to skip the saved schedule; the constructor itself refuses a rate of 0.
    frozen = {"learning_rate": 0.0, "lr_schedule": lambda _: 0.0}
    model = Reinforce.load(saved_model, device="cpu", custom_objects=frozen)
    assert model.learning_rate == 0.0
    assert model.predict(np.zeros(4, dtype=np.float32), deterministic=True)[0] in (0, 1)
    with pytest.raises(ValueError, match=r"learning_rate must be > 0 and finite, or a schedule, got -0.001"):
        Reinforce.load(saved_model, device="cpu", custom_objects={"learning_rate": -1e-3})


def test_the_old_spellings_still_work_with_a_deprecation_warning() -> None:
    env = DummyVecEnv([NeverEndingEnv])
    with pytest.warns(DeprecationWarning, match="max_episode_steps is now hang_guard_steps"):
        model = Reinforce("MlpPolicy", env, max_episode_steps=7, policy_kwargs=TINY, device="cpu")
    assert model.hang_guard_steps == 7
    assert not hasattr(model, "max_episode_steps")
    with pytest.warns(DeprecationWarning, match=r"vf_n_epochs=0 .* pass vf_update='joint'"):
        joint = Reinforce("MlpPolicy", env, vf_n_epochs=0, policy_kwargs=TINY, device="cpu")
    assert joint.vf_update == "joint"
    assert not joint.fits_critic
    assert joint.vf_optimizer is None


def rewrite_saved_data(path: Any, change: Any) -> None:
    """Apply ``change`` to the JSON data of an SB3 zip, in place: a model as an older version saved it."""
    with zipfile.ZipFile(path) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(files["data"])
    change(data)
    files["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)


def test_a_zip_saved_before_the_renames_loads_as_it_was_saved(tmp_path: Any) -> None:
    """Before: ``max_episode_steps`` for the hang guard, and ``vf_n_epochs=0`` (no ``vf_update``) for the joint
    critic update. SB3's load() writes a zip's data under the names it was saved with."""
    model = Reinforce("MlpPolicy", DummyVecEnv([NeverEndingEnv]), hang_guard_steps=7, vf_update="joint", device="cpu")
    path = tmp_path / "old.zip"
    model.save(path)

    def as_before(data: dict[str, Any]) -> None:
        data["max_episode_steps"] = data.pop("hang_guard_steps")
        del data["vf_update"]
        data["vf_n_epochs"] = 0

    rewrite_saved_data(path, as_before)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an old zip is no user error: it loads without a warning
        loaded = Reinforce.load(path, device="cpu")
    assert loaded.hang_guard_steps == 7
    assert not hasattr(loaded, "max_episode_steps")
    assert loaded.vf_update == "joint"
    assert loaded.vf_optimizer is None
    for name, value in model.policy.state_dict().items():
        assert th.equal(value, loaded.policy.state_dict()[name]), name
