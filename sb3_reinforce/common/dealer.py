"""Which env runs which counted episode of a batch: the bookkeeping of the episodic collection, without an env.

Rows are the vector steps of one collection: row ``t`` is the ``t``-th step of every env. An env *runs* a counted
episode from the row it starts at to the row that ends it; :class:`EpisodeDealer` deals the batch's
``n_episodes`` counted episodes to the envs as they start (the module doc of
:mod:`sb3_reinforce.common.episodic` says why dealing at the start is unbiased) and reports each one that ends.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray


def first_episodes(n_episodes: int, n_envs: int) -> NDArray[np.int64]:
    """Counted episodes each env starts at the reset: one each, or one for the first ``n_episodes`` envs."""
    dealt = np.zeros(n_envs, dtype=np.int64)
    dealt[: min(n_episodes, n_envs)] = 1
    return dealt


class CountedEpisode(NamedTuple):
    """A counted episode that has ended: env ``env`` ran it over rows ``first .. last`` (inclusive)."""

    env: int
    first: int
    last: int
    group: int


class EpisodeDealer:
    """Deals ``n_episodes`` counted episodes over ``n_envs`` envs as they start, and tracks them to their ends.

    Without groups (``group_size=1``), :meth:`deal_round` at row 0 starts one counted episode in each env (in the
    first ``n_episodes`` envs when there are fewer episodes than envs), and an env that ends a counted episode starts
    another while fewer than ``n_episodes`` have been dealt. Every counted episode is in group 0.

    With same-start groups (``group_size = G >= 2``) the envs form slots of ``G`` consecutive envs, and each round
    (one :meth:`deal_round`, at a reset of every env) deals one group to each slot while fewer than ``n_episodes``
    episodes have been dealt. An env runs one counted episode per round; groups are numbered on across rounds.

    The caller feeds it the envs whose episode ended at each row (:meth:`end_episodes`) until :attr:`running` is
    0, starting a new round whenever :attr:`round_over`.
    """

    def __init__(self, n_episodes: int, n_envs: int, group_size: int = 1) -> None:
        self.n_episodes = n_episodes
        self.group_size = group_size
        # dealt[i]: counted episodes env i has started; finished[i]: those it has ended. Env i runs a counted
        # episode while finished[i] < dealt[i]; once equal with nothing left to deal, its steps go unused.
        self.dealt = np.zeros(n_envs, dtype=np.int64)
        self.finished = np.zeros(n_envs, dtype=np.int64)
        # first_row[i]: the row at which env i's counted episode started (or will start, once it is dealt).
        self.first_row = np.zeros(n_envs, dtype=np.int64)
        # The group of the counted episode each env runs: without groups the whole batch is group 0; with them,
        # envs i * G .. (i + 1) * G - 1 run the round's group i.
        self._slot = np.arange(n_envs) // group_size if group_size > 1 else np.zeros(n_envs, dtype=np.int64)
        self.group = self._slot
        self.n_dealt = 0
        self.running = 0  # counted episodes started and not yet ended
        # The first row of the oldest counted episode still running: recomputed only when an episode ends, so the
        # collection's hang guard costs one subtraction per step.
        self.oldest_first_row = 0

    @property
    def round_over(self) -> bool:
        """Whether a new round must start: the round's episodes have all ended and groups remain to deal (with
        groups only: without them, an env that ends a counted episode is dealt the next one at once)."""
        return self.running == 0 and self.n_dealt < self.n_episodes

    def deal_round(self, row: int) -> int:
        """Deal the counted episodes that start at a reset of every env before ``row``.

        :return: the number of groups dealt; envs ``0 .. groups * group_size - 1`` run them (without groups, the
            number of envs that run a counted episode)
        """
        round_dealt = first_episodes(self.n_episodes - self.n_dealt, len(self.dealt))
        self.group = self.n_dealt // self.group_size + self._slot
        self.dealt += round_dealt
        self.running = int(round_dealt.sum())
        self.n_dealt += self.running
        self.first_row[:] = row
        self.oldest_first_row = row
        return self.running // self.group_size

    def end_episodes(self, envs: Iterable[int], row: int) -> list[CountedEpisode]:
        """Envs ``envs`` ended an episode at ``row``: the counted episodes among those, in the order of ``envs``.

        Without groups, each env that ends a counted episode is dealt another while fewer than ``n_episodes`` have
        been dealt: decided before the new episode's first step, so the choice cannot depend on its outcome.
        """
        ended = []
        for env in envs:
            if self.finished[env] >= self.dealt[env]:
                continue  # an unused episode: the env ran no counted one
            ended.append(CountedEpisode(int(env), int(self.first_row[env]), row, int(self.group[env])))
            self.finished[env] += 1
            self.first_row[env] = row + 1
            if self.group_size == 1 and self.n_dealt < self.n_episodes:
                self.dealt[env] += 1
                self.n_dealt += 1
            else:
                self.running -= 1
        counted = self.first_row[self.finished < self.dealt]
        self.oldest_first_row = int(counted.min()) if counted.size else row + 1
        return ended

    def longest_running(self, rows: int) -> tuple[int, int]:
        """``(env, steps)``: the env whose counted episode has run longest after ``rows`` rows, and its steps."""
        steps = np.where(self.finished < self.dealt, rows - self.first_row, 0)
        env = int(steps.argmax())
        return env, int(steps[env])
