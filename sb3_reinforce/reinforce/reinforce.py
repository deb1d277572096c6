"""``Reinforce``: one class with one job, the algorithm as SB3's contract shapes it (the constructor with its
checked hyperparameters, the model's setup, save and load, the update), so it stays one module past the size rule;
the mechanics it calls live in ``common/`` (collection, estimators, buffers) and ``critic.py``."""

from __future__ import annotations

import warnings
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy, BasePolicy
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule, TensorDict
from stable_baselines3.common.utils import FloatSchedule, explained_variance, obs_as_tensor, update_learning_rate
from torch.nn import functional as F

from sb3_reinforce.common.advantages import Baseline, estimate_advantages
from sb3_reinforce.common.episodic import EpisodicOnPolicyAlgorithm, check_finite_observations, is_integer
from sb3_reinforce.reinforce.critic import critic_parameters, fit_critic
from sb3_reinforce.reinforce.hyperparameters import CriticUpdate, check_hyperparameters
from sb3_reinforce.reinforce.policies import CnnPolicy, GridCnnPolicy, MlpPolicy, MultiInputPolicy

SelfReinforce = TypeVar("SelfReinforce", bound="Reinforce")


def _deprecated_spellings(
    hang_guard_steps: int, max_episode_steps: int | None, vf_update: CriticUpdate, vf_n_epochs: Any
) -> tuple[int, CriticUpdate]:
    """``(hang_guard_steps, vf_update)`` with the old spellings warned of and applied: ``max_episode_steps``, which
    saved agents' config.json files carry, and ``vf_n_epochs=0``, which the zoo's recorded tuning commands use."""
    if max_episode_steps is not None:
        message = "max_episode_steps is now hang_guard_steps (it raises, it cuts no episode)"
        warnings.warn(message, DeprecationWarning, stacklevel=3)
        hang_guard_steps = max_episode_steps
    if is_integer(vf_n_epochs) and vf_n_epochs == 0:
        message = "vf_n_epochs=0 for the joint critic update is deprecated: pass vf_update='joint'"
        warnings.warn(message, DeprecationWarning, stacklevel=3)
        vf_update = "joint"
    return hang_guard_steps, vf_update


class Reinforce(EpisodicOnPolicyAlgorithm):
    """REINFORCE, the Monte Carlo policy gradient, with a choice of baselines (Williams, 1992).

    Paper: https://doi.org/10.1007/BF00992696 ("Simple statistical gradient-following algorithms for connectionist
    reinforcement learning", Machine Learning 8, 229-256). Baselines: GAE (https://arxiv.org/abs/1506.02438) for
    the critic, RLOO (https://arxiv.org/abs/2402.14740) and GRPO (https://arxiv.org/abs/2402.03300) for the
    comparing ones. Introduction: https://spinningup.openai.com/en/latest/algorithms/vpg.html

    Each update takes ``n_episodes`` complete episodes produced by the current parameters and ascends
    ``1/B * sum_t A_t * log pi(a_t | s_t) + ent_coef * H`` over their ``B`` steps in one policy step. The algorithm
    page of the docs (``docs/guide/algorithm.md``) gives the estimators, how episodes are dealt without bias, the
    critic's update, what is logged and what is saved.

    :param policy: The policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy, or an ActorCriticPolicy class)
    :param env: The environment to learn from (if registered in Gymnasium, can be a str)
    :param learning_rate: Learning rate (> 0), or a schedule of the remaining progress (from 1 to 0)
    :param n_episodes: Complete episodes per update, >= 2 (a single-episode gradient random-walks). Split as
        evenly as possible over the envs; keep it a multiple of ``n_envs`` so no env waits on another's extra one.
    :param gamma: Discount factor in [0, 1]; 1 is legitimate for episodic tasks
    :param baseline: What is subtracted from the return ``G_t``: "none" (``A_t = G_t``), "mean" (the batch mean of
        ``G``), "value" (a learned critic, with GAE), "loo" (the other episodes' mean ``G`` at the same step of
        their episode, unbiased) or "grpo" (GRPO's group-normalized advantage, biased). The default is "loo":
        critic-free and unbiased, with no critic to fit
    :param group_size: Episodes per same-start group, an integer >= 1 (1: no groups; "loo" and "grpo" then compare
        across the whole batch). ``group_size >= 2`` needs ``baseline`` "loo" or "grpo", an ``n_episodes`` and a
        number of envs that it divides, and an env whose start ``reset(seed=...)`` fixes (checked at each round's
        reset: ``ValueError`` otherwise). Rounds wait for their longest episode: keep ``n_episodes`` a multiple
        of ``n_envs``, and watch ``rollout/unused_frac``
    :param gae_lambda: GAE lambda in [0, 1] for ``baseline="value"`` (1 = Monte Carlo return minus value);
        must stay 1.0 with the other baselines, which have no critic
    :param ent_coef: Entropy bonus coefficient, >= 0 (a negative one would reward collapse), or a schedule of the
        remaining progress (from 1 to 0) whose values are >= 0: a bonus that decays keeps the policy exploring
        while no episode has found the reward yet, and stops distorting the policy it converges to
    :param vf_update: How the critic of ``baseline="value"`` is trained: "fit" regresses it alone after the
        policy step, with its own optimizer (``vf_learning_rate``, ``vf_n_epochs``, ``vf_batch_size``); "joint"
        trains it in the policy's step on ``policy_loss + vf_coef * value_loss`` (A2C's way)
    :param vf_coef: Value loss coefficient (>= 0) of ``vf_update="joint"``, read in that mode only
    :param vf_learning_rate: The critic's learning rate (> 0), or a schedule of the remaining progress, of
        ``vf_update="fit"``
    :param vf_n_epochs: Passes of the critic fit over each batch (>= 1) with ``vf_update="fit"``. The default, 2
        passes of 256-step minibatches, explains less of the returns than VPG's 80 full-batch passes but learned
        CartPole and Acrobot as well, at a fifth to a third of the CPU (the docs' results page). 0 is the
        deprecated spelling of ``vf_update="joint"`` (a ``DeprecationWarning``)
    :param vf_batch_size: Minibatch size (>= 1) of the critic fit, or None for full-batch steps (one step per
        pass)
    :param max_grad_norm: Gradient clipping norm (> 0), or None for no clipping
    :param normalize_advantage: Standardize the advantages within the batch (biased, but stabilizing; set it to
        False for the unbiased gradient of "none" or "loo")
    :param use_sde: Explore with generalized State-Dependent Exploration (gSDE, Raffin et al. 2022) instead of
        independent Gaussian noise at every step; ``Box`` actions only. The noise matrix is drawn per env at the
        start of each collection (and every ``sde_sample_freq`` steps). Collection then uses the torch policy,
        not the numpy actor.
    :param sde_sample_freq: With ``use_sde``, draw a new noise matrix every this many steps (>= 1), or -1 to
        draw it only at the start of each collection
    :param hang_guard_steps: The hang guard (>= 1): an episode that has run this many steps during collection
        without ending raises ``RuntimeError`` instead of collecting forever. It cuts no episode, as gymnasium's
        ``max_episode_steps`` does: use a TimeLimit wrapper for tasks that never end.
    :param use_fast_actor: Collect with the exact numpy actor when the policy allows it (Box/Discrete
        observations, MLP, CPU); ``model.fast_actor_reason`` says why not otherwise.
    :param stats_window_size: Window size for the rollout logging (episodes averaged)
    :param tensorboard_log: The log location for tensorboard (if None, no logging)
    :param policy_kwargs: Additional arguments passed to the policy on creation
    :param verbose: 0 no output, 1 info messages, 2 debug
    :param seed: Seed for the pseudo random generators
    :param device: Device (cpu, cuda, ...); "auto" takes the GPU if there is one
    :param max_episode_steps: Deprecated name of ``hang_guard_steps`` (a ``DeprecationWarning``), kept because
        saved agents' config.json files carry it
    """

    # The critic fit's own optimizer, built by _setup_model when the critic is fitted (vf_update="fit").
    vf_optimizer: th.optim.Optimizer | None = None
    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
        "GridCnnPolicy": GridCnnPolicy,
    }

    def __init__(
        self,
        policy: str | type[ActorCriticPolicy],
        env: GymEnv | str,
        learning_rate: float | Schedule = 1e-3,
        n_episodes: int = 16,
        gamma: float = 0.99,
        baseline: Baseline = "loo",
        group_size: int = 1,
        gae_lambda: float = 1.0,
        ent_coef: float | Schedule = 0.0,
        vf_update: CriticUpdate = "fit",
        vf_coef: float = 0.5,
        vf_learning_rate: float | Schedule = 1e-3,
        vf_n_epochs: int = 2,
        vf_batch_size: int | None = 256,
        max_grad_norm: float | None = 0.5,
        normalize_advantage: bool = True,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        hang_guard_steps: int = 100_000,
        use_fast_actor: bool = True,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        max_episode_steps: int | None = None,
        _init_setup_model: bool = True,
    ) -> None:
        hang_guard_steps, vf_update = _deprecated_spellings(hang_guard_steps, max_episode_steps, vf_update, vf_n_epochs)
        # Validated before the base class builds (or steps) any env; it checks n_episodes and hang_guard_steps.
        check_hyperparameters(
            learning_rate=learning_rate,
            gamma=gamma,
            baseline=baseline,
            group_size=group_size,
            gae_lambda=gae_lambda,
            ent_coef=ent_coef,
            vf_update=vf_update,
            vf_coef=vf_coef,
            vf_learning_rate=vf_learning_rate,
            vf_n_epochs=vf_n_epochs,
            vf_batch_size=vf_batch_size,
            max_grad_norm=max_grad_norm,
            sde_sample_freq=sde_sample_freq,
        )
        self.baseline = baseline
        self.normalize_advantage = normalize_advantage
        self.vf_update = vf_update
        self.vf_learning_rate = vf_learning_rate
        self.vf_n_epochs = int(vf_n_epochs)
        self.vf_batch_size = vf_batch_size
        super().__init__(
            policy,
            env,
            n_episodes=n_episodes,
            hang_guard_steps=hang_guard_steps,
            use_fast_actor=use_fast_actor,
            group_size=group_size,
            learning_rate=learning_rate,
            gamma=gamma,
            gae_lambda=gae_lambda,
            ent_coef=ent_coef,
            vf_coef=vf_coef,
            max_grad_norm=max_grad_norm,
            use_sde=use_sde,
            sde_sample_freq=sde_sample_freq,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            policy_kwargs=policy_kwargs,
            verbose=verbose,
            seed=seed,
            device=device,
            _init_setup_model=False,
            supported_action_spaces=(spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary),
        )
        if _init_setup_model:
            self._setup_model()

    @property
    def has_critic(self) -> bool:
        """Whether the advantages come from a learned critic (``baseline="value"``)."""
        return self.baseline == "value"

    @property
    def fits_critic(self) -> bool:
        """Whether the critic is fitted apart from the policy, with its own optimizer (``vf_update="fit"``)."""
        return self.has_critic and self.vf_update == "fit"

    def _setup_model(self) -> None:
        # A zip saved before vf_update was named says "joint" with vf_n_epochs=0 (SB3's load() leaves the new
        # attribute at the constructor's default, "fit").
        if self.vf_n_epochs == 0:
            self.vf_update = "joint"
        # SB3's load() builds the model with the constructor's defaults, then writes the saved data and its own
        # keyword arguments over the attributes: checked again here, where every path to a built model passes
        # (the constructor has refused a rate of 0 already; load() may set one to freeze the model).
        check_hyperparameters(
            learning_rate=self.learning_rate,
            gamma=self.gamma,
            baseline=self.baseline,
            group_size=self.group_size,
            gae_lambda=self.gae_lambda,
            ent_coef=self.ent_coef,
            vf_update=self.vf_update,
            vf_coef=self.vf_coef,
            vf_learning_rate=self.vf_learning_rate,
            vf_n_epochs=self.vf_n_epochs,
            vf_batch_size=self.vf_batch_size,
            max_grad_norm=self.max_grad_norm,
            sde_sample_freq=self.sde_sample_freq,
            allow_zero_learning_rate=True,
        )
        super()._setup_model()
        self.vf_lr_schedule = FloatSchedule(self.vf_learning_rate)
        self.ent_coef_schedule = FloatSchedule(self.ent_coef)
        self._build_optimizers()

    def _build_optimizers(self) -> None:
        """One optimizer over every parameter for the joint update; otherwise the policy's over the actor's
        parameters alone, and with the critic fit ``vf_optimizer`` over the critic's own. Without a critic
        (``baseline`` other than "value") the critic's parameters are in no optimizer and never move."""
        # SB3 types optimizer_class as the Optimizer base, whose __init__ takes no lr; every subclass does.
        optimizer_class: Any = self.policy.optimizer_class
        optimizer_kwargs = self.policy.optimizer_kwargs
        self.vf_optimizer = None
        if self.has_critic and self.vf_update == "joint":
            self.policy.optimizer = optimizer_class(
                self.policy.parameters(), lr=self.lr_schedule(1), **optimizer_kwargs
            )
            return
        critic = self.critic_parameters()
        critic_ids = {id(parameter) for parameter in critic}
        actor = [parameter for parameter in self.policy.parameters() if id(parameter) not in critic_ids]
        self.policy.optimizer = optimizer_class(actor, lr=self.lr_schedule(1), **optimizer_kwargs)
        if self.fits_critic:
            self.vf_optimizer = optimizer_class(critic, lr=self.vf_lr_schedule(1), **optimizer_kwargs)

    def critic_parameters(self) -> list[th.nn.Parameter]:
        """The parameters that belong to the critic alone: the ones the critic fit moves."""
        return critic_parameters(self.policy)

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        state_dicts, variables = super()._get_torch_save_params()
        return ([*state_dicts, "vf_optimizer"] if self.fits_critic else state_dicts), variables

    def set_parameters(
        self,
        load_path_or_dict: str | TensorDict,
        exact_match: bool = True,
        device: th.device | str = "auto",
    ) -> None:
        # SB3's own would call load_state_dict on this model's missing critic optimizer: a NoneType AttributeError
        # for the parameters of a model that fits a critic, loaded into one that does not.
        params: Any = load_path_or_dict
        if not isinstance(params, dict):  # a zip's path (or an open file), as SB3's own takes
            _, params, _ = load_from_zip_file(params, device=device, load_data=False)
        if "vf_optimizer" in params and not self.fits_critic:
            raise ValueError(
                "these parameters are of a Reinforce that fits a critic (their vf_optimizer), and this one does not "
                f"(baseline={self.baseline!r}, vf_update={self.vf_update!r}): build it with the same baseline"
            )
        super().set_parameters(params, exact_match=exact_match, device=device)

    def _advantages(
        self, values: th.Tensor, mask: np.ndarray, gae_lambda: float | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Advantages and value targets of the valid steps, flattened in the order of ``mask``.

        ``values`` holds V(s_t) of the valid steps (empty without a critic). A time-limit cut is bootstrapped here,
        where the critic is: its reward gets ``gamma * V(terminal observation)`` before the estimator runs.
        ``gae_lambda`` replaces the model's (benchmarks/gradient_variance.py compares the critic's advantages at
        lambda = 1 with those of the lambda it trains with).
        """
        buffer = self.rollout_buffer
        steps = buffer.n_steps
        rewards = buffer.rewards[:steps]
        grid_values = None
        if self.has_critic:
            grid_values = np.zeros((steps, buffer.n_envs), dtype=np.float32)
            grid_values[mask] = values.detach().cpu().numpy().reshape(-1)
            if buffer.truncations:
                rewards = rewards.copy()
                terminal = buffer.truncated_observations()
                with th.no_grad():
                    terminal_values = self.policy.predict_values(obs_as_tensor(terminal, self.device))
                for (t, env, _), value in zip(
                    buffer.truncations, terminal_values.cpu().numpy().reshape(-1), strict=True
                ):
                    rewards[t, env] += self.gamma * value
        advantages, targets = estimate_advantages(
            self.baseline,
            rewards,
            buffer.episode_ends[:steps],
            mask,
            self.gamma,
            values=grid_values,
            gae_lambda=self.gae_lambda if gae_lambda is None else gae_lambda,
            groups=buffer.episode_group[:steps],
        )
        return advantages[mask], targets[mask]

    def train(self) -> None:
        """One policy step on the collected batch of complete episodes, then the critic's fit to it."""
        if not self.policy.training:
            self.policy.set_training_mode(True)
        # Both rates are checked before anything moves: a nan rate would reach the parameters through a step.
        self._check_rate("learning rate", self.lr_schedule)
        if self.fits_critic:
            self._check_rate("critic learning rate", self.vf_lr_schedule)
        ent_coef = self.ent_coef_schedule(self._current_progress_remaining)
        if not 0.0 <= ent_coef < np.inf:  # nan fails too
            raise FloatingPointError(
                f"the ent_coef schedule gave {ent_coef} at update {self._n_updates + 1} "
                f"(num_timesteps={self.num_timesteps}); it must stay a finite number >= 0. The policy was not changed."
            )
        self._update_learning_rate(self.policy.optimizer)
        buffer = self.rollout_buffer
        mask = buffer.valid_mask()
        flat_observations = buffer.flat_observations(mask)
        check_finite_observations(flat_observations, self.num_timesteps)
        observations = obs_as_tensor(flat_observations, self.device)
        actions = th.as_tensor(buffer.actions[: buffer.n_steps][mask], device=self.device)
        if isinstance(self.action_space, spaces.Discrete):
            actions = actions.long().flatten()

        if self.has_critic:
            values, log_prob, entropy = self.policy.evaluate_actions(observations, actions)
            values = values.flatten()
        else:
            # No critic: skip its forward pass altogether.
            distribution = self.policy.get_distribution(observations)
            log_prob, entropy = distribution.log_prob(actions), distribution.entropy()
            values = th.zeros(0)
        advantages_np, targets_np = self._advantages(values, mask)
        advantages = th.as_tensor(advantages_np, device=self.device)
        if self.normalize_advantage and advantages.numel() > 1:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)

        policy_loss = -(advantages * log_prob).mean()
        # Distributions without a closed-form entropy: estimate it with -log pi of the sampled actions.
        entropy_mean = entropy.mean() if entropy is not None else -log_prob.mean()
        loss = policy_loss - ent_coef * entropy_mean
        targets = value_loss = None
        if self.has_critic:
            targets = th.as_tensor(targets_np, device=self.device)
            value_loss = F.mse_loss(values, targets)
            if not self.fits_critic:
                loss = loss + self.vf_coef * value_loss

        self.policy.optimizer.zero_grad(set_to_none=True)
        if not th.isfinite(loss):
            raise FloatingPointError(self._nonfinite_message("loss", loss.item()))
        loss.backward()
        grad_norm = th.nn.utils.clip_grad_norm_(
            [group_param for group in self.policy.optimizer.param_groups for group_param in group["params"]],
            self.max_grad_norm if self.max_grad_norm is not None else float("inf"),
        )
        if not th.isfinite(grad_norm):
            raise FloatingPointError(self._nonfinite_message("gradient norm", grad_norm.item()))
        self.policy.optimizer.step()
        self._n_updates += 1

        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/policy_loss", policy_loss.item())
        # SB3's names (A2C/PPO dashboards read them), then ours.
        self.logger.record("train/entropy_loss", -entropy_mean.item())
        self.logger.record("train/loss", loss.item())
        if hasattr(self.policy, "log_std"):
            self.logger.record("train/std", th.exp(self.policy.log_std).mean().item())
        self.logger.record("train/entropy", entropy_mean.item())
        self.logger.record("train/ent_coef", ent_coef)
        self.logger.record("train/grad_norm", grad_norm.item())
        self.logger.record("train/batch_size", int(mask.sum()))
        if value_loss is not None:
            self.logger.record("train/value_loss", value_loss.item())
            self.logger.record(
                "train/explained_variance", float(explained_variance(values.detach().cpu().numpy(), targets_np))
            )
        if self.fits_critic:
            assert targets is not None
            self._fit_critic(observations, targets)

    def _fit_critic(self, observations: th.Tensor | dict[str, th.Tensor], targets: th.Tensor) -> None:
        """Regress the critic alone on this batch's fixed targets: ``vf_n_epochs`` passes of ``vf_batch_size``."""
        assert self.vf_optimizer is not None
        assert self._rng is not None
        self._update_vf_learning_rate()
        fitted = fit_critic(
            self.policy,
            self.vf_optimizer,
            observations,
            targets,
            self.vf_n_epochs,
            self.vf_batch_size,
            self._rng,
            lambda loss: FloatingPointError(self._nonfinite_message("critic loss", loss)),
        )
        self.logger.record("train/value_loss_after_fit", F.mse_loss(fitted, targets).item())
        self.logger.record(
            "train/explained_variance_after_fit",
            float(explained_variance(fitted.cpu().numpy(), targets.cpu().numpy())),
        )

    def _check_rate(self, what: str, schedule: Schedule) -> None:
        """FloatingPointError if the schedule's rate now is nan or infinite; ValueError if it is negative (a
        negative rate is gradient ascent on the loss)."""
        rate = schedule(self._current_progress_remaining)
        if not np.isfinite(rate):
            raise FloatingPointError(self._nonfinite_message(what, rate))
        if rate < 0:
            raise ValueError(
                f"the {what} schedule gave {rate} at update {self._n_updates + 1} "
                f"(num_timesteps={self.num_timesteps}); it must stay >= 0. The policy was not changed."
            )

    def _update_vf_learning_rate(self) -> None:
        assert self.vf_optimizer is not None
        rate = self.vf_lr_schedule(self._current_progress_remaining)
        self.logger.record("train/vf_learning_rate", rate)
        update_learning_rate(self.vf_optimizer, rate)

    def _nonfinite_message(self, what: str, value: float) -> str:
        return (
            f"non-finite {what} ({value}) at update {self._n_updates + 1} (num_timesteps={self.num_timesteps}); "
            "the policy was not changed. Lower learning_rate, set max_grad_norm, or check the env's rewards "
            "and observations for nan/inf (VecCheckNan)."
        )

    def learn(
        self: SelfReinforce,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 1,
        tb_log_name: str = "Reinforce",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfReinforce:
        return super().learn(
            total_timesteps=total_timesteps,
            callback=callback,
            log_interval=log_interval,
            tb_log_name=tb_log_name,
            reset_num_timesteps=reset_num_timesteps,
            progress_bar=progress_bar,
        )
