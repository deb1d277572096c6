"""The episode dealer of the episodic collection, driven by hand: no env, no policy, only rows and envs."""

from __future__ import annotations

import numpy as np
import pytest

from sb3_reinforce.common.dealer import CountedEpisode, EpisodeDealer, first_episodes


def test_first_episodes_one_per_env_while_they_last() -> None:
    assert first_episodes(16, 8).tolist() == [1] * 8
    assert first_episodes(2, 4).tolist() == [1, 1, 0, 0]


def test_an_env_that_ends_a_counted_episode_is_dealt_the_next_while_episodes_remain() -> None:
    dealer = EpisodeDealer(n_episodes=3, n_envs=2)
    assert dealer.deal_round(0) == 2
    assert dealer.running == 2
    # Env 1 ends first: it is dealt the third episode, before that episode's first step.
    assert dealer.end_episodes([1], 0) == [CountedEpisode(env=1, first=0, last=0, group=0)]
    assert (dealer.n_dealt, dealer.running) == (3, 2)
    # Env 0 ends with nothing left to deal: its next episode is unused, and never reported.
    assert dealer.end_episodes([0], 2) == [CountedEpisode(env=0, first=0, last=2, group=0)]
    assert dealer.running == 1
    assert dealer.end_episodes([0], 3) == []
    assert dealer.end_episodes([1], 4) == [CountedEpisode(env=1, first=1, last=4, group=0)]
    assert dealer.running == 0
    assert not dealer.round_over  # the batch is complete


def test_fewer_episodes_than_envs_leave_the_last_envs_unused() -> None:
    dealer = EpisodeDealer(n_episodes=2, n_envs=4)
    assert dealer.deal_round(0) == 2
    assert dealer.end_episodes([2, 3, 0, 1], 5) == [
        CountedEpisode(env=0, first=0, last=5, group=0),
        CountedEpisode(env=1, first=0, last=5, group=0),
    ]
    assert dealer.running == 0


@pytest.mark.parametrize("seed", range(20))
def test_the_batch_is_exactly_n_episodes_whatever_the_lengths(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_episodes, n_envs = int(rng.integers(2, 12)), int(rng.integers(1, 6))
    dealer = EpisodeDealer(n_episodes, n_envs)
    dealer.deal_round(0)
    counted: list[CountedEpisode] = []
    row = 0
    while dealer.running:
        counted += dealer.end_episodes(np.flatnonzero(rng.random(n_envs) < 0.3), row)
        row += 1
    assert len(counted) == n_episodes
    # Each env's counted episodes are a prefix of its column: consecutive, from row 0.
    for env in range(n_envs):
        spans = [(episode.first, episode.last) for episode in counted if episode.env == env]
        assert [first for first, _ in spans] == [0, *(last + 1 for _, last in spans[:-1])][: len(spans)]
        assert bool(spans) == (env < n_episodes)


def test_same_start_groups_are_dealt_in_rounds_and_numbered_on() -> None:
    dealer = EpisodeDealer(n_episodes=6, n_envs=4, group_size=2)
    assert dealer.deal_round(0) == 2  # two slots of two envs
    assert dealer.group.tolist() == [0, 0, 1, 1]
    # An env that ends its group's episode is not dealt another within the round.
    assert dealer.end_episodes([0, 2, 3], 1) == [
        CountedEpisode(env=0, first=0, last=1, group=0),
        CountedEpisode(env=2, first=0, last=1, group=1),
        CountedEpisode(env=3, first=0, last=1, group=1),
    ]
    assert not dealer.round_over
    assert dealer.end_episodes([0, 1], 3) == [CountedEpisode(env=1, first=0, last=3, group=0)]
    assert dealer.round_over
    # The last round deals one group, to the first slot, from the row after the reset.
    assert dealer.deal_round(4) == 1
    assert dealer.end_episodes([2, 1, 0], 6) == [
        CountedEpisode(env=1, first=4, last=6, group=2),
        CountedEpisode(env=0, first=4, last=6, group=2),
    ]
    assert dealer.running == 0
    assert not dealer.round_over


def test_the_hang_guard_sees_the_oldest_counted_episode_still_running() -> None:
    dealer = EpisodeDealer(n_episodes=4, n_envs=2)
    dealer.deal_round(0)
    assert dealer.oldest_first_row == 0
    dealer.end_episodes([1], 2)  # env 1 starts its next counted episode at row 3; env 0 still runs from 0
    assert dealer.oldest_first_row == 0
    dealer.end_episodes([0], 4)
    assert dealer.oldest_first_row == 3
    assert dealer.longest_running(rows=9) == (1, 6)
    dealer.end_episodes([0, 1], 9)  # the last two counted episodes end: nothing runs
    assert dealer.running == 0
    assert dealer.oldest_first_row == 10
    assert dealer.longest_running(rows=10) == (0, 0)
