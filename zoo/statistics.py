"""Statistics of the benchmark's runs, after Agarwal et al. 2021 ("Deep Reinforcement Learning at the Edge of the
Statistical Precipice", NeurIPS): the interquartile mean, the probability of improvement, performance profiles,
and their stratified-bootstrap confidence intervals. Pure functions of arrays of final scores.

Notation. A *stratum* is the runs (seeds) of one algorithm on one task: a float array whose axis 0 is the run;
further axes (a learning curve's evaluations) travel with their run. A statistic takes a list of strata.

- **IQM**: the 25% trimmed mean of the runs pooled over the strata, ``floor(n / 4)`` of the ``n`` values cut from
  each end (``scipy.stats.trim_mean(values, 0.25)``, rliable's ``aggregate_iqm``). With fewer than 4 runs nothing
  is cut and the IQM is the mean; with 5 it is the mean of the middle 3.
- **Probability of improvement** of X over Y on task m, with runs ``x_1..x_N`` and ``y_1..y_K``:
  ``P_m = (1 / NK) sum_ij [x_i > y_j] + 1/2 [x_i = y_j]``, the Mann-Whitney U statistic of X over ``NK``;
  over tasks ``P(X > Y) = mean_m P_m``. Each task weighs the same whatever its number of runs, and
  ``P(X > Y) + P(Y > X) = 1``.
- **Performance profile**: at each threshold tau, the fraction of the pooled runs whose score exceeds tau.
- **Stratified bootstrap**: each stratum is resampled with replacement on its own (its runs, never another
  task's or another algorithm's), the statistic recomputed on each of ``reps`` resamples, and the 95% interval
  is the 2.5% and 97.5% percentiles of those (the percentile method). A stratum of one run, or of equal
  scores, never varies, so a constant sample has a degenerate interval.

Why our own loop. rliable 1.2.0, the paper's library (its repository archived), resolves with pip here, but the
newest arch its pin allows (7.2, ``arch<8``) fails at import under pandas 3 (``TypeError`` from pandas'
``deprecate_kwarg``). It would also bring arch, statsmodels, seaborn and absl for a resampling step of a few lines,
it takes a runs x tasks matrix (so every task needs the same number of runs, while the baselines have fewer seeds
than Reinforce and new tasks arrive seed by seed), and its ``StratifiedBootstrap`` draws from numpy's global
random state whatever ``random_state`` it is given. ``scipy.stats.bootstrap`` does resample several samples
independently, which is the stratification, but refuses a sample of one run and is not a dependency of the zoo;
the tests use it as the reference. Here every call draws from its own ``numpy.random.default_rng(seed)`` with a
fixed seed, so a table rebuilt from the same runs repeats its intervals digit for digit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

F64 = NDArray[np.float64]
# A statistic of resampled strata: each array has a leading axis of resamples, then the runs, then any further
# axes; it returns one value (or one array) per resample along its leading axis.
Statistic = Callable[[list[F64]], F64]

CONFIDENCE = 0.95
# rliable's interval estimates take 50,000 resamples and its profiles 2,000. At 10,000 an endpoint of the suite's
# intervals moves by about 0.01 of a normalized score from one seed to another, and a profile of a few hundred runs
# stays small in memory; the seed is fixed so that a table repeats.
BOOTSTRAP_REPS = 10_000
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class Interval:
    """A point estimate and its confidence interval."""

    point: float
    low: float
    high: float


@dataclass(frozen=True)
class Band:
    """Point estimates along a grid (thresholds, evaluation steps) and their pointwise confidence band."""

    point: F64
    low: F64
    high: F64


def strata_of(samples: Sequence[ArrayLike]) -> list[F64]:
    """The samples as float arrays, each checked to hold at least one run, every score finite: a NaN compares
    neither above nor below anything, and would break ``P(X > Y) + P(Y > X) = 1``."""
    strata = [np.asarray(sample, dtype=np.float64) for sample in samples]
    if not strata or any(stratum.ndim == 0 or len(stratum) == 0 for stratum in strata):
        raise ValueError("every stratum needs at least one run, and there must be at least one stratum")
    if not all(np.isfinite(stratum).all() for stratum in strata):
        raise ValueError("every score must be finite (a NaN or an infinity is not a run's score)")
    return strata


def iqm_along(values: F64, axis: int) -> F64:
    """The interquartile mean along ``axis``: ``floor(n / 4)`` values cut from each end, the rest averaged."""
    ordered = np.sort(values, axis=axis)
    n = ordered.shape[axis]
    cut = n // 4
    return np.asarray(np.take(ordered, np.arange(cut, n - cut), axis=axis).mean(axis=axis), dtype=np.float64)


def interquartile_mean(values: ArrayLike) -> float:
    """The IQM of all the values, pooled."""
    (pooled,) = strata_of([np.ravel(np.asarray(values, dtype=np.float64))])
    return float(iqm_along(pooled, axis=0))


def pooled_iqm(resampled: list[F64]) -> F64:
    """Statistic: the IQM of the runs of every stratum pooled (rliable's aggregate over runs x tasks)."""
    return iqm_along(np.concatenate(resampled, axis=1), axis=1)


def improvement_along(x: F64, y: F64) -> F64:
    """``P(x > y)`` along the last axis of each (ties count 1/2), for every index of the leading axes."""
    greater = (x[..., :, None] > y[..., None, :]).mean(axis=(-2, -1))
    ties = (x[..., :, None] == y[..., None, :]).mean(axis=(-2, -1))
    return np.asarray(greater + 0.5 * ties, dtype=np.float64)


def probability_of_improvement(x_tasks: Sequence[ArrayLike], y_tasks: Sequence[ArrayLike]) -> float:
    """``P(X > Y)``: the probability that a run of X beats a run of Y on the same task, averaged over tasks.

    :param x_tasks: X's final scores, one array of runs per task
    :param y_tasks: Y's on the same tasks, in the same order (a task may have another number of runs)
    """
    return improvement_interval(x_tasks, y_tasks, reps=0).point


def stratified_bootstrap(strata: Sequence[ArrayLike], statistic: Statistic, reps: int, seed: int) -> F64:
    """The statistic on ``reps`` stratified resamples: each stratum's runs drawn with replacement on their own.

    :return: an array of ``reps`` values (or arrays: the statistic's shape after the leading axis)
    """
    rng = np.random.default_rng(seed)
    resampled = []
    for stratum in strata_of(strata):
        runs = len(stratum)
        resampled.append(stratum[rng.integers(0, runs, size=(reps, runs))])
    return statistic(resampled)


def bootstrap_band(
    strata: Sequence[ArrayLike],
    statistic: Statistic,
    reps: int = BOOTSTRAP_REPS,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CONFIDENCE,
) -> Band:
    """The statistic of the strata and its percentile confidence interval under the stratified bootstrap.

    ``reps=0`` gives the point estimate alone, as a degenerate interval.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    observed = strata_of(strata)
    point = statistic([stratum[None] for stratum in observed])[0]
    if reps == 0:
        return Band(point, point, point)
    values = stratified_bootstrap(observed, statistic, reps, seed)
    tail = (1 - confidence) / 2
    low, high = np.quantile(values, [tail, 1 - tail], axis=0)
    return Band(point, low, high)


def scalar(band: Band) -> Interval:
    return Interval(float(band.point), float(band.low), float(band.high))


def iqm_interval(tasks: Sequence[ArrayLike], reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED) -> Interval:
    """The IQM of the runs of every task pooled, with its stratified-bootstrap interval (one task: its runs)."""
    return scalar(bootstrap_band(tasks, pooled_iqm, reps, seed))


def improvement_interval(
    x_tasks: Sequence[ArrayLike], y_tasks: Sequence[ArrayLike], reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED
) -> Interval:
    """``P(X > Y)`` averaged over tasks, with its interval: X's and Y's runs resampled within each task, apart."""
    if len(x_tasks) != len(y_tasks):
        raise ValueError(f"X has {len(x_tasks)} tasks and Y {len(y_tasks)}: they must be the same tasks")
    tasks = len(x_tasks)

    def average_improvement(resampled: list[F64]) -> F64:
        per_task = [improvement_along(resampled[m], resampled[tasks + m]) for m in range(tasks)]
        return np.asarray(np.mean(per_task, axis=0), dtype=np.float64)

    return scalar(bootstrap_band([*x_tasks, *y_tasks], average_improvement, reps, seed))


def performance_profile(
    tasks: Sequence[ArrayLike], thresholds: ArrayLike, reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED
) -> Band:
    """The fraction of the runs of every task pooled whose score exceeds each threshold, with its band."""
    taus = np.asarray(thresholds, dtype=np.float64)

    def fraction_above(resampled: list[F64]) -> F64:
        pooled = np.concatenate(resampled, axis=1)
        return np.asarray((pooled[..., None] > taus).mean(axis=1), dtype=np.float64)

    return bootstrap_band(tasks, fraction_above, reps, seed)


def curve_band(curves: ArrayLike, reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED) -> Band:
    """The IQM over runs at each evaluation of ``curves`` (runs x evaluations), with its band; a run's whole
    curve is resampled as one, since its evaluations are of one training run."""
    return bootstrap_band([curves], lambda resampled: iqm_along(resampled[0], axis=1), reps, seed)


def normalized(scores: ArrayLike, low: float, high: float) -> F64:
    """``(scores - low) / (high - low)``: 0 at ``low``, 1 at ``high``."""
    if not high > low:
        raise ValueError(f"a normalization needs high > low, got low {low} and high {high}")
    return (np.asarray(scores, dtype=np.float64) - low) / (high - low)
