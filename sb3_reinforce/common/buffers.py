"""Drop-in Stable-Baselines3 rollout buffers whose GAE pass is a compiled kernel instead of a Python loop.

Use them through the ``rollout_buffer_class`` argument of any on-policy algorithm::

    from stable_baselines3 import PPO
    from sb3_reinforce.common.buffers import GAERolloutBuffer

    model = PPO("MlpPolicy", "CartPole-v1", rollout_buffer_class=GAERolloutBuffer)

Only :meth:`compute_returns_and_advantage` differs from SB3's classes: same constructor, fields, ``add`` and
``get``, and the same numbers (float32 results within float32 rounding of SB3's; see
:mod:`sb3_reinforce.common.gae` for the kernel). SB3 pickles ``rollout_buffer_class`` into saved models by its
import path, so this module path and these class names are permanent.
"""

from __future__ import annotations

import numpy as np
import torch as th
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer

from sb3_reinforce.common.gae import compute_gae_and_returns

__all__ = ["GAEDictRolloutBuffer", "GAERolloutBuffer"]


def _fill_advantages_and_returns(buffer: RolloutBuffer, last_values: th.Tensor, dones: np.ndarray) -> None:
    # Both outputs are written in place (SB3 rebinds `returns`; the values are the same). Shapes are checked by the
    # kernel: a buffer already flattened by get() raises instead of being silently mixed up.
    compute_gae_and_returns(
        buffer.rewards,
        buffer.values,
        buffer.episode_starts,
        last_values.detach().cpu().numpy().reshape(-1),
        np.asarray(dones).reshape(-1),
        buffer.gamma,
        buffer.gae_lambda,
        advantages_out=buffer.advantages,
        returns_out=buffer.returns,
    )


class GAERolloutBuffer(RolloutBuffer):
    """:class:`~stable_baselines3.common.buffers.RolloutBuffer` with a compiled, exact GAE pass.

    Constructor arguments, fields, ``add`` and ``get`` are SB3's. See
    :meth:`compute_returns_and_advantage` for the math.
    """

    def compute_returns_and_advantage(self, last_values: th.Tensor, dones: np.ndarray) -> None:
        """Fill ``advantages`` (GAE) and ``returns`` (TD(lambda) targets) for the collected rollout.

        For each env, with ``V_T = last_values``, ``start_T = dones`` and ``A_T = 0``:

        .. math::

            \\delta_t = r_t + \\gamma V_{t+1} (1 - start_{t+1}) - V_t, \\qquad
            A_t = \\delta_t + \\gamma \\lambda (1 - start_{t+1}) A_{t+1}, \\qquad
            R_t = A_t + V_t

        ``gae_lambda = 1`` gives Monte Carlo advantages (discounted return, bootstrapped at the rollout cut,
        minus V); ``gae_lambda = 0`` gives the one-step TD error. Time-limit truncations are handled upstream:
        SB3's ``collect_rollouts`` adds ``gamma * V(terminal_obs)`` to the truncated step's reward.

        :param last_values: value estimate of the observation after the last step, one per env.
        :param dones: whether the last step ended an episode, one bool per env.
        """
        _fill_advantages_and_returns(self, last_values, dones)


class GAEDictRolloutBuffer(DictRolloutBuffer):
    """:class:`~stable_baselines3.common.buffers.DictRolloutBuffer` (Dict observations) with the compiled GAE pass.

    Constructor arguments, fields, ``add`` and ``get`` are SB3's; the math is that of
    :meth:`GAERolloutBuffer.compute_returns_and_advantage`.
    """

    def compute_returns_and_advantage(self, last_values: th.Tensor, dones: np.ndarray) -> None:
        """Fill ``advantages`` (GAE) and ``returns`` (``advantages + values``) for the collected rollout.

        Same recursion as :meth:`GAERolloutBuffer.compute_returns_and_advantage`: GAE over the buffer with
        ``V_T = last_values`` and ``start_T = dones``.

        :param last_values: value estimate of the observation after the last step, one per env.
        :param dones: whether the last step ended an episode, one bool per env.
        """
        _fill_advantages_and_returns(self, last_values, dones)
