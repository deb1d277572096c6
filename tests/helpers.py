"""Shared test helpers: run one collection by hand and read the batch back as episodes; a valid run record."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from sb3_reinforce import Reinforce


def collect(model: Reinforce, callback: BaseCallback | None = None) -> None:
    """One collection of ``model.n_episodes`` episodes, exactly as ``learn`` does it (no update)."""
    _, prepared = model._setup_learn(10**9, callback)
    assert model.env is not None
    assert model.collect_rollouts(model.env, prepared, model.rollout_buffer)


def batch_episodes(model: Reinforce) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The collected batch as ``[(observations, actions, rewards), ...]``, one entry per counted episode."""
    buffer = model.rollout_buffer
    episodes = []
    for env in range(buffer.n_envs):
        start = 0
        for t in range(int(buffer.valid_len[env])):
            if buffer.episode_ends[t, env]:
                sl = slice(start, t + 1)
                observations = buffer.observations[sl, env]  # type: ignore[call-overload]
                episodes.append((observations, buffer.actions[sl, env], buffer.rewards[sl, env]))
                start = t + 1
    return episodes


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a failing CLI command printed on stderr (asserting it is one ``error:`` line, no traceback)."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert "Traceback" not in err
    return lines[0]


def policy_state(model: Reinforce) -> dict[str, th.Tensor]:
    """A copy of the policy's parameters and buffers, by name."""
    return {key: value.clone() for key, value in model.policy.state_dict().items()}


def assert_unchanged(model: Reinforce, before: dict[str, th.Tensor]) -> None:
    """Every parameter of the policy is bit for bit what ``before`` recorded."""
    for key, value in policy_state(model).items():
        th.testing.assert_close(value, before[key], rtol=0, atol=0, msg=key)


def run_record(algo: str = "reinforce", env_id: str = "CartPole-v1", seed: int = 0) -> dict[str, Any]:
    """A benchmark run's result.json that the readers accept: every field, finite, two curve points."""
    return {
        "algo": algo,
        "env_id": env_id,
        "seed": seed,
        "n_timesteps": 100,
        "mean_reward": 10.0,
        "std_reward": 1.0,
        "train_seconds": 1.0,
        "train_cpu_seconds": 1.0,
        "curve_timesteps": [50, 100],
        "curve_mean_reward": [5.0, 10.0],
    }
