"""On-policy algorithms whose updates consume a batch of complete episodes.

SB3's ``OnPolicyAlgorithm`` collects a fixed number of steps per env; Monte Carlo policy gradients instead need
whole episodes, all produced by the current parameters. This base class keeps everything of SB3's (policies,
VecEnvs, callbacks, logger, save/load) and replaces the collection.

How a batch of ``n_episodes`` episodes is collected without bias:

Every collection starts from a fresh ``env.reset()``, and episodes are dealt out as they *start*: each env
starts one counted episode (only the first ``n_episodes`` envs when there are fewer episodes than envs), and an
env that ends a counted episode starts another counted one while fewer than ``n_episodes`` have been started.
Taking instead "the first ``n_episodes`` episodes to *finish*" would over-sample short episodes, since they
finish first. Dealing at the start is unbiased: whether an episode counts is decided before its first step,
from the other episodes' past only, and an episode once counted is never dropped, so each counted episode is a
fresh draw of the current policy and the batch mean has the policy's expectation (Wald's identity; the count is
exactly ``n_episodes``). It also wastes less than fixed per-env quotas, where an env whose episodes fall early
waits on the slowest env's whole quota: here an env only waits for the last episodes still running. Those idle
steps (a VecEnv steps all its envs at once) are counted in ``num_timesteps`` but used in no update, and their
share is logged as ``rollout/unused_frac``. Episodes still running when the parameters change are discarded,
never reused: every transition of an update comes from the parameters it updates.

Same-start groups (``group_size = G >= 2``): the ``n_envs`` envs form ``n_envs / G`` slots of ``G`` consecutive
envs, and a collection runs in rounds. A round resets the VecEnv and deals one group to each slot while fewer than
``n_episodes`` episodes have been dealt; each member of the slot runs one counted episode, and the round ends when
they have all ended (an env whose episode ended first steps on, unused, until then). The members of a group start
from one state: before the round's ``env.reset()``, each member is reset through ``env_method("reset", seed=s)``
with the group's seed ``s``, drawn from ``_rng``, so the VecEnv's own reset (through its wrappers, such as
VecNormalize) continues identical generators. SB3's VecEnvs reset an env that ends an episode without a seed, in
the middle of ``step``, so a group cannot start there: hence whole rounds. The members' first observations are
compared, and an env whose start is not fixed by its seed raises ``ValueError`` instead of training on groups that
do not share a start. Dealing stays unbiased for the same reason as above: each round's groups are dealt before
its first step, from the count alone, and every counted episode runs to its end. Given its seed (which fixes the
start and every random draw of the env), a group's episodes are independent draws of the policy; unconditionally,
each is an episode of the policy from the env's start distribution. ``n_episodes`` and ``n_envs`` must be
multiples of ``G``; keep ``n_episodes`` a multiple of ``n_envs`` so that no round leaves slots idle.

Reproducibility: the algorithm owns one numpy generator, ``_rng``, saved with the model (its state is
:attr:`EpisodicOnPolicyAlgorithm.generator_state`, for checkpoints). Every collection seeds the env's reset (and,
on the torch path, torch's generator) from it, and it draws the actions of the numpy actor and any minibatch
order. So a run is a function of ``seed=`` alone, and a saved model that is loaded and trained further continues
exactly as the uninterrupted run would have.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, ClassVar, cast

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv, unwrap_vec_normalize

from sb3_reinforce.common.dealer import EpisodeDealer
from sb3_reinforce.common.episode_buffer import EpisodeBuffer
from sb3_reinforce.common.fast_actor import NumpyActor


def check_finite_observations(observations: Any, num_timesteps: int) -> None:
    """Raise FloatingPointError if a floating-point observation (or one entry of a Dict's) is nan or inf."""
    arrays = observations.values() if isinstance(observations, dict) else [observations]
    for array in arrays:
        array = np.asarray(array)
        if np.issubdtype(array.dtype, np.floating) and not np.isfinite(array).all():
            bad = array[~np.isfinite(array)].reshape(-1)[0]
            raise FloatingPointError(
                f"non-finite observation ({bad}) by num_timesteps={num_timesteps}; the policy was not changed. "
                "Check the env for nan/inf observations (VecCheckNan) or clip them (VecNormalize's clip_obs)."
            )


# The most episodes one update may take: far above any published policy-gradient batch (Duan et al. 2016 use
# 50,000 steps), and low enough that a typo (10**9) is refused instead of filling the memory.
MAX_EPISODES = 100_000


def is_integer(value: Any) -> bool:
    """An integer (numpy's included); a bool is not one, though Python counts it as an int."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_same_start(observations: Any, n_groups: int, group_size: int) -> None:
    """Raise ValueError unless envs ``g * group_size .. (g + 1) * group_size - 1`` observe the same thing, for each
    of the first ``n_groups`` groups: the members of a same-start group, just reset with one seed."""
    arrays = observations.values() if isinstance(observations, dict) else [observations]
    for array in arrays:
        members = np.asarray(array)[: n_groups * group_size].reshape(n_groups, group_size, -1)
        same = (members == members[:, :1]).all(axis=2)
        if not same.all():
            group, member = np.argwhere(~same)[0]
            first = int(group) * group_size
            raise ValueError(
                f"group_size={group_size} needs an env whose start is fixed by reset(seed=...): envs {first} and "
                f"{first + int(member)}, reset with one seed, start from different observations; make the env's "
                "reset draw from its seeded np_random only, or use group_size=1"
            )


def check_episodic_arguments(n_episodes: Any, group_size: Any, hang_guard_steps: Any) -> None:
    """Raise ValueError naming the first of the batch's arguments that is out of its range."""
    if not (is_integer(n_episodes) and 2 <= n_episodes <= MAX_EPISODES):
        raise ValueError(
            f"n_episodes must be an integer in [2, {MAX_EPISODES:,}] (one episode's gradient random-walks; "
            f"a batch is held in memory), got {n_episodes!r}"
        )
    if not (is_integer(group_size) and group_size >= 1 and n_episodes % group_size == 0):
        raise ValueError(
            f"group_size must be an integer >= 1 that divides n_episodes={n_episodes} (a batch is made of whole "
            f"groups), got {group_size!r}"
        )
    if not (is_integer(hang_guard_steps) and hang_guard_steps >= 1):
        raise ValueError(f"hang_guard_steps must be an integer >= 1, got {hang_guard_steps!r}")


class EpisodicOnPolicyAlgorithm(OnPolicyAlgorithm):
    """Base for on-policy algorithms trained on batches of ``n_episodes`` complete, on-policy episodes.

    Subclasses implement ``train()`` over ``self.rollout_buffer`` (an :class:`EpisodeBuffer`).

    :param n_episodes: Complete episodes per update (>= 2), split over the envs before collecting.
    :param hang_guard_steps: The hang guard (>= 1): an env whose episode has run this many steps without ending
        raises ``RuntimeError`` instead of collecting forever. It cuts no episode (gymnasium's ``max_episode_steps``
        does): wrap envs that may never end in ``gymnasium.wrappers.TimeLimit``.
    :param use_fast_actor: Collect with the numpy actor of :mod:`sb3_reinforce.common.fast_actor` when the
        policy allows it (``self.fast_actor_reason`` says why it does not). Both paths sample the same
        distribution; the numpy one is several times faster for small MLPs on the CPU.
    :param group_size: Episodes per same-start group (>= 1; 1: no groups). With ``G >= 2`` the episodes are dealt
        in rounds of groups of ``G`` members reset with one seed (see the module doc); ``n_episodes`` and
        ``n_envs`` must be multiples of ``G``.
    """

    # SB3 types it as its RolloutBuffer, whose fixed n_steps rows per env an episodic batch does not have.
    rollout_buffer: EpisodeBuffer  # type: ignore[assignment]
    # Rows per env the rollout buffer holds when the model is set up (SB3's on-policy algorithms hold n_steps);
    # a collection that needs more doubles them, and they are kept for the next ones.
    initial_buffer_rows: ClassVar[int] = 256

    def __init__(
        self,
        policy: str | type[ActorCriticPolicy],
        env: GymEnv | str,
        *,
        n_episodes: int,
        hang_guard_steps: int,
        use_fast_actor: bool = True,
        group_size: int = 1,
        **kwargs: Any,
    ) -> None:
        # Checked before SB3's constructor makes (or steps) any env.
        check_episodic_arguments(n_episodes, group_size, hang_guard_steps)
        window = kwargs.get("stats_window_size", 100)
        if not (is_integer(window) and window >= 1):
            raise ValueError(f"stats_window_size must be an integer >= 1 (episodes averaged), got {window!r}")
        device = kwargs.get("device", "auto")
        try:
            th.device("cpu" if device == "auto" else device)
        except (RuntimeError, TypeError):
            raise ValueError(
                f"device must be 'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device, got {device!r}"
            ) from None
        if "n_steps" in kwargs:
            raise TypeError("n_steps is not an argument of an episodic algorithm: its batches are n_episodes episodes")
        self.n_episodes = int(n_episodes)
        self.group_size = int(group_size)
        self.hang_guard_steps = hang_guard_steps
        self.use_fast_actor = use_fast_actor
        self.fast_actor: NumpyActor | None = None
        self.fast_actor_reason: str | None = None
        # Set by _setup_model, or restored from the saved data before it runs (then kept: see the module doc).
        self._rng: np.random.Generator | None = None
        self._fresh_reset = False
        # SB3's n_steps is a hyperparameter (steps per env per update); here the batch is counted in episodes and
        # n_steps is only what the last collection took: 0 before the first one, then its steps per env.
        super().__init__(policy, env, n_steps=0, **kwargs)

    def _excluded_save_params(self) -> list[str]:
        # The actor holds numpy copies of the weights, rebuilt from the policy on load.
        return [*super()._excluded_save_params(), "fast_actor"]

    def _adopt_saved_names(self) -> None:
        """Models saved before ``max_episode_steps`` was renamed ``hang_guard_steps``: SB3's load() writes a zip's
        data under the names it was saved with, so their bound arrives under the old name."""
        if "max_episode_steps" in self.__dict__:
            self.hang_guard_steps = self.__dict__.pop("max_episode_steps")

    def _setup_model(self) -> None:
        # Not SB3's _setup_model: it allocates a RolloutBuffer of n_steps rows, which an episodic batch has not.
        self._adopt_saved_names()
        # Again here: SB3's load() writes the saved data and its keyword arguments over what the constructor checked.
        check_episodic_arguments(self.n_episodes, self.group_size, self.hang_guard_steps)
        if self.n_envs % self.group_size:
            raise ValueError(
                f"group_size={self.group_size} needs a number of envs that it divides (a group's episodes run on "
                f"group_size envs at once), got n_envs={self.n_envs}"
            )
        self._setup_lr_schedule()
        self.set_random_seed(self.seed)
        policy = self.policy_class(
            self.observation_space, self.action_space, self.lr_schedule, use_sde=self.use_sde, **self.policy_kwargs
        )
        if not isinstance(policy, ActorCriticPolicy):
            raise TypeError(f"{type(self).__name__} needs an ActorCriticPolicy, got {type(policy).__name__}")
        self.policy = policy.to(self.device)
        # SB3's warning for an MLP on a GPU, as A2C and PPO give it (the numpy fast actor needs the CPU too).
        self._maybe_recommend_cpu()
        self.rollout_buffer = EpisodeBuffer(
            self.observation_space, self.action_space, self.n_envs, initial_capacity=self.initial_buffer_rows
        )
        if self.n_episodes < self.n_envs:
            warnings.warn(
                f"n_episodes={self.n_episodes} < n_envs={self.n_envs}: {self.n_envs - self.n_episodes} envs "
                "contribute no episode and all their steps are wasted",
                stacklevel=2,
            )
        if self._rng is None:
            # Drawn from torch's generator, which set_random_seed has just seeded, so `seed=` reproduces runs.
            self._rng = np.random.default_rng(int(th.randint(0, 2**31 - 1, (1,)).item()))
        self.fast_actor, self.fast_actor_reason = None, "disabled by use_fast_actor=False"
        if self.use_fast_actor:
            self.fast_actor, self.fast_actor_reason = NumpyActor.from_policy(
                self.policy, self.observation_space, self.action_space, self.n_envs, self._rng
            )
        if self.verbose >= 1:
            path = "numpy fast actor" if self.fast_actor else f"torch policy ({self.fast_actor_reason})"
            print(f"Collecting with the {path}")

    def _env_seed(self) -> int:
        assert self._rng is not None, "_setup_model() sets the generator"
        return int(self._rng.integers(2**31))

    @property
    def generator_state(self) -> dict[str, Any]:
        """The state of the algorithm's own numpy generator (the envs' reset seeds, the numpy actor's noise,
        minibatch orders), as ``numpy.random.Generator.bit_generator.state`` gives it: plain data, which a checkpoint
        saves beside torch's generator so that a resumed run continues the uninterrupted one exactly.

        Assigning a state (one read from this property) restores it in place: the numpy actor, which draws from the
        same generator, continues from it too.
        """
        if self._rng is None:
            raise RuntimeError("the generator is made with the model: call _setup_model() first")
        return dict(self._rng.bit_generator.state)

    @generator_state.setter
    def generator_state(self, state: dict[str, Any]) -> None:
        if self._rng is None:
            raise RuntimeError("the generator is made with the model: call _setup_model() first")
        self._rng.bit_generator.state = state

    def _setup_learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        reset_num_timesteps: bool = True,
        tb_log_name: str = "run",
        progress_bar: bool = False,
    ) -> tuple[int, BaseCallback]:
        resuming = not reset_num_timesteps and self._last_obs is None
        if self.env is not None and (reset_num_timesteps or resuming) and self.group_size == 1:
            # SB3 is about to reset the env: seed that reset as a collection's own would be, and let the first
            # collection start from it instead of resetting twice (the draws stay in the same order either way).
            self.env.seed(self._env_seed())
        # Same-start groups reset the env every round with seeds of their own and never start from SB3's reset, so
        # it draws no seed. Resumed from a checkpoint, SB3 still resets the env (which takes the seeds the VecEnv
        # was made with), and a VecNormalize would count those observations in its statistics, which the
        # uninterrupted run did not at this step: its statistics stay frozen through that reset.
        frozen = unwrap_vec_normalize(self.env) if self.env is not None and self.group_size > 1 and resuming else None
        frozen = frozen if frozen is not None and frozen.training else None
        if frozen is not None:
            frozen.training = False
        previous = self._last_obs
        try:
            result = super()._setup_learn(total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar)
        finally:
            if frozen is not None:
                frozen.training = True
        self._fresh_reset = self._last_obs is not previous
        return result

    def _update_current_progress_remaining(self, num_timesteps: int, total_timesteps: int) -> None:
        # A collection ends on complete episodes, so the last one overshoots total_timesteps and SB3's
        # 1 - num_timesteps / total_timesteps goes below 0. Schedules are functions on [1, 0]: a user's
        # ``lambda progress: 1e-3 * progress`` must not turn negative in the last update.
        super()._update_current_progress_remaining(num_timesteps, total_timesteps)
        self._current_progress_remaining = max(self._current_progress_remaining, 0.0)

    # ------------------------------------------------------------------------------------------------ collection

    def _start_episodes(self, env: VecEnv, dealer: EpisodeDealer, row: int) -> Any:
        """Reset the envs and deal the episodes that start at row ``row``; return the observations of the reset.

        With same-start groups, the members of each group dealt are first reset with one seed of their own (see the
        module doc), and checked to start from one observation.
        """
        observations: Any
        if self.group_size == 1:
            if self._fresh_reset:
                # SB3's _setup_learn has just reset the env, from a seed of ours: start from there.
                observations = self._last_obs
            else:
                env.seed(self._env_seed())
                observations = env.reset()
            dealer.deal_round(row)
            return observations
        size = self.group_size
        n_groups = dealer.deal_round(row)
        for group in range(n_groups):
            env.env_method("reset", seed=self._env_seed(), indices=list(range(group * size, (group + 1) * size)))
        observations = env.reset()
        check_finite_observations(observations, self.num_timesteps)  # a NaN start differs from itself: not a seed's
        check_same_start(observations, n_groups, size)
        return observations

    def _sampler(self, buffer: EpisodeBuffer) -> Callable[[int, Any], None]:
        """How this collection samples: ``sample(t, observations)`` stores row ``t``'s observations in ``buffer``
        and writes the actions drawn for them into ``buffer.actions[t]``, with the numpy actor or the torch policy."""
        actor = self.fast_actor
        if actor is None:
            self.policy.set_training_mode(False)
            assert self._rng is not None, "_setup_model() sets the generator"
            th.manual_seed(int(self._rng.integers(2**63)))

            def sample_torch(t: int, observations: Any) -> None:
                buffer.store_observation(t, observations)
                self._sample_torch(observations, buffer.actions[t])

            return sample_torch
        # The numpy actor never runs the torch modules, so their train/eval mode does not matter here, and not
        # toggling it saves a walk over every module twice per update.
        actor.sync()
        actor.discard_noise()

        def sample_numpy(t: int, observations: Any) -> None:
            # The actor takes no Dict observations (NumpyActor.from_policy), and reads its input from the buffer's
            # row. The buffer's arrays are looked up at each step: a longer collection reallocates them.
            stored = cast(np.ndarray, buffer.observations)[t]
            stored[...] = observations
            actor.act(stored, buffer.actions[t])

        return sample_numpy

    def _sample_torch(self, observations: Any, actions: np.ndarray) -> None:
        with th.no_grad():
            obs_tensor = obs_as_tensor(observations, self.device)
            try:
                sampled = self.policy.get_distribution(obs_tensor).get_actions()
            except ValueError:  # torch's distributions refuse nan parameters: say where they came from
                check_finite_observations(observations, self.num_timesteps)
                raise
        actions[:] = sampled.cpu().numpy().reshape(actions.shape)

    def _env_actions(self, actions: np.ndarray) -> np.ndarray:
        """SB3's post-processing of sampled actions, as its collection does it: a tanh-squashed Box action lies in
        [-1, 1] and is rescaled to the bounds; another Box action (an unbounded Gaussian's) is clipped to them."""
        if not isinstance(self.action_space, spaces.Box):
            return actions
        if self.policy.squash_output:
            return self.policy.unscale_action(actions)
        return np.clip(actions, self.action_space.low, self.action_space.high)

    def _store_transition(
        self, buffer: EpisodeBuffer, dealer: EpisodeDealer, t: int, rewards: np.ndarray, dones: np.ndarray, infos: Any
    ) -> None:
        """Store row ``t``'s rewards and endings, and mark each counted episode that ended there in ``buffer``."""
        buffer.rewards[t] = rewards
        buffer.episode_ends[t] = dones
        if not dones.any():
            return
        self._update_info_buffer(infos, dones)
        for episode in dealer.end_episodes(np.flatnonzero(dones), t):
            info = infos[episode.env]
            if info.get("TimeLimit.truncated", False) and info.get("terminal_observation") is not None:
                buffer.truncations.append((t, episode.env, info["terminal_observation"]))
            buffer.count_episode(episode.env, episode.first, t, episode.group)

    def _raise_hang(self, dealer: EpisodeDealer, rows: int) -> None:
        env, steps = dealer.longest_running(rows)
        raise RuntimeError(
            f"env {env} has run {steps} steps without ending an episode (hang_guard_steps={self.hang_guard_steps}); "
            "wrap it in gymnasium.wrappers.TimeLimit or raise hang_guard_steps"
        )

    def collect_rollouts(  # type: ignore[override]
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: EpisodeBuffer,
        n_rollout_steps: int = 0,
    ) -> bool:
        """Collect ``n_episodes`` complete episodes with the current policy into ``rollout_buffer``.

        ``n_rollout_steps`` is SB3's: its ``learn()`` passes ``n_steps`` (a batch here is counted in episodes).

        :return: False if a callback stopped training (the partial batch is then dropped, never trained on).
        """
        # Before the first draw of this collection: a callback that saves the run here (the zoo's checkpoints)
        # saves the generators as they are at an update boundary, so a run resumed from it continues bit for bit.
        callback.on_rollout_start()
        dealer = EpisodeDealer(self.n_episodes, env.num_envs, self.group_size)
        observations = self._start_episodes(env, dealer, 0)
        self._fresh_reset = False
        sample = self._sampler(rollout_buffer)
        rollout_buffer.reset()
        if self.use_sde:
            self.policy.reset_noise(env.num_envs)
        # The buffer keeps each env's action flat; callbacks and the env see SB3's shape, (n_envs, *action shape).
        action_shape = (env.num_envs, *(self.action_space.shape or ()))

        t = 0
        while dealer.running:
            rollout_buffer.ensure_row(t)
            if self.use_sde and self.sde_sample_freq > 0 and t > 0 and t % self.sde_sample_freq == 0:
                self.policy.reset_noise(env.num_envs)
            sample(t, observations)
            # The names and shapes of SB3's collection, which callbacks read from their locals: `actions` as
            # sampled (a view of the buffer's row), `clipped_actions` as the env gets them, `n_steps` so far.
            actions = rollout_buffer.actions[t].reshape(action_shape)
            clipped_actions = self._env_actions(actions)
            n_steps = t

            new_obs, rewards, dones, infos = env.step(clipped_actions)
            self.num_timesteps += env.num_envs
            callback.update_locals(locals())
            if not callback.on_step():
                return False

            self._store_transition(rollout_buffer, dealer, t, rewards, dones, infos)
            observations = new_obs
            t += 1
            rollout_buffer.n_steps = t
            if dealer.round_over:
                # Only with groups. The reset ends the (unused) episodes the envs were running: no return crosses it.
                rollout_buffer.episode_ends[t - 1] = True
                observations = self._start_episodes(env, dealer, t)
            if t - dealer.oldest_first_row > self.hang_guard_steps:
                self._raise_hang(dealer, t)

        self._last_obs = observations
        self.n_steps = t
        self.logger.record("rollout/unused_frac", rollout_buffer.unused_fraction())
        self.logger.record("rollout/n_episodes", dealer.n_dealt)
        callback.update_locals(locals())
        callback.on_rollout_end()
        return True
