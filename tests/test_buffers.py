"""``GAERolloutBuffer`` / ``GAEDictRolloutBuffer`` are drop-in replacements for SB3's rollout buffers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.type_aliases import DictRolloutBufferSamples, RolloutBufferSamples

from sb3_reinforce.common.buffers import GAEDictRolloutBuffer, GAERolloutBuffer


class DictCorridorEnv(gym.Env):
    """A 1-D walk with a Dict observation; terminates off either end, truncates after 15 steps."""

    observation_space = spaces.Dict(
        {
            "position": spaces.Box(-2.0, 2.0, shape=(1,), dtype=np.float32),
            "clock": spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float32),
        }
    )
    action_space = spaces.Discrete(2)

    def __init__(self) -> None:
        self.position = 0.0
        self.steps = 0

    def _obs(self) -> dict[str, np.ndarray]:
        clock = np.array([self.steps / 15, 1.0 - self.steps / 15], dtype=np.float32)
        return {"position": np.array([self.position], dtype=np.float32), "clock": clock}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        self.position = float(self.np_random.uniform(-0.5, 0.5))
        self.steps = 0
        return self._obs(), {}

    def step(self, action: int) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        self.position += 0.3 if action == 1 else -0.3
        self.steps += 1
        terminated = abs(self.position) > 1.0
        reward = 1.0 + self.position if terminated else 0.1 * self.position
        return self._obs(), reward, terminated, self.steps >= 15 and not terminated, {}


def train(
    algo: type[PPO] | type[A2C], env_id: str | type[gym.Env[Any, Any]], buffer_class: type[RolloutBuffer] | None
) -> OnPolicyAlgorithm:
    env = make_vec_env(env_id, n_envs=2, seed=0)
    policy = "MultiInputPolicy" if isinstance(env.observation_space, spaces.Dict) else "MlpPolicy"
    kwargs: dict[str, Any] = {"batch_size": 32, "n_epochs": 2} if algo is PPO else {}
    model = algo(
        policy,
        env,
        n_steps=32,
        gae_lambda=0.9,
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [8]},
        rollout_buffer_class=buffer_class,
        **kwargs,
    )
    model.learn(total_timesteps=128)  # two rollouts of 2 x 32 steps, two updates
    return model


CASES = [
    pytest.param(PPO, "CartPole-v1", GAERolloutBuffer, RolloutBuffer, id="PPO-CartPole"),
    pytest.param(A2C, "CartPole-v1", GAERolloutBuffer, RolloutBuffer, id="A2C-CartPole"),
    pytest.param(PPO, DictCorridorEnv, GAEDictRolloutBuffer, DictRolloutBuffer, id="PPO-Dict"),
    pytest.param(A2C, DictCorridorEnv, GAEDictRolloutBuffer, DictRolloutBuffer, id="A2C-Dict"),
]


@pytest.mark.parametrize(("algo", "env_id", "ours", "sb3_default"), CASES)
def test_training_is_identical_to_sb3_buffer(
    algo: type[PPO] | type[A2C],
    env_id: str | type[gym.Env[Any, Any]],
    ours: type[RolloutBuffer],
    sb3_default: type[RolloutBuffer],
) -> None:
    reference = train(algo, env_id, None)
    model = train(algo, env_id, ours)
    untrained = algo(
        "MultiInputPolicy" if ours is GAEDictRolloutBuffer else "MlpPolicy",
        make_vec_env(env_id, n_envs=2, seed=0),
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [8]},
    )

    assert type(reference.rollout_buffer) is sb3_default
    assert type(model.rollout_buffer) is ours
    # Advantages agree to float32 rounding, so after two updates the parameters agree to ~1e-8; they moved by
    # ~1e-3 or more, so a wrong advantage anywhere would show far above the tolerance.
    trained, expected, initial = model.policy.state_dict(), reference.policy.state_dict(), untrained.policy.state_dict()
    assert max(float((expected[k] - initial[k]).abs().max()) for k in expected) > 1e-4
    for name, tensor in trained.items():
        th.testing.assert_close(tensor, expected[name], rtol=1e-5, atol=1e-6, msg=name)
    np.testing.assert_allclose(
        model.rollout_buffer.advantages, reference.rollout_buffer.advantages, rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(model.rollout_buffer.returns, reference.rollout_buffer.returns, rtol=1e-5, atol=1e-5)


def fill_twins(
    ours: type[RolloutBuffer], sb3: type[RolloutBuffer], observation_space: spaces.Space[Any], seed: int
) -> tuple[RolloutBuffer, RolloutBuffer]:
    """Two buffers (ours, SB3's) fed the same random transitions through ``add``, then post-processed."""
    n_steps, n_envs = 24, 3
    action_space = spaces.Box(-1, 1, shape=(2,), dtype=np.float32)
    buffers = [cls(n_steps, observation_space, action_space, "cpu", 0.9, 0.97, n_envs) for cls in (ours, sb3)]
    rng = np.random.default_rng(seed)
    observation_space.seed(seed)
    for _ in range(n_steps):
        obs = [observation_space.sample() for _ in range(n_envs)]
        batched: Any
        if isinstance(observation_space, spaces.Dict):
            batched = {key: np.stack([o[key] for o in obs]) for key in observation_space.spaces}
        else:
            batched = np.stack(obs)
        action = rng.uniform(-1, 1, (n_envs, 2)).astype(np.float32)
        reward = rng.standard_normal(n_envs).astype(np.float32)
        start = rng.random(n_envs) < 0.2
        value = th.as_tensor(rng.standard_normal((n_envs, 1)), dtype=th.float32)
        log_prob = th.as_tensor(rng.standard_normal(n_envs), dtype=th.float32)
        for buffer in buffers:
            buffer.add(batched, action, reward, start, value, log_prob)
    last_values = th.as_tensor(rng.standard_normal((n_envs, 1)), dtype=th.float32)
    dones = np.array([True, False, False])
    for buffer in buffers:
        buffer.compute_returns_and_advantage(last_values.clone(), dones.copy())
    return buffers[0], buffers[1]


@pytest.mark.parametrize(
    ("ours", "sb3", "observation_space", "samples_type"),
    [
        (GAERolloutBuffer, RolloutBuffer, spaces.Box(-1, 1, shape=(4,), dtype=np.float32), RolloutBufferSamples),
        (
            GAEDictRolloutBuffer,
            DictRolloutBuffer,
            spaces.Dict({"a": spaces.Box(-1, 1, shape=(3,)), "b": spaces.Discrete(5)}),
            DictRolloutBufferSamples,
        ),
    ],
    ids=["box", "dict"],
)
def test_buffer_fields_and_samples_match_sb3(
    ours: type[RolloutBuffer], sb3: type[RolloutBuffer], observation_space: spaces.Space[Any], samples_type: type
) -> None:
    mine, theirs = fill_twins(ours, sb3, observation_space, seed=11)

    assert isinstance(mine, sb3)
    for field in ("advantages", "returns"):
        ours_array, sb3_array = getattr(mine, field), getattr(theirs, field)
        assert ours_array.dtype == np.float32
        assert ours_array.shape == sb3_array.shape == (24, 3)
        np.testing.assert_allclose(ours_array, sb3_array, rtol=1e-5, atol=1e-5, err_msg=field)
    assert np.abs(mine.advantages).max() > 0.1

    np.random.seed(0)  # noqa: NPY002 (SB3's get() shuffles with the legacy global generator)
    ours_batches = list(mine.get(batch_size=20))
    np.random.seed(0)  # noqa: NPY002
    sb3_batches = list(theirs.get(batch_size=20))

    assert len(ours_batches) == len(sb3_batches) == 4  # 72 transitions in batches of 20
    for ours_batch, sb3_batch in zip(ours_batches, sb3_batches, strict=True):
        assert type(ours_batch) is type(sb3_batch) is samples_type
        for name, ours_value, sb3_value in zip(ours_batch._fields, ours_batch, sb3_batch, strict=True):
            if isinstance(sb3_value, dict):
                assert ours_value.keys() == sb3_value.keys()
                for key in sb3_value:
                    th.testing.assert_close(ours_value[key], sb3_value[key], rtol=0, atol=0, msg=f"{name}.{key}")
            elif name in ("advantages", "returns"):
                th.testing.assert_close(ours_value, sb3_value, rtol=1e-5, atol=1e-5, msg=name)
            else:
                th.testing.assert_close(ours_value, sb3_value, rtol=0, atol=0, msg=name)


def test_recompute_after_reset_and_returns_definition() -> None:
    mine, _ = fill_twins(GAERolloutBuffer, RolloutBuffer, spaces.Box(-1, 1, shape=(2,)), seed=3)
    first = mine.advantages.copy()

    mine.compute_returns_and_advantage(th.zeros(3, 1), np.ones(3, dtype=bool))  # all envs done: no bootstrap

    np.testing.assert_array_equal(mine.returns, mine.advantages + mine.values)
    assert not np.array_equal(mine.advantages[-1], first[-1])  # the bootstrap of the last row changed
    mine.reset()
    mine.compute_returns_and_advantage(th.zeros(3, 1), np.zeros(3, dtype=bool))
    np.testing.assert_array_equal(mine.advantages, 0.0)


def test_flattened_buffer_is_rejected_not_mixed_up() -> None:
    mine, _ = fill_twins(GAERolloutBuffer, RolloutBuffer, spaces.Box(-1, 1, shape=(2,)), seed=4)
    list(mine.get(batch_size=8))  # flattens the (T, N) arrays to (T * N, 1)

    with pytest.raises(ValueError, match="values must have the shape"):
        mine.compute_returns_and_advantage(th.zeros(3, 1), np.zeros(3, dtype=bool))


def test_saved_model_reloads_with_our_buffer(tmp_path: Path) -> None:
    model = PPO(
        "MlpPolicy", "CartPole-v1", n_steps=16, batch_size=16, rollout_buffer_class=GAERolloutBuffer, device="cpu"
    )
    model.save(tmp_path / "model.zip")

    loaded = PPO.load(tmp_path / "model.zip", env=make_vec_env("CartPole-v1"), device="cpu")

    assert loaded.rollout_buffer_class is GAERolloutBuffer
    assert type(loaded.rollout_buffer) is GAERolloutBuffer


def test_benchmark_script_smoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark runs end to end on a tiny shape and writes its table (timings themselves are not tested)."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "gae_buffer.py"
    spec = importlib.util.spec_from_file_location("gae_buffer_benchmark", script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)

    argv = ["--shapes", "8x2", "3x40", "--repeats", "2", "--warmup", "1", "--sample-seconds", "1e-4"]
    status = module.main([*argv, "--no-first-call", "--output-dir", str(tmp_path)])

    assert status == 0
    table = (tmp_path / "gae_buffer.md").read_text()
    assert "| (8, 2) |" in table
    assert "| (3, 40) |" in table
    rows = (tmp_path / "gae_buffer.csv").read_text().splitlines()
    assert rows[0].startswith("n_steps,n_envs,sb3_median_ms,ours_median_ms")
    assert len(rows) == 3
    assert all(float(row.split(",")[-1]) < 1e-4 for row in rows[1:])  # max |ours - SB3| on the advantages
