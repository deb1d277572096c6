"""How much each baseline lowers the variance of REINFORCE's policy gradient, at a fixed policy and equal samples.

For one policy, held fixed, ``--batches`` batches of ``--n-episodes`` complete episodes are collected by the
library's own collection (``Reinforce.collect_rollouts``), and on each the gradient of training's surrogate
``mean_t(A_t * log pi(a_t | s_t))`` over the actor's parameters is taken with the advantages of every variant:

- ``none``, ``mean``, ``loo`` and ``value``, from one set of batches (common random numbers: their ratios are
  paired); the critic-free advantages come from :mod:`sb3_reinforce.common.advantages`, the critic's from the model
  itself (``Reinforce._advantages``, which bootstraps a time-limit cut as training does);
- ``loo`` and ``grpo`` with same-start groups of ``G`` (``--group-sizes``), from batches collected with
  ``group_size=G`` (one set per ``G``).

``value`` is the critic as the zoo's entries fit it (80 full-batch passes per batch at ``vf_learning_rate``, the
entry's own settings where it has a critic): first fitted on ``--warmup`` batches of the same policy, then, as in
training, each measured batch's advantages come from the critic before it is fitted to that batch. It uses the
entry's ``gae_lambda`` (0.95 on MuJoCo: biased and bootstrapped, as the entries are); ``value lambda=1`` is the same
critic's ``G_t - V(s_t)``, the critic as a baseline alone. The critic-free baselines use ``gae_lambda=1``.

Two regimes: ``raw`` (``normalize_advantage=False``: the estimators themselves, in the units of the return; GRPO's
advantages, in units of each group's std, are brought to loo's spread on the same batch by one number per batch) and
``normalized`` (the advantages standardized per batch, ``normalize_advantage=True``, what every zoo entry trains
with; ``none`` and ``mean`` then give the same gradient, since standardizing removes the batch mean). In the second,
a baseline that shrinks the advantages' spread has it scaled back: its variance ratio stays near 1 while its signal
(``||E g||^2``, which the CSV estimates, unbiased and often below 0 at 20 batches) grows, so only the raw regime's
ratios compare the estimators' efficiency.

Measured, per variant: the total variance ``E||g - E g||^2`` of the flattened gradient (unbiased over the batches),
and the variance along ``--directions`` random unit directions of the actor's parameter space. Reported as ratios to
``mean``'s, with a 95% bootstrap interval (batches resampled; paired within a set of batches), and the median ratio
over the directions (the measure of the issue's prototype).

Policies, along the training of the zoo's entry: ``initial``, its model at 0% of training (``--seed``); ``early``,
the entry trained as ``zoo train`` trains it for ``--early-fraction`` of its budget; ``trained``, the packaged agent
of ``hub_cards/<env>/`` (its weights, critic included, and its VecNormalize statistics). Observation and reward
normalization, where the entry has it, is frozen during the measured batches (the initial policy's statistics are
those of the warm-up batches). The entry's entropy bonus and gradient clipping are left out: they are not the
policy gradient. A cell marked ``g = 0`` had every batch's gradient exactly 0: every episode's return-to-go was
the same function of the step (CartPole's 500-step episodes; Acrobot's episodes that never reach the goal), which
leaves loo and GRPO nothing to compare; it measures no lower variance.

Resumable: each (env, policy) is saved under ``<out>/gradient_variance/``, its file named by the settings (a
'trained' one is measured again when the packaged agent's weights have changed since); the tables go to
``<out>/gradient_variance.md`` and ``.csv``. Usage:
``python benchmarks/gradient_variance.py --envs CartPole-v1 Acrobot-v1 --policies initial early trained``.
"""

from __future__ import annotations

import argparse
import csv
import io
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from _common import read_record, save_record
from gymnasium import spaces
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from sb3_reinforce import Reinforce
from sb3_reinforce.common.advantages import estimate_advantages
from zoo.agent_format import load_agent, read_config
from zoo.config import RunConfig, get_config
from zoo.errors import ZooError
from zoo.factories import check_env_id, make_model, run_vec_env, training_envs
from zoo.machine import cpu_model
from zoo.normalization import VecNormalizeStats

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
HUB_CARDS = ROOT / "hub_cards"
POLICIES = ("initial", "early", "trained")
REGIMES = ("raw", "normalized")
REFERENCE = "mean"
# The critic of the zoo's entries (VPG's train_v_iters): given to an entry that has none of its own.
ZOO_CRITIC = {"vf_n_epochs": 80, "vf_batch_size": None}
BOOTSTRAP = 2000


@dataclass(frozen=True)
class Variant:
    """An advantage estimator measured: Reinforce's ``baseline`` with same-start groups of ``group_size``."""

    baseline: str
    group_size: int = 1
    name_suffix: str = ""

    @property
    def name(self) -> str:
        return self.baseline + (f" G{self.group_size}" if self.group_size > 1 else "") + self.name_suffix


# The critic's advantages at lambda = 1, G_t - V(s_t): the critic as a baseline alone, without GAE's bootstrapping.
VALUE_LAMBDA_1 = Variant("value", name_suffix=" lambda=1")


def variants(group_sizes: list[int]) -> list[Variant]:
    ungrouped = [Variant("none"), Variant("mean"), Variant("value"), VALUE_LAMBDA_1, Variant("loo")]
    looped = [Variant("loo", size) for size in group_sizes]
    return [*ungrouped, *looped, *(Variant("grpo", size) for size in group_sizes if size >= 4)]


# ------------------------------------------------------------------------------------------------- the models


def measuring_config(env_id: str, n_episodes: int, baseline: str, group_size: int) -> RunConfig:
    """The zoo's entry for ``env_id``, collecting ``n_episodes`` episodes on as many envs, with ``baseline`` and
    ``group_size``; no entropy bonus, no clipping, raw advantages (the regimes are applied afterwards)."""
    entry = get_config("reinforce", env_id)
    has_critic = entry.hyperparams.get("baseline", "value") == "value"
    overrides: dict[str, Any] = {
        "n_envs": n_episodes,
        "n_episodes": n_episodes,
        "baseline": baseline,
        "group_size": group_size,
        "ent_coef": 0.0,
        "max_grad_norm": None,
        "normalize_advantage": False,
    }
    if baseline != "value":
        overrides["gae_lambda"] = 1.0
    elif not has_critic:
        overrides.update(ZOO_CRITIC, gae_lambda=1.0)
    return get_config("reinforce", env_id, overrides)


@dataclass
class Policy:
    """The fixed policy measured: its weights (None: a fresh model's) and the VecNormalize statistics it acts
    with (None: fresh ones, which learn during the warm-up, or none where the entry does not normalize)."""

    state: dict[str, th.Tensor] | None = None
    stats: VecNormalizeStats | None = None


def packaged_sha256(env_id: str) -> str:
    """The sha256 of the packaged agent's weights: which agent a 'trained' record measured."""
    return str(read_config(HUB_CARDS / env_id)["weights"]["sha256"])


def packaged_policy(env_id: str) -> Policy:
    """The packaged agent's policy, critic included (the critic it was trained with starts the warm-up)."""
    model, _, stats = load_agent(HUB_CARDS / env_id, device="cpu")
    return Policy(model.policy.state_dict(), stats)


def early_policy(env_id: str, fraction: float, seed: int) -> Policy:
    """The entry trained as ``zoo train`` trains it, for ``fraction`` of its budget."""
    config = get_config("reinforce", env_id)
    env, eval_env = training_envs(config, seed)
    eval_env.close()
    model = make_model(config, env, seed)
    model.learn(max(int(fraction * config.n_timesteps), 1))
    env.close()
    return Policy(model.policy.state_dict(), VecNormalizeStats.of(env) if isinstance(env, VecNormalize) else None)


def measuring_env(config: RunConfig, policy: Policy, seed: int) -> VecEnv:
    """The VecEnv every model of one measurement collects from: the entry's, normalized as it says, with the
    policy's statistics frozen (fresh ones in training mode for a fresh policy, frozen after the warm-up)."""
    if policy.state is None:
        env, eval_env = training_envs(config, seed)
        eval_env.close()
        return env
    env = run_vec_env(config, seed)
    return env if policy.stats is None else policy.stats.wrap(env, training=False, norm_reward=policy.stats.norm_reward)


def build(config: RunConfig, env: VecEnv, seed: int, policy_state: dict[str, th.Tensor] | None) -> Reinforce:
    """A measuring model on ``env`` with ``policy_state``'s weights (None: its own fresh ones)."""
    model = Reinforce(config.policy, env, seed=seed, device="cpu", **config.algorithm_kwargs())
    if policy_state is not None:
        model.policy.load_state_dict(policy_state)
    return model


def collect(model: Reinforce) -> None:
    """One batch, with the model's own collection (it resets the env from the model's generator), prepared as
    ``learn`` prepares it (the logger, the callback, and the first time the env's seeded reset)."""
    assert model.env is not None
    _, callback = model._setup_learn(total_timesteps=2**62, reset_num_timesteps=False)
    if not model.collect_rollouts(model.env, callback, model.rollout_buffer):
        raise RuntimeError("a collection was stopped")


# --------------------------------------------------------------------------------------------- the gradients


@dataclass
class Batch:
    """One collected batch, as training's surrogate sees it."""

    mask: np.ndarray
    observations: Any
    log_prob: th.Tensor  # (B,) log pi(a_t | s_t) of the counted steps, in the autograd graph
    steps: int


def read_batch(model: Reinforce) -> Batch:
    """The collected batch's counted steps and their log-probabilities, prepared as ``Reinforce.train`` does."""
    buffer = model.rollout_buffer
    mask = buffer.valid_mask()
    observations = obs_as_tensor(buffer.flat_observations(mask), model.device)
    actions = th.as_tensor(buffer.actions[: buffer.n_steps][mask], device=model.device)
    if isinstance(model.action_space, spaces.Discrete):
        actions = actions.long().flatten()
    log_prob = model.policy.get_distribution(observations).log_prob(actions)
    return Batch(mask=mask, observations=observations, log_prob=log_prob, steps=int(mask.sum()))


def critic_free_advantages(model: Reinforce, baseline: str, mask: np.ndarray) -> np.ndarray:
    """What ``Reinforce._advantages`` computes for a baseline without a critic: the estimator on the buffer."""
    buffer = model.rollout_buffer
    steps = buffer.n_steps
    advantages, _ = estimate_advantages(
        baseline,
        buffer.rewards[:steps],
        buffer.episode_ends[:steps],
        mask,
        model.gamma,
        groups=buffer.episode_group[:steps],
    )
    return advantages[mask]


def actor_parameters(model: Reinforce) -> list[th.nn.Parameter]:
    critic = {id(parameter) for parameter in model.critic_parameters()}
    return [parameter for parameter in model.policy.parameters() if id(parameter) not in critic]


def gradient(batch: Batch, advantages: np.ndarray, normalized: bool, actor: list[th.nn.Parameter]) -> np.ndarray:
    """The gradient of training's surrogate ``mean(A * log pi)`` (the ascent direction), flattened."""
    weights = th.as_tensor(advantages, dtype=th.float32)
    if normalized and weights.numel() > 1:
        weights = (weights - weights.mean()) / (weights.std() + 1e-8)  # as Reinforce.train standardizes
    parts = th.autograd.grad((weights * batch.log_prob).mean(), actor, retain_graph=True)
    return th.cat([part.reshape(-1) for part in parts]).double().numpy()


def value_advantages(model: Reinforce, batch: Batch, gae_lambda: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The critic's advantages and targets for the batch, computed by the model itself as training does (at the
    model's ``gae_lambda`` unless one is given)."""
    with th.no_grad():
        values = model.policy.predict_values(batch.observations).flatten()
    return model._advantages(values, batch.mask, gae_lambda)


def fit_critic(model: Reinforce, batch: Batch, targets: np.ndarray) -> None:
    """The critic fit of one training update (the policy does not move)."""
    model._fit_critic(batch.observations, th.as_tensor(targets, device=model.device))


# ------------------------------------------------------------------------------------------- one measurement


class Gradients:
    """Each variant's gradient on every measured batch, in both regimes, by ``"<variant>|<regime>"``."""

    def __init__(self) -> None:
        self.rows: dict[str, list[np.ndarray]] = {}

    def add(self, name: str, batch: Batch, advantages: np.ndarray, actor: list[th.nn.Parameter]) -> None:
        for regime in REGIMES:
            key = f"{name}|{regime}"
            self.rows.setdefault(key, []).append(gradient(batch, advantages, regime == "normalized", actor))

    def summaries(self, basis: np.ndarray) -> dict[str, dict[str, list[list[float]]]]:
        """Per key, the Gram matrix of the batches' gradients and their projections on ``basis``' rows: what the
        variances (and their bootstrap) need, a few kilobytes instead of every gradient."""
        summaries = {}
        for key, rows in self.rows.items():
            matrix = np.stack(rows)
            summaries[key] = {"gram": (matrix @ matrix.T).tolist(), "projections": (matrix @ basis.T).tolist()}
        return summaries


def warm_up(model: Reinforce, batches: int) -> None:
    """Fit the critic on ``batches`` batches of the fixed policy, one training fit each (and, with a VecNormalize
    in training mode, let its statistics learn from them)."""
    for _ in range(batches):
        collect(model)
        batch = read_batch(model)
        fit_critic(model, batch, value_advantages(model, batch)[1])


def measure_ungrouped(model: Reinforce, actor: list[th.nn.Parameter], gradients: Gradients) -> int:
    """One batch for none, mean, loo and value; the critic is then fitted to it. Returns its counted steps."""
    collect(model)
    batch = read_batch(model)
    advantages, targets = value_advantages(model, batch)
    gradients.add("value", batch, advantages, actor)
    gradients.add(VALUE_LAMBDA_1.name, batch, value_advantages(model, batch, 1.0)[0], actor)
    for baseline in ("none", "mean", "loo"):
        gradients.add(baseline, batch, critic_free_advantages(model, baseline, batch.mask), actor)
    fit_critic(model, batch, targets)  # after: as in training, the advantages came from the critic before its fit
    return batch.steps


def at_scale_of(advantages: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``advantages`` times the one number that gives them ``reference``'s standard deviation."""
    spread = advantages.std()
    return advantages if spread == 0 else advantages * (reference.std() / spread)


def measure_grouped(model: Reinforce, with_grpo: bool, gradients: Gradients) -> None:
    """One batch of same-start groups of ``model.group_size`` for loo and, ``with_grpo``, GRPO."""
    collect(model)
    batch = read_batch(model)
    actor = actor_parameters(model)
    loo = critic_free_advantages(model, "loo", batch.mask)
    gradients.add(Variant("loo", model.group_size).name, batch, loo, actor)
    if with_grpo:
        # GRPO's advantages are in units of each group's std: brought to loo's spread on the same batch (one number
        # per batch, as standardizing is), its gradient's variance compares with the others' in the raw regime.
        grpo = at_scale_of(critic_free_advantages(model, "grpo", batch.mask), loo)
        gradients.add(Variant("grpo", model.group_size).name, batch, grpo, actor)


def measure(
    env_id: str, policy: str, *, batches: int, n_episodes: int, warmup: int, group_sizes: list[int], seed: int,
    directions: int, early_fraction: float,
) -> dict[str, Any]:  # fmt: skip
    """Every variant's gradients over ``batches`` batches of one fixed policy, as Gram matrices and projections."""
    th.set_num_threads(1)
    start, cpu_start = time.perf_counter(), time.process_time()
    if policy == "trained":
        source = packaged_policy(env_id)
    elif policy == "early":
        source = early_policy(env_id, early_fraction, seed)
    else:
        source = Policy()
    config = measuring_config(env_id, n_episodes, "value", 1)
    env = measuring_env(config, source, seed)
    critic_model = build(config, env, seed, source.state)
    warm_up(critic_model, warmup)
    if isinstance(env, VecNormalize):
        env.training = False  # the policy's inputs and the rewards' scale are fixed from here on
    state = critic_model.policy.state_dict()  # the initial policy is this model's: the grouped ones copy it
    grouped = [
        build(measuring_config(env_id, n_episodes, "loo", size), env, seed + size, state) for size in group_sizes
    ]
    actor = actor_parameters(critic_model)
    basis = np.random.default_rng(seed).normal(size=(directions, sum(parameter.numel() for parameter in actor)))
    basis /= np.linalg.norm(basis, axis=1, keepdims=True)
    names = variants(group_sizes)
    gradients = Gradients()
    steps = 0
    for _ in range(batches):
        steps += measure_ungrouped(critic_model, actor, gradients)
        for model in grouped:
            measure_grouped(model, Variant("grpo", model.group_size) in names, gradients)
    env.close()
    result = {
        "env_id": env_id,
        "policy": policy,
        "batches": batches,
        "n_episodes": n_episodes,
        "warmup": warmup,
        "group_sizes": group_sizes,
        "seed": seed,
        "directions": directions,
        "early_fraction": early_fraction if policy == "early" else None,
        "agent_sha256": packaged_sha256(env_id) if policy == "trained" else None,
        "parameters": int(basis.shape[1]),
        "mean_episode_length": steps / (batches * n_episodes),
        "gradients": gradients.summaries(basis),
        "seconds": time.perf_counter() - start,
        "cpu_seconds": time.process_time() - cpu_start,
        "cpu": cpu_model(),
    }
    print(f"{env_id}, {policy} policy: measured in {result['cpu_seconds']:.0f} CPU s", flush=True)
    return result


# ---------------------------------------------------------------------------------------------- the statistics


def variance(gram: np.ndarray, rows: np.ndarray) -> float:
    """``1/(m-1) * sum_i ||g_i - mean g||^2`` over the batches ``rows``, from the Gram matrix of the gradients."""
    block = gram[np.ix_(rows, rows)]
    # Rounding can leave a sum of squares of equal gradients a hair below 0.
    return max(float((np.trace(block) - block.sum() / len(rows)) / (len(rows) - 1)), 0.0)


@dataclass(frozen=True)
class Ratio:
    """A variant's variance as a ratio to the reference's: the point estimate, its 95% bootstrap interval, and the
    median over the random directions of the ratio along each."""

    total: float
    low: float
    high: float
    directions: float
    variance: float
    signal: float  # ||E g||^2, unbiased: ||mean g||^2 - variance / batches
    all_zero: bool  # every batch's gradient exactly 0


def ratio(record: dict[str, Any], variant: Variant, regime: str, rng: np.random.Generator) -> Ratio:
    def arrays(name: str) -> tuple[np.ndarray, np.ndarray]:
        data = record["gradients"][f"{name}|{regime}"]
        return np.asarray(data["gram"]), np.asarray(data["projections"])

    gram, projections = arrays(variant.name)
    reference_gram, reference_projections = arrays(REFERENCE)
    batches = record["batches"]
    everything = np.arange(batches)
    mine, theirs = variance(gram, everything), variance(reference_gram, everything)
    along = np.var(projections, axis=0, ddof=1) / np.var(reference_projections, axis=0, ddof=1)
    # The variants of one set of batches are paired (resampled together); a grouped variant's set is independent.
    paired = variant.group_size == 1
    draws = []
    for _ in range(BOOTSTRAP):
        rows = rng.integers(batches, size=batches)
        other = rows if paired else rng.integers(batches, size=batches)
        if len(set(rows)) > 1 and len(set(other)) > 1:  # one batch repeated has no variance (a handful of batches)
            draws.append(variance(gram, other) / variance(reference_gram, rows))
    low, high = np.percentile(draws, [2.5, 97.5]) if draws else (np.nan, np.nan)
    signal = float(gram.sum() / batches**2 - mine / batches)
    all_zero = not np.diagonal(gram).any()
    return Ratio(mine / theirs, float(low), float(high), float(np.median(along)), mine, signal, all_zero)


# -------------------------------------------------------------------------------------------------- the tables


def table_rows(records: list[dict[str, Any]], names: list[Variant], seed: int) -> list[dict[str, Any]]:
    """One row per (record, regime, variant), the CSV's; the bootstrap is seeded, so a table is reproducible."""
    rng = np.random.default_rng(seed)
    rows = []
    for record in records:
        for regime in REGIMES:
            for variant in names:
                result = ratio(record, variant, regime, rng)
                rows.append(
                    {
                        "env_id": record["env_id"],
                        "policy": record["policy"],
                        "mean_episode_length": round(record["mean_episode_length"], 1),
                        "regime": regime,
                        "variant": variant.name,
                        "variance": result.variance,
                        "ratio_to_mean": result.total,
                        "ratio_low": result.low,
                        "ratio_high": result.high,
                        "direction_median_ratio": result.directions,
                        "signal": result.signal,
                        "all_zero": result.all_zero,
                        "cpu_seconds": round(record["cpu_seconds"], 1),
                        "agent_sha256": record.get("agent_sha256") or "",
                    }
                )
    return rows


TITLES = {
    "raw": "Raw advantages (`normalize_advantage=False`: the estimators themselves; GRPO at loo's spread)",
    "normalized": "Standardized advantages (`normalize_advantage=True`, as the zoo trains; `none` = `mean`; the "
    "standardization scales a smaller spread back up, so these ratios say nothing of the signal)",
}


def command(args: argparse.Namespace) -> str:
    return (
        f"python benchmarks/gradient_variance.py --envs {' '.join(args.envs)} --policies {' '.join(args.policies)} "
        f"--batches {args.batches} --n-episodes {args.n_episodes} --warmup {args.warmup} "
        f"--group-sizes {' '.join(map(str, args.group_sizes))} --directions {args.directions} "
        f"--early-fraction {args.early_fraction:g} --seed {args.seed}"
    )


def markdown(rows: list[dict[str, Any]], records: list[dict[str, Any]], args: argparse.Namespace) -> str:
    cpu = sorted({record["cpu"] for record in records})
    cpu_seconds = sum(record["cpu_seconds"] for record in records)
    lines = [
        "# Gradient variance of REINFORCE's baselines at a fixed policy",
        "",
        f"Reproduce: `{command(args)}`",
        "",
        f"{args.batches} batches of {args.n_episodes} complete episodes per variant, at a fixed policy ('initial': the "
        f"zoo entry's model before training; 'early': trained for {args.early_fraction:.0%} of the entry's budget; "
        "'trained': the packaged agent of hub_cards/, its weights' sha256 in the CSV). Variance of the flattened "
        "policy gradient `E||g - E g||^2` over the batches, as a ratio to the batch-mean baseline's, with a 95% "
        f"bootstrap interval; 'along {args.directions} directions': the median over random unit directions of the "
        f"ratio of the variances along each. The critic (`value`) was fitted on {args.warmup} batches of the same "
        "policy first, then before each measured batch's fit as in training; `value` uses the entry's "
        "`gae_lambda`, `value lambda=1` the same critic's `G - V`. `loo G4` is loo within "
        f"same-start groups of 4 episodes. Measured on {', '.join(cpu)}, {cpu_seconds / 60:.1f} CPU minutes in all.",
    ]
    for regime in REGIMES:
        shown = list(dict.fromkeys(row["variant"] for row in rows if row["regime"] == regime))
        shown.remove(REFERENCE)
        for measure_name, cell in (
            ("E||g - E g||^2, ratio to mean's [95% interval]", "total"),
            (f"along {args.directions} random directions, median ratio to mean's", "directions"),
        ):
            lines += ["", f"## {TITLES[regime]}: {measure_name}", ""]
            lines.append("| env | policy | episode length | " + " | ".join(shown) + " |")
            lines.append("|---|---|---:|" + "---:|" * len(shown))
            for record in records:
                mine = {
                    row["variant"]: row
                    for row in rows
                    if (row["env_id"], row["policy"], row["regime"]) == (record["env_id"], record["policy"], regime)
                }
                cells = []
                for name in shown:
                    row = mine[name]
                    if row["all_zero"]:
                        cells.append("g = 0")
                    elif cell == "total":
                        cells.append(f"{row['ratio_to_mean']:.2f} [{row['ratio_low']:.2f}, {row['ratio_high']:.2f}]")
                    else:
                        cells.append(f"{row['direction_median_ratio']:.2f}")
                lines.append(
                    f"| {record['env_id']} | {record['policy']} | {record['mean_episode_length']:.0f} | "
                    + " | ".join(cells)
                    + " |"
                )
    return "\n".join(lines) + "\n"


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(text.getvalue())


# ------------------------------------------------------------------------------------------------------ the CLI


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=["CartPole-v1", "Acrobot-v1"])
    parser.add_argument("--policies", nargs="+", choices=POLICIES, default=list(POLICIES))
    parser.add_argument("--batches", type=int, default=20, help="measured batches per variant (>= 2)")
    parser.add_argument("--n-episodes", type=int, default=8, help="episodes per batch, a multiple of each group size")
    parser.add_argument("--warmup", type=int, default=10, help="batches the critic is fitted on first (>= 0)")
    parser.add_argument("--group-sizes", type=int, nargs="*", default=[2, 4, 8], help="same-start group sizes (>= 2)")
    parser.add_argument("--directions", type=int, default=8, help="random directions (>= 1)")
    parser.add_argument(
        "--early-fraction", type=float, default=0.05, help="the 'early' policy: this fraction of the entry's budget"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.batches < 2:
        parser.error(f"--batches must be >= 2 (a variance needs two batches), got {args.batches}")
    if not 0.0 < args.early_fraction < 1.0:
        parser.error(f"--early-fraction must be in (0, 1), got {args.early_fraction}")
    if args.warmup < 0 or args.directions < 1:
        parser.error(f"--warmup must be >= 0 and --directions >= 1, got {args.warmup} and {args.directions}")
    bad = [size for size in args.group_sizes if size < 2 or args.n_episodes % size]
    if args.n_episodes < 2 or bad:
        parser.error(
            f"--n-episodes must be >= 2 and a multiple of every group size (each >= 2), got {args.n_episodes} "
            f"and group sizes {args.group_sizes}"
        )
    for env_id in args.envs:
        try:
            check_env_id(env_id)
        except ZooError as error:
            parser.error(str(error))
        if "trained" in args.policies and not (HUB_CARDS / env_id / "config.json").is_file():
            parser.error(f"no packaged agent for {env_id} in {HUB_CARDS} (the 'trained' policy is one)")
    return args


def record_path(args: argparse.Namespace, env_id: str, policy: str) -> Path:
    """Where a measurement is kept: its name holds every setting, so a rerun with others measures anew."""
    sizes = "-".join(map(str, args.group_sizes)) or "none"
    settings = f"b{args.batches}_e{args.n_episodes}_w{args.warmup}_g{sizes}_d{args.directions}_s{args.seed}"
    name = f"{policy}{args.early_fraction:g}" if policy == "early" else policy
    return args.out / "gradient_variance" / f"{env_id}_{name}_{settings}.json"


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    keys = [(variant.name, regime) for variant in variants(args.group_sizes) for regime in REGIMES]
    records = []
    for env_id in args.envs:
        for policy in args.policies:
            run = partial(
                measure, env_id, policy, batches=args.batches, n_episodes=args.n_episodes, warmup=args.warmup,
                group_sizes=args.group_sizes, seed=args.seed, directions=args.directions,
                early_fraction=args.early_fraction,
            )  # fmt: skip
            path = record_path(args, env_id, policy)
            record = read_record(path)
            if (
                record is None
                or not all(f"{name}|{regime}" in record["gradients"] for name, regime in keys)
                or (policy == "trained" and record.get("agent_sha256") != packaged_sha256(env_id))
            ):
                record = run()  # none yet, one from before a variant was added, or of an agent since repackaged
                save_record(path, record)
            records.append(record)
    rows = table_rows(records, variants(args.group_sizes), args.seed)
    text = markdown(rows, records, args)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gradient_variance.md").write_text(text)
    write_csv(args.out / "gradient_variance.csv", rows)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
