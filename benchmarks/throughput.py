"""Training throughput of Reinforce against SB3's A2C and PPO, and the raw env-stepping ceiling, in one run.

For each env: a DummyVecEnv of 8 unrendered envs (the zoo's ``vec_env``), (64, 64) MLP policies, 1 torch thread.
Four measurements, repeated in interleaved rounds so machine noise hits them alike; each reports env steps per
second, and the table gives medians and the ratios that matter (Reinforce / A2C, Reinforce / raw stepping):

- raw: ``VecEnv.step`` with pre-drawn random actions (the ceiling; Monitor wrappers included, as in training)
- a2c: ``A2C("MlpPolicy", env)`` (SB3 defaults) ``.learn``
- ppo: ``PPO`` with rl-baselines3-zoo's tuned CartPole-v1 hyperparameters ``.learn``
- reinforce: ``Reinforce`` with the zoo's CartPole-v1 hyperparameters ``.learn`` (collection and updates)
- reinforce_default: ``Reinforce("MlpPolicy", env)``, the constructor's defaults
- reinforce_value: the defaults with ``baseline="value"``: the fitted critic (2 passes of 256-step minibatches)

A warm-up round of 4,000 steps per contender runs first and is not timed (one-off costs such as numba's
compile of the return kernels, ~0.3 s with a warm cache, are not throughput).

Usage: ``python benchmarks/throughput.py [--steps 100000] [--rounds 3] [--envs CartPole-v1 LunarLander-v3]``.
Writes ``benchmarks/results/throughput.md`` and ``.csv``.
"""

from __future__ import annotations

import argparse
import csv
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import stable_baselines3
import torch as th
from stable_baselines3 import A2C, PPO

import sb3_reinforce
from sb3_reinforce import Reinforce
from zoo.config import get_config
from zoo.factories import vec_env
from zoo.machine import cpu_model

N_ENVS = 8
RESULTS = Path(__file__).parent / "results"


def raw_stepping(env_id: str, steps: int, seed: int) -> float:
    env = vec_env(env_id, n_envs=N_ENVS, seed=seed)  # unrendered: see zoo.factories.vec_env
    env.reset()
    env.action_space.seed(seed)
    vector_steps = steps // N_ENVS
    actions = [np.array([env.action_space.sample() for _ in range(N_ENVS)]) for _ in range(256)]
    start = time.perf_counter()
    for index in range(vector_steps):
        env.step(actions[index % 256])
    seconds = time.perf_counter() - start
    env.close()
    return vector_steps * N_ENVS / seconds


def training(make_model: Callable[[object], object], env_id: str, steps: int, seed: int) -> float:
    env = vec_env(env_id, n_envs=N_ENVS, seed=seed)  # unrendered: see zoo.factories.vec_env
    model = make_model(env)
    start = time.perf_counter()
    model.learn(steps)  # type: ignore[attr-defined]
    seconds = time.perf_counter() - start
    done = model.num_timesteps  # type: ignore[attr-defined]
    env.close()
    return done / seconds


def contenders(seed: int) -> dict[str, Callable[[str, int], float]]:
    reinforce_kwargs = get_config("reinforce", "CartPole-v1").algorithm_kwargs()
    ppo_kwargs = get_config("ppo", "CartPole-v1").algorithm_kwargs()
    return {
        "raw": lambda env_id, steps: raw_stepping(env_id, steps, seed),
        "a2c": lambda env_id, steps: training(
            lambda env: A2C("MlpPolicy", env, seed=seed, device="cpu"), env_id, steps, seed
        ),
        "ppo": lambda env_id, steps: training(
            lambda env: PPO("MlpPolicy", env, seed=seed, device="cpu", **ppo_kwargs), env_id, steps, seed
        ),
        "reinforce": lambda env_id, steps: training(
            lambda env: Reinforce("MlpPolicy", env, seed=seed, device="cpu", **reinforce_kwargs), env_id, steps, seed
        ),
        "reinforce_default": lambda env_id, steps: training(
            lambda env: Reinforce("MlpPolicy", env, seed=seed, device="cpu"), env_id, steps, seed
        ),
        "reinforce_value": lambda env_id, steps: training(
            lambda env: Reinforce("MlpPolicy", env, seed=seed, device="cpu", baseline="value"), env_id, steps, seed
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100_000, help="env steps per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved repetitions (medians reported)")
    parser.add_argument("--envs", nargs="*", default=["CartPole-v1", "LunarLander-v3"])
    parser.add_argument("--out", default=str(RESULTS), help="folder for throughput.md/.csv")
    args = parser.parse_args(argv)
    reproduce = f"python benchmarks/throughput.py --steps {args.steps} --rounds {args.rounds}"
    if args.envs != parser.get_default("envs"):
        reproduce += " --envs " + " ".join(args.envs)
    if args.out != parser.get_default("out"):
        reproduce += f" --out {args.out}"
    th.set_num_threads(1)
    rows = []
    for env_id in args.envs:
        samples: dict[str, list[float]] = {}
        # Warm-up, not timed: one-off costs (imports, numba's JIT compile of the return kernels, torch's first
        # calls) belong to no steady-state throughput.
        for measure in contenders(seed=999).values():
            measure(env_id, 4_000)
        for round_index in range(args.rounds):
            for name, measure in contenders(seed=round_index).items():
                samples.setdefault(name, []).append(measure(env_id, args.steps))
                print(f"{env_id} round {round_index} {name}: {samples[name][-1]:,.0f} steps/s", flush=True)
        medians = {name: statistics.median(values) for name, values in samples.items()}
        rows.append(
            {
                "env": env_id,
                **{f"{name}_steps_per_s": round(value) for name, value in medians.items()},
                "reinforce_over_a2c": round(medians["reinforce"] / medians["a2c"], 2),
                "reinforce_over_ppo": round(medians["reinforce"] / medians["ppo"], 2),
                "reinforce_over_raw": round(medians["reinforce"] / medians["raw"], 2),
                "default_over_a2c": round(medians["reinforce_default"] / medians["a2c"], 2),
                "default_over_raw": round(medians["reinforce_default"] / medians["raw"], 2),
                "value_over_a2c": round(medians["reinforce_value"] / medians["a2c"], 2),
                "value_over_raw": round(medians["reinforce_value"] / medians["raw"], 2),
            }
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "throughput.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    machine = (
        f"{cpu_model()}, {th.get_num_threads()} torch thread, Python {platform.python_version()}, "
        f"torch {th.__version__}, SB3 {stable_baselines3.__version__}, sb3-reinforce {sb3_reinforce.__version__}"
    )
    lines = [
        "| env | raw steps/s | A2C | PPO | Reinforce | Reinforce / A2C | Reinforce / PPO | Reinforce / raw "
        "| Reinforce defaults | defaults / A2C | defaults / raw "
        "| defaults with a critic | critic / A2C | critic / raw |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['env']} | {r['raw_steps_per_s']:,} | {r['a2c_steps_per_s']:,} | {r['ppo_steps_per_s']:,} | "
        f"{r['reinforce_steps_per_s']:,} | {r['reinforce_over_a2c']} | {r['reinforce_over_ppo']} | "
        f"{r['reinforce_over_raw']} | {r['reinforce_default_steps_per_s']:,} | {r['default_over_a2c']} | "
        f"{r['default_over_raw']} | {r['reinforce_value_steps_per_s']:,} | {r['value_over_a2c']} | "
        f"{r['value_over_raw']} |"
        for r in rows
    ]
    text = "\n".join(
        [
            f"Medians of {args.rounds} interleaved rounds of {args.steps:,} env steps; DummyVecEnv of {N_ENVS} envs, "
            f"(64, 64) MLP. Machine: {machine}.",
            "",
            *lines,
            "",
            f"Reproduce: `{reproduce}`",
        ]
    )
    (out / "throughput.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
