"""The critic of ``baseline="value"``: its own parameters, and its fit to a batch's fixed targets."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
import torch as th
from stable_baselines3.common.policies import ActorCriticPolicy, BaseModel
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch.nn import functional as F

Observations = th.Tensor | dict[str, th.Tensor]


def _take(features: Observations, rows: slice | th.Tensor) -> Observations:
    if isinstance(features, dict):
        return {key: value[rows] for key, value in features.items()}
    return features[rows]


def _features(policy: ActorCriticPolicy, observations: Observations, extractor: BaseFeaturesExtractor) -> th.Tensor:
    # ActorCriticPolicy.extract_features ignores the extractor it is given when extractors are not shared.
    return cast(th.Tensor, BaseModel.extract_features(policy, observations, extractor))


def critic_parameters(policy: ActorCriticPolicy) -> list[th.nn.Parameter]:
    """The parameters that belong to the critic alone: ``mlp_extractor.value_net``, ``value_net``, and
    ``vf_features_extractor`` when the policy does not share its features extractor."""
    modules: list[th.nn.Module] = [policy.mlp_extractor.value_net, policy.value_net]
    if not policy.share_features_extractor:
        modules.append(policy.vf_features_extractor)
    return [parameter for module in modules for parameter in module.parameters()]


def fit_critic(
    policy: ActorCriticPolicy,
    optimizer: th.optim.Optimizer,
    observations: Observations,
    targets: th.Tensor,
    n_epochs: int,
    batch_size: int | None,
    rng: np.random.Generator,
    nonfinite: Callable[[float], Exception],
) -> th.Tensor:
    """Regress the critic alone on fixed ``targets``: ``n_epochs`` passes over the batch in minibatches of
    ``batch_size`` steps (None: the whole batch), in an order drawn from ``rng``. A shared features extractor is
    the policy's and does not move. Raises ``nonfinite(loss)`` on a non-finite loss, before that step.

    :return: the fitted critic's values of the batch
    """
    critic_owns_features = not policy.share_features_extractor
    features: Observations = observations
    if not critic_owns_features:
        # The shared extractor is the policy's: computed once, outside the graph, so it cannot move here.
        with th.no_grad():
            features = _features(policy, observations, policy.features_extractor)

    def predict(rows: Observations) -> th.Tensor:
        latent = _features(policy, rows, policy.vf_features_extractor) if critic_owns_features else rows
        return policy.value_net(policy.mlp_extractor.forward_critic(cast(th.Tensor, latent))).flatten()

    size = len(targets)
    rows_per_step = size if batch_size is None else min(batch_size, size)
    for _ in range(n_epochs):
        order = None if rows_per_step == size else th.as_tensor(rng.permutation(size), device=targets.device)
        for start in range(0, size, rows_per_step):
            rows = slice(None) if order is None else order[start : start + rows_per_step]
            loss = F.mse_loss(predict(_take(features, rows)), targets[rows])
            if not th.isfinite(loss):
                raise nonfinite(loss.item())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    with th.no_grad():
        return predict(features)
