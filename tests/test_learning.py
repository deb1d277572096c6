"""Each variant solves CartPole-v1: a 20-episode deterministic evaluation mean >= 475 within a stated budget.

Training stops as soon as an evaluation (every 40,000 env steps) reaches 475, so the budget is an upper bound.
Measured with seed 0 by these tests: reference 360k steps, entropy 200k, vectorized 280k, the constructor's
defaults (``Reinforce("MlpPolicy", env)``, the leave-one-out baseline) 80k, and the defaults with the fitted critic
(``baseline="value"``, 2 passes of 256-step minibatches) 120k; each under a minute on 2 cores, so none is marked
slow.
"""

from __future__ import annotations

from typing import Any

import pytest
from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
from stable_baselines3.common.env_util import make_vec_env

from sb3_reinforce import Reinforce
from sb3_reinforce.variants import VARIANTS

SOLVED = 475.0
N_ENVS = 8
# (variant kwargs, env-step budget)
CASES: dict[str, tuple[dict[str, Any], int]] = {
    "reference": (VARIANTS["reference"], 1_500_000),
    "entropy": (VARIANTS["entropy"], 1_500_000),
    "vectorized": (VARIANTS["vectorized"], 1_500_000),
    "default": ({}, 600_000),
    "default_value": ({"baseline": "value"}, 600_000),
}


@pytest.mark.parametrize("variant", list(CASES))
def test_variant_solves_cartpole(variant: str) -> None:
    kwargs, budget = CASES[variant]
    env = make_vec_env("CartPole-v1", n_envs=N_ENVS, seed=0)
    model = Reinforce("MlpPolicy", env, seed=0, device="cpu", **kwargs)
    evaluation = EvalCallback(
        make_vec_env("CartPole-v1", n_envs=4, seed=1000),
        eval_freq=40_000 // N_ENVS,
        n_eval_episodes=20,
        deterministic=True,
        callback_on_new_best=StopTrainingOnRewardThreshold(reward_threshold=SOLVED),
        verbose=0,
    )
    model.learn(budget, callback=evaluation)
    assert evaluation.best_mean_reward >= SOLVED, (
        f"{variant}: best 20-episode mean {evaluation.best_mean_reward} after {model.num_timesteps} steps"
    )
    print(f"{variant}: solved at {model.num_timesteps} steps")
