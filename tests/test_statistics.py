"""The benchmark's statistics (``zoo.statistics``): known answers worked out by hand, agreement with SciPy
(``trim_mean``, ``mannwhitneyu``, ``bootstrap``) and with a bootstrap distribution enumerated exactly, and
properties over generated samples."""

from __future__ import annotations

import itertools
from pathlib import Path
from random import Random
from typing import Any

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from zoo import statistics
from zoo.statistics import (
    curve_band,
    improvement_interval,
    interquartile_mean,
    iqm_interval,
    normalized,
    performance_profile,
    pooled_iqm,
    probability_of_improvement,
    stratified_bootstrap,
)

scores = st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=12)
# Small integers, so that ties between runs are common.
tied_scores = st.lists(st.integers(-3, 3).map(float), min_size=1, max_size=8)


def plain_improvement(x: list[float], y: list[float]) -> float:
    """P(x > y) on one task, one pair of runs at a time."""
    wins = 0.0
    for a in x:
        for b in y:
            wins += 1.0 if a > b else 0.5 if a == b else 0.0
    return wins / (len(x) * len(y))


# ------------------------------------------------------------------------------------------ interquartile mean


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([7.0], 7.0),
        ([1.0, 2.0, 6.0], 3.0),  # fewer than 4 runs: nothing is cut, the mean
        ([5.0, 1.0, 4.0, 2.0, 3.0], 3.0),  # 5 runs: the middle 3, (2 + 3 + 4) / 3
        ([1.0, 2.0, 3.0, 4.0, 100.0, 200.0, 300.0, 400.0], 76.75),  # 8 runs: (3 + 4 + 100 + 200) / 4
        ([-1000.0, 10.0, 11.0, 12.0, 1e9], 11.0),  # one outlier at each end costs nothing
    ],
)
def test_interquartile_mean_known_answers(values: list[float], expected: float) -> None:
    assert interquartile_mean(values) == pytest.approx(expected)


@settings(max_examples=200, deadline=None)
@given(scores)
def test_interquartile_mean_is_scipy_trim_mean_and_within_the_range(values: list[float]) -> None:
    iqm = interquartile_mean(values)
    assert iqm == pytest.approx(scipy.stats.trim_mean(values, 0.25), rel=1e-9, abs=1e-6)
    assert min(values) - 1e-6 <= iqm <= max(values) + 1e-6


@settings(max_examples=100, deadline=None)
@given(scores, st.randoms(use_true_random=False), st.floats(0.1, 10), st.floats(-100, 100))
def test_interquartile_mean_ignores_order_and_follows_affine_maps(
    values: list[float], random: Random, scale: float, shift: float
) -> None:
    shuffled = list(values)
    random.shuffle(shuffled)
    assert interquartile_mean(shuffled) == pytest.approx(interquartile_mean(values), rel=1e-12, abs=1e-6)
    moved = [scale * value + shift for value in values]
    assert interquartile_mean(moved) == pytest.approx(scale * interquartile_mean(values) + shift, rel=1e-9, abs=1e-3)


# -------------------------------------------------------------------------------- probability of improvement


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [
        ([[5.0, 6.0, 7.0]], [[1.0, 2.0]], 1.0),  # every run of X beats every run of Y
        ([[1.0, 2.0]], [[5.0, 6.0, 7.0]], 0.0),
        ([[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]], 0.5),  # identical samples
        ([[4.0, 4.0]], [[4.0]], 0.5),  # all tied
        ([[1.0, 3.0]], [[2.0, 2.0]], 0.5),  # 2 wins, 2 losses
        ([[2.0, 3.0]], [[2.0]], 0.75),  # a tie and a win: (1/2 + 1) / 2
        # Each task weighs the same, whatever its number of runs: (1 + 0) / 2.
        ([[9.0, 9.0, 9.0, 9.0, 9.0], [0.0]], [[1.0], [5.0, 6.0]], 0.5),
    ],
)
def test_probability_of_improvement_known_answers(x: list[list[float]], y: list[list[float]], expected: float) -> None:
    assert probability_of_improvement(x, y) == pytest.approx(expected)


@settings(max_examples=200, deadline=None)
@given(tied_scores, tied_scores)
def test_probability_of_improvement_is_mann_whitney_u_over_the_pairs(x: list[float], y: list[float]) -> None:
    forward = probability_of_improvement([x], [y])
    assert forward == pytest.approx(plain_improvement(x, y))
    assert forward == pytest.approx(scipy.stats.mannwhitneyu(x, y).statistic / (len(x) * len(y)))
    assert forward + probability_of_improvement([y], [x]) == pytest.approx(1.0)
    assert 0.0 <= forward <= 1.0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(tied_scores, tied_scores), min_size=1, max_size=4))
def test_probability_of_improvement_averages_the_tasks(tasks: list[tuple[list[float], list[float]]]) -> None:
    x, y = [task[0] for task in tasks], [task[1] for task in tasks]
    expected = np.mean([plain_improvement(a, b) for a, b in tasks])
    assert probability_of_improvement(x, y) == pytest.approx(expected)
    assert probability_of_improvement(x, y) + probability_of_improvement(y, x) == pytest.approx(1.0)
    interval = improvement_interval(x, y, reps=200)
    assert 0.0 <= interval.low <= interval.high <= 1.0


def test_probability_of_improvement_needs_the_same_tasks() -> None:
    with pytest.raises(ValueError, match="same tasks"):
        probability_of_improvement([[1.0], [2.0]], [[1.0]])


# ----------------------------------------------------------------------------------------- bootstrap intervals


def test_an_interval_contains_its_point_estimate() -> None:
    hopper = [1410.9, 3617.2, 1487.0, 2295.9, 2789.4]
    interval = iqm_interval([hopper])
    assert interval.point == pytest.approx((1487.0 + 2295.9 + 2789.4) / 3)
    assert min(hopper) <= interval.low < interval.point < interval.high <= max(hopper)
    improvement = improvement_interval([hopper], [[731.0, 1897.4, 816.6]])
    assert improvement.point == pytest.approx(13 / 15)  # Reinforce's runs beat 13 of the 15 pairs
    assert improvement.low < improvement.point <= improvement.high


@pytest.mark.parametrize("runs", [[3.0], [2.5, 2.5, 2.5, 2.5, 2.5]])
def test_a_constant_sample_has_a_degenerate_interval(runs: list[float]) -> None:
    interval = iqm_interval([runs])
    assert interval.low == interval.point == interval.high == runs[0]


def test_the_resampling_stays_within_each_task() -> None:
    # Every run of task A scores 0 and every run of task B 1: a stratified resample always holds three of each, so
    # the pooled IQM never moves. Resampling the six runs together would mix them and widen the interval.
    interval = iqm_interval([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    assert interval.low == interval.point == interval.high == 0.5
    improvement = improvement_interval([[0.0, 0.0], [1.0, 1.0]], [[1.0], [0.0]])
    assert improvement.low == improvement.point == improvement.high == 0.5


def test_the_intervals_repeat_with_the_seed() -> None:
    runs = [[1.0, 5.0, 2.0, 8.0, 3.0], [10.0, 30.0, 20.0]]
    assert iqm_interval(runs) == iqm_interval(runs)
    # The percentiles of a few runs sit on the same atoms whatever the seed; the resamples themselves differ.
    first, again, other = (stratified_bootstrap(runs, pooled_iqm, 100, seed) for seed in (0, 0, 1))
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)


def test_a_learning_curve_is_resampled_run_by_run() -> None:
    # Each run's evaluations are equal, so a resample that keeps whole runs has equal IQMs at both evaluations.
    curves = np.array([[0.0, 0.0], [1.0, 1.0], [5.0, 5.0]])
    resampled = stratified_bootstrap([curves], lambda runs: statistics.iqm_along(runs[0], axis=1), 500, 0)
    assert resampled.shape == (500, 2)
    assert np.array_equal(resampled[:, 0], resampled[:, 1])
    assert np.ptp(resampled[:, 0]) > 0
    band = curve_band(np.array([[0.0, 10.0], [2.0, 30.0], [4.0, 20.0], [100.0, 40.0]]))
    assert band.point.tolist() == pytest.approx([3.0, 25.0])  # the middle two runs of each evaluation
    assert np.all(band.low <= band.point)
    assert np.all(band.point <= band.high)


@pytest.mark.parametrize("statistic", ["mean", "iqm"])
def test_one_task_agrees_with_scipy_bootstrap(statistic: str) -> None:
    runs = np.array([3.1, -2.0, 7.4, 0.5, 12.0, 4.4, 5.0, 1.2])
    if statistic == "mean":
        ours = statistics.scalar(
            statistics.bootstrap_band([runs], lambda resampled: resampled[0].mean(axis=1), reps=50_000)
        )
        reference = scipy.stats.bootstrap((runs,), np.mean, n_resamples=50_000, method="percentile", rng=1)
    else:
        ours = iqm_interval([runs], reps=50_000)
        reference = scipy.stats.bootstrap(
            (runs,),
            lambda sample, axis: scipy.stats.trim_mean(sample, 0.25, axis=axis),
            n_resamples=50_000,
            method="percentile",
            rng=1,
        )
    # Two Monte Carlo estimates of the same percentiles: they agree to within a few percent of the data's range.
    tolerance = 0.03 * np.ptp(runs)
    assert ours.low == pytest.approx(reference.confidence_interval.low, abs=tolerance)
    assert ours.high == pytest.approx(reference.confidence_interval.high, abs=tolerance)


def test_tasks_agree_with_scipy_bootstrap_of_independent_samples() -> None:
    # scipy.stats.bootstrap resamples each of several samples on its own: the stratified bootstrap, one sample a task.
    hopper = np.array([1410.9, 3617.2, 1487.0, 2295.9, 2789.4])
    walker = np.array([1775.4, 2547.0, 2517.6, 4149.7, 2124.9])
    ours = iqm_interval([hopper, walker], reps=50_000)
    reference = scipy.stats.bootstrap(
        (hopper, walker),
        lambda a, b, axis: scipy.stats.trim_mean(np.concatenate([a, b], axis=axis), 0.25, axis=axis),
        n_resamples=50_000,
        method="percentile",
        rng=1,
    )
    tolerance = 0.02 * (max(hopper.max(), walker.max()) - min(hopper.min(), walker.min()))
    assert ours.low == pytest.approx(reference.confidence_interval.low, abs=tolerance)
    assert ours.high == pytest.approx(reference.confidence_interval.high, abs=tolerance)


def test_the_interval_matches_the_enumerated_bootstrap_distribution() -> None:
    # Two tasks of 3 runs: the 27 x 27 stratified resamples are equally likely, so the bootstrap distribution of the
    # pooled IQM is known exactly; the Monte Carlo percentiles must fall between its 2% and 3% (97% and 98%) points.
    task_a, task_b = [0.0, 1.0, 7.0], [2.0, 4.0, 13.0]
    values = np.sort(
        [
            interquartile_mean([*a, *b])
            for a in itertools.product(task_a, repeat=3)
            for b in itertools.product(task_b, repeat=3)
        ]
    )
    interval = iqm_interval([task_a, task_b], reps=100_000)
    assert np.quantile(values, 0.02) <= interval.low <= np.quantile(values, 0.03)
    assert np.quantile(values, 0.97) <= interval.high <= np.quantile(values, 0.98)
    assert interval.point == interquartile_mean([*task_a, *task_b])


@settings(max_examples=50, deadline=None)
@given(st.lists(scores, min_size=1, max_size=3))
def test_an_iqm_interval_stays_within_the_data(tasks: list[list[float]]) -> None:
    interval = iqm_interval(tasks, reps=200)
    pooled = [value for task in tasks for value in task]
    assert min(pooled) - 1e-6 <= interval.low <= interval.high <= max(pooled) + 1e-6
    assert interval.point == pytest.approx(float(pooled_iqm([np.asarray(task)[None] for task in tasks])[0]))


def test_an_empty_task_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one run"):
        iqm_interval([[1.0, 2.0], []])
    with pytest.raises(ValueError, match="at least one stratum"):
        iqm_interval([])


# ------------------------------------------------------------------------------- profiles and normalization


def test_performance_profile_known_answer() -> None:
    band = performance_profile([[0.1, 0.5], [0.9]], [0.0, 0.5, 1.0], reps=500)
    assert band.point.tolist() == pytest.approx([1.0, 1 / 3, 0.0])  # 0.5 is not above 0.5
    assert band.low[0] == band.high[0] == 1.0  # every resample is above 0
    assert band.low[1] <= 1 / 3 <= band.high[1]


@settings(max_examples=50, deadline=None)
@given(st.lists(scores, min_size=1, max_size=3))
def test_a_performance_profile_falls_from_one_to_zero(tasks: list[list[float]]) -> None:
    pooled = [value for task in tasks for value in task]
    taus = np.linspace(min(pooled) - 1, max(pooled), 21)
    band = performance_profile(tasks, taus, reps=100)
    assert band.point[0] == 1.0
    assert band.point[-1] == 0.0
    assert np.all(np.diff(band.point) <= 0)
    assert np.all((band.low <= band.point + 1e-12) & (band.point <= band.high + 1e-12))


def test_normalized_scores() -> None:
    assert normalized([-100.0, 0.0, 300.0, 500.0], -100.0, 300.0).tolist() == [0.0, 0.25, 1.0, 1.5]
    with pytest.raises(ValueError, match="high > low"):
        normalized([1.0], 5.0, 5.0)


# ---------------------------------------------------------------------------- the benchmark's suite section


def runs_of(algo: str, env_id: str, scores: list[float]) -> list[dict[str, Any]]:
    return [{"algo": algo, "env_id": env_id, "seed": seed, "mean_reward": score} for seed, score in enumerate(scores)]


def test_the_suite_compares_the_mujoco_tasks_both_algorithms_ran(tmp_path: Path) -> None:
    pytest.importorskip("mujoco", reason="the MuJoCo tasks need the mujoco extra")
    from zoo import benchmark_table

    records = [
        *runs_of("reinforce", "Hopper-v5", [1000.0, 2000.0, 3000.0]),
        *runs_of("a2c", "Hopper-v5", [500.0, 1500.0]),
        *runs_of("reinforce", "Swimmer-v5", [350.0]),  # no a2c run: not compared
        *runs_of("reinforce", "CartPole-v1", [500.0]),  # not MuJoCo
        *runs_of("a2c", "CartPole-v1", [10.0]),
    ]
    suite = benchmark_table.compare_suite(records)
    assert suite is not None
    assert suite.tasks == ["Hopper-v5"]
    floor = suite.floors["Hopper-v5"]
    assert floor == benchmark_table.random_policy_score("Hopper-v5")  # seeded: the same on every call
    assert -100 < floor < 100  # Hopper pays about 1 a step for the few steps a random policy stays up
    assert suite.ceilings["Hopper-v5"] == ("reinforce", 2000.0)  # the best mean
    expected = (np.array([1000.0, 2000.0, 3000.0]) - floor) / (2000.0 - floor)
    assert suite.normalized["reinforce"][0] == pytest.approx(expected)
    assert suite.iqm["reinforce"].point == pytest.approx(1.0)  # the mean of 3 runs, at the best mean
    [improvement] = suite.improvements
    assert (improvement.x, improvement.y, improvement.tasks) == ("reinforce", "a2c", ["Hopper-v5"])
    assert improvement.interval.point == pytest.approx(5 / 6)  # 1000 loses to 1500, the other 5 pairs win
    lines = "\n".join(benchmark_table.suite_lines(suite))
    assert "| reinforce > a2c | 1 | 0.83 [" in lines
    assert "| Hopper-v5 | " in lines
    assert "Swimmer-v5" not in lines
    assert "CartPole-v1" not in lines
    profile = benchmark_table.plot_profile(suite, tmp_path)
    assert profile == tmp_path / "plots" / benchmark_table.PROFILE_PLOT
    assert profile.stat().st_size > 1000


def test_the_suite_needs_two_algorithms_and_a_scale() -> None:
    pytest.importorskip("mujoco", reason="the MuJoCo tasks need the mujoco extra")
    from zoo import benchmark_table

    assert benchmark_table.compare_suite(runs_of("reinforce", "Hopper-v5", [1000.0, 2000.0])) is None
    # Both below a random policy: no scale to normalize Hopper by, but the runs still compare.
    suite = benchmark_table.compare_suite(
        [*runs_of("reinforce", "Hopper-v5", [-50.0, -40.0]), *runs_of("a2c", "Hopper-v5", [-60.0])]
    )
    assert suite is not None
    assert suite.tasks == []
    assert suite.left_out == ["Hopper-v5"]
    assert suite.improvements[0].interval.point == 1.0
    assert "Left out: Hopper-v5" in "\n".join(benchmark_table.suite_lines(suite))
