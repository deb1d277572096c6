"""A lean acting path: sample from an SB3 ``ActorCriticPolicy``'s distribution without torch on the hot loop.

REINFORCE spends nearly all its wall-clock collecting data, and for the small MLPs of classic-control tasks a
torch forward pass with its distribution objects costs more than the environment step itself. During a
collection the parameters are frozen (the batch must be exactly on-policy), so the actor can be copied into
preallocated numpy arrays once per collection and evaluated with in-place numpy kernels: one forward pass for
all envs per vector step, no per-step allocation, no log-probabilities or values (they are recomputed in the
update's single batched pass).

Sampling is exact, not an approximation of the policy:

- Categorical (``Discrete``, each part of ``MultiDiscrete``): Gumbel-max. ``argmax_i(logit_i - log E_i)`` with
  ``E_i ~ Exp(1)`` i.i.d. is distributed as ``softmax(logits)``, since ``-log E`` is a standard Gumbel variable.
  No normalization and no softmax are computed.
- Bernoulli (``MultiBinary``): ``1[U < sigmoid(logit)]`` with ``U ~ Uniform[0, 1)``.
- Diagonal Gaussian (``Box``): ``mean + exp(log_std) * Z`` with ``Z ~ N(0, 1)``; the sampled action is stored
  unclipped (it is the one scored) and clipped to the bounds only for the env, exactly as SB3 does.

It covers what such a policy usually is: a flattened ``Box``/``Discrete`` observation, an actor MLP of
``Linear`` layers with Tanh/ReLU/Identity activations, on the CPU, without gSDE or squashing. Anything else
(CNN or Dict observations, custom extractors or activations, a CUDA device) returns ``None`` from
:meth:`NumpyActor.from_policy` with the reason, and the caller uses the policy's own torch path.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch as th
from gymnasium import spaces
from numpy.typing import NDArray
from stable_baselines3.common.distributions import (
    BernoulliDistribution,
    CategoricalDistribution,
    DiagGaussianDistribution,
    MultiCategoricalDistribution,
)
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.torch_layers import FlattenExtractor
from torch import nn


def _tanh(h: NDArray[np.float32]) -> None:
    np.tanh(h, out=h)


def _relu(h: NDArray[np.float32]) -> None:
    np.maximum(h, 0.0, out=h)


NOISE_BLOCK = 128

_ACTIVATIONS: dict[type[nn.Module], Callable[[NDArray[np.float32]], None]] = {nn.Tanh: _tanh, nn.ReLU: _relu}


def _actor_layers(policy: ActorCriticPolicy) -> list[tuple[nn.Linear, Callable[[NDArray[np.float32]], None] | None]]:
    """The actor as ``[(linear, activation or None), ...]``, ending with the action head; raises if not plain."""
    layers: list[tuple[nn.Linear, Callable[[NDArray[np.float32]], None] | None]] = []
    for module in policy.mlp_extractor.policy_net:
        if isinstance(module, nn.Linear):
            layers.append((module, None))
        elif type(module) in _ACTIVATIONS and layers and layers[-1][1] is None:
            layers[-1] = (layers[-1][0], _ACTIVATIONS[type(module)])
        elif not isinstance(module, nn.Identity):
            raise TypeError(f"actor layer {module!r} is not Linear/Tanh/ReLU")
    if not isinstance(policy.action_net, nn.Linear):
        raise TypeError("the action head is not a single Linear layer")
    layers.append((policy.action_net, None))
    return layers


def unsupported_reason(policy: th.nn.Module, observation_space: spaces.Space) -> str | None:
    """Why the numpy actor cannot stand in for ``policy`` (``None`` when it can)."""
    if not isinstance(policy, ActorCriticPolicy):
        return f"policy {type(policy).__name__} is not an ActorCriticPolicy"
    # A subclass may change how actions are drawn; only the stock computation is reproduced.
    for method in ("forward", "get_distribution", "extract_features", "_get_action_dist_from_latent"):
        if getattr(type(policy), method) is not getattr(ActorCriticPolicy, method):
            return f"{type(policy).__name__} overrides {method}"
    if policy.device.type != "cpu":
        return f'device is {policy.device.type}: the numpy actor runs on the CPU (device="cpu" to use it)'
    if policy.use_sde or policy.squash_output:
        return "gSDE/squashed actions"
    if not isinstance(policy.pi_features_extractor, FlattenExtractor):
        return f"features extractor {type(policy.pi_features_extractor).__name__}"
    if not isinstance(observation_space, (spaces.Box, spaces.Discrete)):
        return f"observation space {type(observation_space).__name__}"
    if isinstance(observation_space, spaces.Box) and is_image_space(observation_space):
        return "image observations"
    if not isinstance(
        policy.action_dist,
        (CategoricalDistribution, MultiCategoricalDistribution, BernoulliDistribution, DiagGaussianDistribution),
    ):
        return f"action distribution {type(policy.action_dist).__name__}"
    try:
        _actor_layers(policy)
    except TypeError as error:
        return str(error)
    return None


class NumpyActor:
    """Samples actions of an ``ActorCriticPolicy`` for ``n_envs`` observations at once with numpy.

    Call :meth:`sync` whenever the policy's parameters may have changed (once per collection), then
    :meth:`act` once per vector step.
    """

    def __init__(
        self,
        policy: ActorCriticPolicy,
        observation_space: spaces.Box | spaces.Discrete,
        action_space: spaces.Space,
        n_envs: int,
        rng: np.random.Generator,
    ) -> None:
        self.policy = policy
        self.action_space = action_space
        self.rng = rng
        self._layers = _actor_layers(policy)
        self._weights = [np.empty((lin.in_features, lin.out_features), dtype=np.float32) for lin, _ in self._layers]
        self._biases = [np.zeros(lin.out_features, dtype=np.float32) for lin, _ in self._layers]
        self._hidden = [np.empty((n_envs, lin.out_features), dtype=np.float32) for lin, _ in self._layers]
        self._one_hot_n = int(observation_space.n) if isinstance(observation_space, spaces.Discrete) else 0
        self._input = np.zeros((n_envs, self._layers[0][0].in_features), dtype=np.float32)
        head = self._hidden[-1]
        self._noise = np.empty_like(head)
        # The noise does not depend on the parameters, so it is drawn for NOISE_BLOCK steps at a time: one
        # generator call (and, for Gumbel noise, one log) per block instead of per step. Still i.i.d. draws.
        self._noise_block = np.empty((NOISE_BLOCK, *head.shape), dtype=np.float32)
        self._noise_next = NOISE_BLOCK
        self._log_std: NDArray[np.float32] | None = None
        if isinstance(action_space, spaces.MultiDiscrete):
            self._splits = np.cumsum(np.asarray(action_space.nvec, dtype=np.int64).reshape(-1))[:-1]
        if isinstance(action_space, spaces.Box):
            self._log_std = np.zeros(head.shape[1], dtype=np.float32)
            self._std = np.ones_like(self._log_std)
        self.sync()

    @classmethod
    def from_policy(
        cls,
        policy: th.nn.Module,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        n_envs: int,
        rng: np.random.Generator,
    ) -> tuple[NumpyActor | None, str | None]:
        """The actor, or ``(None, reason)`` when the policy is outside what it reproduces."""
        reason = unsupported_reason(policy, observation_space)
        if reason is not None:
            return None, reason
        assert isinstance(policy, ActorCriticPolicy)
        assert isinstance(observation_space, (spaces.Box, spaces.Discrete))
        return cls(policy, observation_space, action_space, n_envs, rng), None

    def sync(self) -> None:
        """Copy the policy's current actor parameters (``W`` transposed so a row-major batch multiplies it)."""
        with th.no_grad():
            for (linear, _), weight, bias in zip(self._layers, self._weights, self._biases, strict=True):
                np.copyto(weight, linear.weight.detach().numpy().T)
                if linear.bias is not None:
                    np.copyto(bias, linear.bias.detach().numpy())
            if self._log_std is not None:
                np.copyto(self._log_std, self.policy.log_std.detach().numpy())
                np.exp(self._log_std, out=self._std)

    def discard_noise(self) -> None:
        """Drop the rest of the pre-drawn block, so that the next draw comes fresh from ``rng``: a collection
        that starts here then depends on the generator's state alone (which a saved model keeps), not on how
        many steps earlier collections took."""
        self._noise_next = NOISE_BLOCK

    def logits(self, observations: NDArray[np.generic]) -> NDArray[np.float32]:
        """The action head's output (logits, or the Gaussian mean) for a ``(n_envs, ...)`` batch."""
        x = self._input
        if self._one_hot_n:
            x.fill(0.0)
            x[np.arange(x.shape[0]), observations.reshape(-1)] = 1.0
        else:
            np.copyto(x, observations.reshape(x.shape), casting="unsafe")
        for (_, activation), weight, bias, out in zip(
            self._layers, self._weights, self._biases, self._hidden, strict=True
        ):
            np.matmul(x, weight, out=out)
            out += bias
            if activation is not None:
                activation(out)
            x = out
        return x

    def _draw_noise(self) -> NDArray[np.float32]:
        """The next step's noise: ``log E`` (E ~ Exp(1)) for categorical heads, U[0, 1) for Bernoulli, N(0, 1)
        for Gaussian ones."""
        if self._noise_next == NOISE_BLOCK:
            block = self._noise_block
            dist = self.policy.action_dist
            if isinstance(dist, (CategoricalDistribution, MultiCategoricalDistribution)):
                # Drawn in float64: a float32 draw is exactly 0 about once in 2**24, and log(0) = -inf would pick
                # that action whatever its probability. The clamp guards the float64 draw the same way.
                exponential = self.rng.standard_exponential(size=block.shape)
                np.maximum(exponential, np.finfo(np.float64).tiny, out=exponential)
                np.log(exponential, out=exponential)
                block[...] = exponential
            elif isinstance(dist, BernoulliDistribution):
                # float64 for the same reason: U = 0 would force a 1 whatever its probability.
                block[...] = self.rng.random(size=block.shape)
            else:
                self.rng.standard_normal(dtype=np.float32, out=block)
            self._noise_next = 0
        noise = self._noise_block[self._noise_next]
        self._noise_next += 1
        return noise

    def act(self, observations: NDArray[np.generic], actions: NDArray[np.generic]) -> None:
        """Sample one action per env for ``observations`` into ``actions`` (a buffer row, written in place)."""
        logits = self.logits(observations)
        noise = self._draw_noise()
        scratch = self._noise
        dist = self.policy.action_dist
        if isinstance(dist, CategoricalDistribution):
            np.subtract(logits, noise, out=scratch)
            np.argmax(scratch, axis=1, out=actions)  # type: ignore[type-var]
        elif isinstance(dist, MultiCategoricalDistribution):
            np.subtract(logits, noise, out=scratch)
            for index, part in enumerate(np.split(scratch, self._splits, axis=1)):
                actions[:, index] = part.argmax(axis=1)
        elif isinstance(dist, BernoulliDistribution):
            # U < sigmoid(l)  <=>  U * (1 + exp(-l)) < 1, which needs no division
            np.negative(logits, out=logits)
            np.exp(logits, out=logits)
            logits += 1.0
            np.multiply(noise, logits, out=scratch)
            np.less(scratch, 1.0, out=actions, casting="unsafe")
        else:
            assert self._log_std is not None
            np.multiply(noise, self._std, out=scratch)
            np.add(logits, scratch, out=actions)
