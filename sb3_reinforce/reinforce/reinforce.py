from __future__ import annotations

from typing import Any, ClassVar, TypeVar, cast

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy, BaseModel, BasePolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule
from stable_baselines3.common.utils import FloatSchedule, explained_variance, obs_as_tensor, update_learning_rate
from torch.nn import functional as F

from sb3_reinforce.common.advantages import ADVANTAGE_ESTIMATORS, AdvantageEstimator
from sb3_reinforce.common.episodic import EpisodicOnPolicyAlgorithm, _is_integer, check_finite_observations
from sb3_reinforce.reinforce.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

SelfReinforce = TypeVar("SelfReinforce", bound="Reinforce")

BASELINES = tuple(ADVANTAGE_ESTIMATORS)
# The baselines that compare an episode with others, within its same-start group when there are groups.
COMPARING_BASELINES = ("loo", "grpo")


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


def _take(features: th.Tensor | dict[str, th.Tensor], rows: slice | th.Tensor) -> th.Tensor | dict[str, th.Tensor]:
    if isinstance(features, dict):
        return {key: value[rows] for key, value in features.items()}
    return features[rows]


def _features(
    policy: ActorCriticPolicy, observations: th.Tensor | dict[str, th.Tensor], extractor: BaseFeaturesExtractor
) -> th.Tensor:
    # ActorCriticPolicy.extract_features ignores the extractor it is given when extractors are not shared.
    return cast(th.Tensor, BaseModel.extract_features(policy, observations, extractor))


def check_hyperparameters(
    *,
    learning_rate: Any,
    gamma: Any,
    baseline: Any,
    group_size: Any,
    gae_lambda: Any,
    ent_coef: Any,
    vf_coef: Any,
    vf_learning_rate: Any,
    vf_n_epochs: Any,
    vf_batch_size: Any,
    max_grad_norm: Any,
    sde_sample_freq: Any,
    allow_zero_learning_rate: bool = False,
) -> None:
    """Raise ValueError naming the first of :class:`Reinforce`'s own hyperparameters that is out of its range (the
    base class checks ``n_episodes``, ``group_size``'s divisibility and ``max_episode_steps``).

    ``allow_zero_learning_rate`` allows a ``learning_rate`` of 0: a model loaded for inference only, as rl_zoo3's
    ``enjoy`` loads one with SB3's ``custom_objects={"learning_rate": 0.0, ...}`` (training then checks the rate at
    each update: 0 leaves the policy where it is).
    """
    _check(_is_real(gamma) and 0.0 <= gamma <= 1.0, f"gamma must be a number in [0, 1], got {gamma!r}")
    _check(baseline in BASELINES, f"baseline must be one of {BASELINES}, got {baseline!r}")
    _check(
        baseline in COMPARING_BASELINES or not (_is_integer(group_size) and group_size > 1),
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
    _check(
        _is_real(vf_coef) and 0.0 <= vf_coef < np.inf,  # nan fails too
        f"vf_coef must be >= 0 and finite, got {vf_coef!r}",
    )
    _check(
        callable(vf_learning_rate) or _positive_finite(vf_learning_rate),
        f"vf_learning_rate must be a finite number > 0 or a schedule, got {vf_learning_rate!r}",
    )
    _check(
        _is_integer(vf_n_epochs) and vf_n_epochs >= 0,
        f"vf_n_epochs must be an integer >= 0 (0: train the critic jointly with the policy), got {vf_n_epochs!r}",
    )
    _check(
        vf_batch_size is None or (_is_integer(vf_batch_size) and vf_batch_size >= 1),
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
        _is_integer(sde_sample_freq) and (sde_sample_freq == -1 or sde_sample_freq >= 1),
        f"sde_sample_freq must be -1 (once per collection) or an integer >= 1, got {sde_sample_freq!r}",
    )


class Reinforce(EpisodicOnPolicyAlgorithm):
    """REINFORCE, the Monte Carlo policy gradient (Williams, 1992).

    Paper: "Simple statistical gradient-following algorithms for connectionist reinforcement learning",
    Machine Learning 8, 229-256 (1992). Each update uses ``n_episodes`` complete episodes produced by the current
    parameters (see :mod:`sb3_reinforce.common.episodic` for how they are collected without bias) and ascends

        J(theta) ~ 1/B * sum_t  A_t * log pi_theta(a_t | s_t)  +  ent_coef * H(pi_theta(. | s_t))

    over the ``B`` steps of the batch, in one forward pass over the whole flattened batch (log-probabilities are
    recomputed there; no autograd graph is kept during collection). ``A_t`` is built from the reward-to-go
    ``G_t = r_t + gamma * G_{t+1}`` within the episode (``G`` of the step after the episode's last is 0; a return
    never crosses an episode or an env boundary):

    - ``baseline="none"``: ``A_t = G_t``
    - ``baseline="mean"``: ``A_t = G_t - mean(G)`` over the batch (the seed reference's batch-mean baseline)
    - ``baseline="value"``: a learned critic ``V``; ``A_t`` is GAE(gamma, gae_lambda) over the episode, which for
      ``gae_lambda=1`` is ``G_t - V(s_t)``.
    - ``baseline="loo"``: leave-one-out (RLOO, Ahmadian et al. 2024, made time-indexed): step ``k`` of an episode
      minus the mean ``G_k`` of the *other* episodes of its group still running at their step ``k`` (0 where none
      is). It never uses the episode's own actions, so the gradient stays unbiased, with no critic to fit.
    - ``baseline="grpo"``: GRPO's group-normalized advantage (Shao et al. 2024), ``(G_k - mean) / std`` over the
      group's episodes running at ``k``, the episode included: biased (see
      :func:`~sb3_reinforce.common.advantages.group_normalized_advantage`), as GRPO is.

    The group of "loo" and "grpo" is the whole batch, or with ``group_size >= 2`` the ``group_size`` episodes
    that started from one state: they are dealt in rounds, the members of a group being reset with one seed on
    ``group_size`` envs at once (:mod:`sb3_reinforce.common.episodic`). Same-start groups compare episodes whose
    expected returns are equal, so the baseline removes the start state's share of the variance too (and costs a
    little where the start matters little: the members are correlated through it).

    The critic (``baseline="value"``) is fitted as in the vanilla policy gradient of Schulman et al. (2016) and
    OpenAI Spinning Up's VPG. Each update, on one batch:

    1. the advantages are computed with the critic as it was during collection;
    2. the policy takes ONE step (``learning_rate``, ``max_grad_norm``), so the policy gradient stays the
       unbiased on-policy estimate it is without a critic;
    3. the critic alone is then regressed ``vf_n_epochs`` times over the batch, with its own optimizer (the
       policy's ``optimizer_class`` and ``optimizer_kwargs``) at ``vf_learning_rate``, in minibatches of
       ``vf_batch_size`` steps (or the whole batch). Its targets are the lambda-returns
       ``A_t + V_old(s_t)``, fixed for the whole fit: for ``gae_lambda=1`` the Monte Carlo returns ``G_t``
       (bootstrapped at a time-limit cut, below).

    Only the critic's own parameters move in step 3: ``mlp_extractor.value_net``, ``value_net``, and
    ``vf_features_extractor`` when the policy does not share its features extractor. A shared extractor
    (CnnPolicy's default) is trained by the policy step alone; the critic fits its head on the features the
    policy learns. With ``vf_n_epochs=0`` the critic is instead trained jointly with the policy, in the same
    step and optimizer, on the loss ``policy_loss + vf_coef * value_loss`` (SB3's A2C way: one critic step per
    batch).

    Time limits: an episode cut by a time limit (``TimeLimit.truncated``) is bootstrapped with
    ``gamma * V(terminal observation)`` when ``baseline="value"``; with the other baselines there is no critic to
    bootstrap with, so its return simply ends at the cut (as if the episode had terminated there; "loo" and "grpo"
    compare such an episode with the others only up to its cut).

    Normalization: the policy loss is the MEAN over the batch's steps. The seed reference divides the SUM over
    steps by the number of episodes instead, so its gradient is this one times ``B / n_episodes``.

    Logged, under SB3's names where A2C/PPO have one: ``train/entropy_loss`` (minus the mean entropy),
    ``train/policy_loss`` (a surrogate whose VALUE means nothing, only its gradient does), ``train/loss``,
    ``train/std`` (Gaussian policies with a state-independent std), ``train/learning_rate``, ``rollout/ep_rew_mean``
    (Monitor). Ours: ``train/entropy`` (watch it: its collapse precedes a plateau of the return), ``train/ent_coef``,
    ``train/grad_norm`` (before clipping), ``train/batch_size`` and ``rollout/unused_frac``. With a critic,
    ``train/value_loss`` and ``train/explained_variance`` of the critic that made the advantages, and after the fit
    ``train/value_loss_after_fit`` and ``train/explained_variance_after_fit``: their gap is what the fit gained.

    What is saved: SB3's actor-critic policy always holds a value head (``mlp_extractor.value_net`` and
    ``value_net``), and it is saved with the policy. Without a critic (``baseline`` "none", "mean", "loo" or
    "grpo") it is in no optimizer and keeps its initial weights: it never influences an update or an action.
    ``Reinforce.load(path, **kwargs)`` checks the saved hyperparameters, with ``kwargs`` over them, as the
    constructor checks its arguments: a ``ValueError`` naming the first one out of range (a ``learning_rate`` of 0,
    SB3's way to load a model for inference only, is the one value allowed there and not here).

    :param policy: The policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy, or an ActorCriticPolicy class)
    :param env: The environment to learn from (if registered in Gymnasium, can be a str)
    :param learning_rate: Learning rate (> 0), or a schedule of the remaining progress (from 1 to 0)
    :param n_episodes: Complete episodes per update, >= 2 (a single-episode gradient random-walks). Split as
        evenly as possible over the envs; keep it a multiple of ``n_envs`` so no env waits on another's extra one.
    :param gamma: Discount factor in [0, 1]; 1 is legitimate for episodic tasks
    :param baseline: "none", "mean", "value", "loo" or "grpo" (see above)
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
    :param vf_coef: Value loss coefficient (>= 0) of the joint update, used with ``baseline="value"`` and
        ``vf_n_epochs=0`` only
    :param vf_learning_rate: The critic's learning rate (> 0), or a schedule of the remaining progress, used
        with ``baseline="value"`` and ``vf_n_epochs >= 1``
    :param vf_n_epochs: Passes of the critic fit over each batch (>= 0); 0 trains the critic jointly with the
        policy instead (see above). The default, 2 passes of 256-step minibatches, explains less of the returns
        than VPG's 80 full-batch passes but learned CartPole and Acrobot as well, at a fifth to a third of the CPU
        (the docs' results page); the zoo's tuned entries keep their 80 full-batch passes
    :param vf_batch_size: Minibatch size (>= 1) of the critic fit, or None for full-batch steps (one step per
        pass)
    :param max_grad_norm: Gradient clipping norm (> 0), or None for no clipping
    :param normalize_advantage: Standardize the advantages within the batch (biased, but stabilizing; set it to
        False for the unbiased gradient of "none" or "loo")
    :param use_sde: Explore with generalized State-Dependent Exploration (gSDE, Raffin et al. 2022) instead of
        independent Gaussian noise at every step; ``Box`` actions only. The noise matrix is drawn per env at the
        start of each collection (and every ``sde_sample_freq`` steps), so the exploration is smooth in time.
        As in SB3's A2C/PPO, the update treats each step's action as an independent draw of the policy's
        Gaussian (whose log-probability does not depend on the noise matrix). Collection then uses the torch
        policy, not the numpy actor.
    :param sde_sample_freq: With ``use_sde``, draw a new noise matrix every this many steps (>= 1), or -1 to
        draw it only at the start of each collection
    :param max_episode_steps: Bound (>= 1) on one episode's length during collection: a longer one raises
        ``RuntimeError`` instead of hanging. Use a TimeLimit wrapper for tasks that never end.
    :param use_fast_actor: Collect with the exact numpy actor when the policy allows it (Box/Discrete
        observations, MLP, CPU); ``model.fast_actor_reason`` says why not otherwise.
    :param stats_window_size: Window size for the rollout logging (episodes averaged)
    :param tensorboard_log: The log location for tensorboard (if None, no logging)
    :param policy_kwargs: Additional arguments passed to the policy on creation
    :param verbose: 0 no output, 1 info messages, 2 debug
    :param seed: Seed for the pseudo random generators
    :param device: Device (cpu, cuda, ...); "auto" takes the GPU if there is one
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }

    def __init__(
        self,
        policy: str | type[ActorCriticPolicy],
        env: GymEnv | str,
        learning_rate: float | Schedule = 1e-3,
        n_episodes: int = 16,
        gamma: float = 0.99,
        baseline: str = "value",
        group_size: int = 1,
        gae_lambda: float = 1.0,
        ent_coef: float | Schedule = 0.0,
        vf_coef: float = 0.5,
        vf_learning_rate: float | Schedule = 1e-3,
        vf_n_epochs: int = 2,
        vf_batch_size: int | None = 256,
        max_grad_norm: float | None = 0.5,
        normalize_advantage: bool = True,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        max_episode_steps: int = 100_000,
        use_fast_actor: bool = True,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
    ) -> None:
        # Validated before the base class builds (or steps) any env; it checks n_episodes and max_episode_steps.
        check_hyperparameters(
            learning_rate=learning_rate,
            gamma=gamma,
            baseline=baseline,
            group_size=group_size,
            gae_lambda=gae_lambda,
            ent_coef=ent_coef,
            vf_coef=vf_coef,
            vf_learning_rate=vf_learning_rate,
            vf_n_epochs=vf_n_epochs,
            vf_batch_size=vf_batch_size,
            max_grad_norm=max_grad_norm,
            sde_sample_freq=sde_sample_freq,
        )
        self.baseline = baseline
        self.normalize_advantage = normalize_advantage
        self.vf_learning_rate = vf_learning_rate
        self.vf_n_epochs = int(vf_n_epochs)
        self.vf_batch_size = vf_batch_size
        self.vf_optimizer: th.optim.Optimizer | None = None
        super().__init__(
            policy,
            env,
            n_episodes=n_episodes,
            max_episode_steps=max_episode_steps,
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
    def fits_critic(self) -> bool:
        """Whether the critic is fitted apart from the policy, with its own optimizer (see the class doc)."""
        return self.baseline == "value" and self.vf_n_epochs > 0

    def _setup_model(self) -> None:
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
        self.advantage_estimator: AdvantageEstimator = ADVANTAGE_ESTIMATORS[self.baseline]
        self._build_optimizers()

    def _build_optimizers(self) -> None:
        """One optimizer over every parameter for the joint update; otherwise the policy's over the actor's
        parameters alone, and with the critic fit ``vf_optimizer`` over the critic's own. Without a critic
        (``baseline`` "none" or "mean") the critic's parameters are in no optimizer and never move."""
        # SB3 types optimizer_class as the Optimizer base, whose __init__ takes no lr; every subclass does.
        optimizer_class: Any = self.policy.optimizer_class
        optimizer_kwargs = self.policy.optimizer_kwargs
        self.vf_optimizer = None
        if self.baseline == "value" and not self.fits_critic:
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
        policy = self.policy
        modules: list[th.nn.Module] = [policy.mlp_extractor.value_net, policy.value_net]
        if not policy.share_features_extractor:
            modules.append(policy.vf_features_extractor)
        return [parameter for module in modules for parameter in module.parameters()]

    def _excluded_save_params(self) -> list[str]:
        # Chosen again from `baseline` when the model is loaded.
        return [*super()._excluded_save_params(), "advantage_estimator"]

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        state_dicts, variables = super()._get_torch_save_params()
        return ([*state_dicts, "vf_optimizer"] if self.fits_critic else state_dicts), variables

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
        if self.baseline == "value":
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
        advantages, targets = self.advantage_estimator(
            rewards,
            buffer.episode_ends[:steps],
            grid_values,
            mask,
            self.gamma,
            self.gae_lambda if gae_lambda is None else gae_lambda,
            buffer.episode_group[:steps],
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

        if self.baseline == "value":
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
        if self.baseline == "value":
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
        policy = self.policy
        critic_owns_features = not policy.share_features_extractor
        features: th.Tensor | dict[str, th.Tensor] = observations
        if not critic_owns_features:
            # The shared extractor is the policy's: computed once, outside the graph, so it cannot move here.
            with th.no_grad():
                features = _features(policy, observations, policy.features_extractor)

        def predict(rows: th.Tensor | dict[str, th.Tensor]) -> th.Tensor:
            latent = (
                _features(policy, rows, policy.vf_features_extractor) if critic_owns_features else cast(th.Tensor, rows)
            )
            return policy.value_net(policy.mlp_extractor.forward_critic(latent)).flatten()

        size = len(targets)
        batch_size = size if self.vf_batch_size is None else min(self.vf_batch_size, size)
        for _ in range(self.vf_n_epochs):
            order = None if batch_size == size else th.as_tensor(self._rng.permutation(size), device=self.device)
            for start in range(0, size, batch_size):
                rows = slice(None) if order is None else order[start : start + batch_size]
                loss = F.mse_loss(predict(_take(features, rows)), targets[rows])
                if not th.isfinite(loss):
                    raise FloatingPointError(self._nonfinite_message("critic loss", loss.item()))
                self.vf_optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.vf_optimizer.step()
        with th.no_grad():
            fitted = predict(features)
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
