"""The ranges of :class:`~sb3_reinforce.Reinforce`'s own hyperparameters, checked before any env is touched."""

from __future__ import annotations

from typing import Any, Literal, get_args

import numpy as np

from sb3_reinforce.common.advantages import BASELINES, COMPARING_BASELINES
from sb3_reinforce.common.episodic import is_integer

# How the critic of baseline="value" is trained: "fit" regresses it apart after the policy step (its own optimizer,
# vf_n_epochs passes); "joint" adds vf_coef * value_loss to the policy's loss, one step for both (A2C's way).
CriticUpdate = Literal["fit", "joint"]
CRITIC_UPDATES: tuple[CriticUpdate, ...] = get_args(CriticUpdate)


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _is_real(value: Any) -> bool:
    """A real number (a bool or a string is not one, though Python compares them with numbers or raises)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _positive_finite(value: Any) -> bool:
    if isinstance(value, (str, bytes, bool)):  # float() would accept "1e-3" and True
        return False
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    return bool(np.isfinite(number)) and number > 0.0


def check_hyperparameters(
    *,
    learning_rate: Any,
    gamma: Any,
    baseline: Any,
    group_size: Any,
    gae_lambda: Any,
    ent_coef: Any,
    vf_update: Any,
    vf_coef: Any,
    vf_learning_rate: Any,
    vf_n_epochs: Any,
    vf_batch_size: Any,
    max_grad_norm: Any,
    sde_sample_freq: Any,
    allow_zero_learning_rate: bool = False,
) -> None:
    """Raise ValueError naming the first of :class:`Reinforce`'s own hyperparameters that is out of its range (the
    base class checks ``n_episodes``, ``group_size``'s divisibility and ``hang_guard_steps``).

    ``allow_zero_learning_rate`` allows a ``learning_rate`` of 0: a model loaded for inference only, as rl_zoo3's
    ``enjoy`` loads one with SB3's ``custom_objects={"learning_rate": 0.0, ...}`` (training then checks the rate at
    each update: 0 leaves the policy where it is).
    """
    _check(_is_real(gamma) and 0.0 <= gamma <= 1.0, f"gamma must be a number in [0, 1], got {gamma!r}")
    _check(baseline in BASELINES, f"baseline must be one of {BASELINES}, got {baseline!r}")
    _check(
        baseline in COMPARING_BASELINES or not (is_integer(group_size) and group_size > 1),
        f"group_size={group_size!r} needs baseline 'loo' or 'grpo', which compare a group's episodes "
        f"(got baseline={baseline!r}); leave it at 1",
    )
    _check(
        _is_real(gae_lambda) and 0.0 <= gae_lambda <= 1.0,
        f"gae_lambda must be a number in [0, 1], got {gae_lambda!r}",
    )
    _check(
        baseline == "value" or gae_lambda == 1.0,
        f"gae_lambda={gae_lambda!r} needs baseline='value' (got baseline={baseline!r}); leave it at 1.0",
    )
    _check(
        callable(ent_coef) or ent_coef == 0 or _positive_finite(ent_coef),
        f"ent_coef must be a finite number >= 0 or a schedule, got {ent_coef!r}",
    )
    _check(vf_update in CRITIC_UPDATES, f"vf_update must be one of {CRITIC_UPDATES}, got {vf_update!r}")
    _check(
        _is_real(vf_coef) and 0.0 <= vf_coef < np.inf,  # nan fails too
        f"vf_coef must be >= 0 and finite, got {vf_coef!r}",
    )
    _check(
        callable(vf_learning_rate) or _positive_finite(vf_learning_rate),
        f"vf_learning_rate must be a finite number > 0 or a schedule, got {vf_learning_rate!r}",
    )
    # 0 is the deprecated spelling of vf_update="joint" (Reinforce's constructor warns).
    _check(
        is_integer(vf_n_epochs) and vf_n_epochs >= 0,
        f"vf_n_epochs must be an integer >= 1 (vf_update='joint' trains the critic with the policy instead), "
        f"got {vf_n_epochs!r}",
    )
    _check(
        vf_batch_size is None or (is_integer(vf_batch_size) and vf_batch_size >= 1),
        f"vf_batch_size must be an integer >= 1 or None (full batch), got {vf_batch_size!r}",
    )
    # inf is allowed: a norm no gradient reaches, which is what None does.
    _check(
        max_grad_norm is None or (_is_real(max_grad_norm) and max_grad_norm > 0.0),
        f"max_grad_norm must be > 0 or None (no clipping), got {max_grad_norm!r}",
    )
    _check(
        callable(learning_rate)
        or _positive_finite(learning_rate)
        or (allow_zero_learning_rate and _is_real(learning_rate) and learning_rate == 0),
        f"learning_rate must be > 0 and finite, or a schedule, got {learning_rate!r}",
    )
    _check(
        is_integer(sde_sample_freq) and (sde_sample_freq == -1 or sde_sample_freq >= 1),
        f"sde_sample_freq must be -1 (once per collection) or an integer >= 1, got {sde_sample_freq!r}",
    )
