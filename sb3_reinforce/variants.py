"""The three REINFORCE variants of the design documents, as constructor keyword arguments.

``Reinforce("MlpPolicy", env, **VARIANTS["reference"])`` reproduces that variant's estimator and defaults:

- ``reference``: linear softmax policy (no hidden layer), batch-mean baseline, plain SGD, no entropy bonus, no
  advantage normalization, no gradient clipping. SB3's linear head carries a bias, the reference's weights do
  not: the bias is the weight of a constant feature, and its gradient has the same closed form.
  The reference divides its summed gradient by the number of episodes; ``Reinforce`` averages over steps, so
  the same ``learning_rate`` takes steps ``n_episodes / B`` times the reference's (B = steps in the batch).
- ``entropy``: (64, 64) tanh MLP, Adam 3e-4, entropy bonus 0.01, gradient clipping at 0.5, normalized
  advantages (normalizing the raw returns-to-go already subtracts their batch mean, so no separate baseline).
- ``vectorized``: the ``entropy`` objective sized for many parallel envs: a batch of 32 episodes, meant for a
  VecEnv of 8-32 envs (``make_vec_env(env_id, n_envs=16)``), each collected with one forward pass per vector step.

The values are plain data (numbers, strings, lists and two torch classes) so they can be printed, compared and
stored in a config next to the model.
"""

from typing import Any

import torch as th

VARIANTS: dict[str, dict[str, Any]] = {
    "reference": {
        "policy_kwargs": {"net_arch": {"pi": [], "vf": []}, "optimizer_class": th.optim.SGD},
        "baseline": "mean",
        "learning_rate": 0.01,
        "n_episodes": 10,
        "gamma": 0.99,
        "ent_coef": 0.0,
        "normalize_advantage": False,
        "max_grad_norm": None,
    },
    "entropy": {
        "policy_kwargs": {"net_arch": {"pi": [64, 64], "vf": [64, 64]}, "activation_fn": th.nn.Tanh},
        "baseline": "none",
        "learning_rate": 3e-4,
        "n_episodes": 16,
        "gamma": 0.99,
        "ent_coef": 0.01,
        "normalize_advantage": True,
        "max_grad_norm": 0.5,
    },
    "vectorized": {
        "policy_kwargs": {"net_arch": {"pi": [64, 64], "vf": [64, 64]}, "activation_fn": th.nn.Tanh},
        "baseline": "none",
        "learning_rate": 3e-4,
        "n_episodes": 32,
        "gamma": 0.99,
        "ent_coef": 0.01,
        "normalize_advantage": True,
        "max_grad_norm": 0.5,
    },
}
