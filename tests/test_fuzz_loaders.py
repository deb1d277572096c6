"""Hypothesis fuzzing of the zoo's loaders of outside data: config.json (a downloaded agent), vec_normalize.json,
a hyperparameter YAML file, ``--hyperparams``, a downloaded or packaged results.json, a benchmark record, a search
space of ``zoo tune`` and its ``--enqueue`` (each as far as the configuration a trial would train, through a
journal, so that what a trial records must be JSON), a run's checkpoint (checkpoint.json, its member files and
progress.csv, as far as restoring a model from it), what a Ray task sends back (as far as the run folder written
and its record read back), and the hyperparameters the rl_zoo3 shim converts (a ``--conf-file`` entry, and the
zoo's table as rl_zoo3 reads it).

Each example is either a valid document with a few fields replaced, removed or added, or arbitrary data or text.
Whatever it is, the loader either returns or raises one ZooError naming the problem: never another exception, a
RecursionError or a hang, it writes no file outside the example's folder, and it runs no code: an audit hook
records every open-for-writing, rename, removal and folder creation of the process, and every process start and
unpickled class, while the loader runs.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from sb3_reinforce import Reinforce
from tests.helpers import run_record
from zoo import config as zoo_config
from zoo.agent_format import load_agent, save_agent
from zoo.algos import constructor_keys
from zoo.config import ZOO_KEYS, get_config, load_file, parse_table
from zoo.errors import ZooError
from zoo.normalization import VecNormalizeStats
from zoo.parsers import parse_overrides

FUZZ = settings(
    max_examples=120,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# ------------------------------------------------------------------------------- no file outside is written

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_allowed: list[Path] = []
_violations: list[str] = []


def _outside(path: Any) -> bool:
    if path is None or isinstance(path, int):
        return False
    resolved = Path(os.fsdecode(path)).resolve()
    return not any(resolved == root or root in resolved.parents for root in _allowed)


# What running code from a file looks like to the audit hook: a process started, or a class looked up by a pickle
# (the loaders read JSON, YAML as plain data, safetensors and torch's weights-only format, none of which does).
CODE_EVENTS = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "subprocess.Popen", "pickle.find_class")


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _allowed:
        return
    if event in CODE_EVENTS:
        _violations.append(f"{event}{args!r}")
    elif event == "open":
        path, mode, flags = args
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool((flags or 0) & WRITE_FLAGS)
        if writing and _outside(path):
            _violations.append(f"open({path!r}, {mode!r})")
    elif event in ("os.rename", "shutil.copyfile", "shutil.move", "os.link", "os.symlink"):
        if _outside(args[1]):
            _violations.append(f"{event}{args[:2]!r}")
    elif event in ("os.remove", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "shutil.rmtree") and _outside(
        args[0]
    ):
        _violations.append(f"{event}({args[0]!r})")


sys.addaudithook(_audit)  # hooks cannot be removed; this one only looks while _allowed is set


@contextlib.contextmanager
def writes_only_under(root: Path) -> Iterator[None]:
    _allowed[:], _violations[:] = [root.resolve()], []
    try:
        yield
    finally:
        _allowed.clear()
    assert _violations == [], _violations


def only_zoo_errors(load: Any, root: Path) -> None:
    """``load()`` returns or raises a ZooError that says something, writing nothing outside ``root``."""
    message = "returned"
    with writes_only_under(root):
        try:
            load()
        except ZooError as error:
            message = str(error).strip()
    assert message


# ----------------------------------------------------------------------------------------------- strategies

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["inf", "-inf", "nan", "lin_nan", "lin_1e-3", "float32", "Box", "Dict", "os:system", "../x"])
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def paths(document: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into a JSON-like document."""
    found = [prefix]
    if isinstance(document, dict):
        for key, value in document.items():
            found += paths(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found += paths(value, (*prefix, index))
    return found


@st.composite
def mutated(draw: st.DrawFn, valid: Any) -> Any:
    """``valid`` with one to three fields replaced by arbitrary data, removed, or added."""
    document = copy.deepcopy(valid)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths(document)))
        if not path:
            document = draw(JSON)
            continue
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "replace", "remove", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(JSON)
        elif action == "remove":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = draw(JSON)
        else:
            parent.append(draw(JSON))
        if not isinstance(document, (dict, list)):
            break
    return document


def documents(valid: Any) -> st.SearchStrategy[str | bytes]:
    """A document as a file holds it: mostly a mutated valid one, sometimes anything at all."""
    as_text = st.builds(lambda doc: json.dumps(doc, allow_nan=True), mutated(valid) | JSON)
    return as_text | as_text | st.binary(max_size=64) | st.text(max_size=64)


DEEP = "[" * 100_000 + "]" * 100_000


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def agent_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("agent")
    model = Reinforce("MlpPolicy", "CartPole-v1", n_episodes=2, policy_kwargs={"net_arch": [8]}, device="cpu")
    return folder, save_agent(folder, model, env_id="CartPole-v1")


@pytest.fixture(scope="module")
def stats_json() -> dict[str, Any]:
    venv = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=0))
    venv.reset()
    for _ in range(20):
        venv.step([venv.action_space.sample() for _ in range(2)])
    return VecNormalizeStats.from_vec_normalize(venv).to_json()


def write(path: Path, content: str | bytes) -> None:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", errors="surrogatepass")


# ----------------------------------------------------------------------------------------------------- tests


def test_the_valid_documents_load(agent_folder: tuple[Path, dict[str, Any]], stats_json: dict[str, Any]) -> None:
    folder, _ = agent_folder
    assert load_agent(folder, device="cpu")[1]["env_id"] == "CartPole-v1"
    assert VecNormalizeStats.from_json(stats_json).settings()["norm_obs"] is True
    assert get_config("reinforce", "CartPole-v1").n_timesteps > 0


@FUZZ
@given(data=st.data())
@example(data=None)
def test_config_json(agent_folder: tuple[Path, dict[str, Any]], data: Any) -> None:
    folder, config = agent_folder
    content = DEEP if data is None else data.draw(documents(config))
    write(folder / "config.json", content)
    only_zoo_errors(lambda: load_agent(folder, device="cpu"), folder)


@FUZZ
@given(data=st.data())
@example(data=None)
def test_vec_normalize_json(stats_json: dict[str, Any], data: Any, tmp_path: Path) -> None:
    from zoo.checks import read_json

    content = DEEP if data is None else data.draw(documents(stats_json))
    path = tmp_path / "vec_normalize.json"
    write(path, content)

    def load() -> None:
        stats = VecNormalizeStats.from_json(read_json(path))
        venv = make_vec_env("CartPole-v1", n_envs=1)
        try:
            stats.wrap(venv)
        finally:
            venv.close()

    only_zoo_errors(load, tmp_path)


YAML_TEXT = st.text(alphabet="{}[]:,-!&*#|>'\"?%@` \n\tabcx019.e", max_size=80)
TAGS = st.sampled_from(["!!python/object/apply:os.system ['true']", "!!python/name:os.system", "!!binary ZZ", "*a"])


@FUZZ
@given(data=st.data())
@example(data=None)
def test_hyperparameter_yaml(data: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    valid = load_file("reinforce")
    if data is None:
        text = DEEP
    else:
        dumped = st.builds(lambda table: yaml.safe_dump(table, sort_keys=False), mutated(valid))
        with_tag = st.builds(lambda tag: f"CartPole-v1:\n  learning_rate: {tag}\n", TAGS)
        text = data.draw(dumped | dumped | with_tag | YAML_TEXT)

    def load() -> None:
        table = parse_table(text, "fuzz.yml")
        monkeypatch.setattr(zoo_config, "load_file", lambda algo: table)
        for env_id in ("CartPole-v1", "Pendulum-v1", "NotInTheTable-v0"):
            get_config("reinforce", env_id).algorithm_kwargs()

    only_zoo_errors(load, tmp_path)


KEYS = st.sampled_from(sorted(set(constructor_keys(Reinforce)) | set(ZOO_KEYS))) | st.text(max_size=6)
VALUES = st.builds(lambda value: yaml.safe_dump(value, default_flow_style=True).strip(), JSON) | YAML_TEXT | TAGS


@FUZZ
@given(items=st.lists(st.builds(lambda key, value: f"{key}={value}", KEYS, VALUES) | st.text(max_size=10), max_size=4))
@example(items=["policy_kwargs=" + DEEP])
def test_hyperparams_option(items: list[str], tmp_path: Path) -> None:
    only_zoo_errors(lambda: get_config("reinforce", "CartPole-v1", parse_overrides(items)).algorithm_kwargs(), tmp_path)


RESULTS = {
    "env_id": "CartPole-v1",
    "n_eval_episodes": 2,
    "episode_rewards": [1.0, 3.0],
    "episode_lengths": [1, 3],
    "mean_reward": 2.0,
    "std_reward": 1.0,
    "deterministic": True,
}


@FUZZ
@given(data=st.data())
@example(data=None)
@example(data="huge")
def test_results_json(data: Any, tmp_path: Path) -> None:
    from zoo.checks import read_json
    from zoo.hub.layout import check_results

    if data == "huge":  # finite returns whose sum overflows a float
        content = json.dumps({**RESULTS, "episode_rewards": [1.7e308, 1.7e308], "mean_reward": 1.7e308})
    else:
        content = DEEP if data is None else data.draw(documents(RESULTS))
    path = tmp_path / "results.json"
    write(path, content)
    only_zoo_errors(lambda: check_results(read_json(path), "CartPole-v1"), tmp_path)


@FUZZ
@given(data=st.data())
@example(data=None)
def test_benchmark_record(data: Any, tmp_path: Path) -> None:
    from zoo.measure import read_record

    folder = tmp_path / "runs" / "reinforce" / "CartPole-v1" / "seed0"
    folder.mkdir(parents=True, exist_ok=True)
    write(folder / "result.json", DEEP if data is None else data.draw(documents(run_record())))
    only_zoo_errors(lambda: read_record(folder), tmp_path)


SPACE_ENVS = ("CartPole-v1", "Pendulum-v1", "NotInTheFile-v0")


def space_file() -> dict[str, Any]:
    from importlib import resources

    text = (resources.files("zoo") / "hyperparams" / "search_space.yml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def journal_study(folder: Path) -> Any:
    """A new study in a journal under ``folder``: what a trial records must go through JSON, as on disk."""
    import uuid

    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    storage = JournalStorage(JournalFileBackend(str(folder / f"{uuid.uuid4().hex}.journal")))
    return optuna.create_study(storage=storage, direction="maximize")


def run_a_trial(study: Any, base: Any, space: Any) -> None:
    """What a worker does with the study's next trial, up to the training: the configuration it would train."""
    from zoo.tune.objective import OVERRIDES_ATTR
    from zoo.tune.space import apply, suggest

    trial = study.ask()
    overrides = dict(trial.user_attrs.get(OVERRIDES_ATTR, {}))
    asked = set(overrides) | {f"policy_kwargs.{key}" for key in overrides.get("policy_kwargs", {})}
    apply(base.with_overrides(overrides), suggest(trial, space), keep=asked).algorithm_kwargs()


@FUZZ
@given(data=st.data())
@example(data=None)
@example(data="date")
def test_search_space(data: Any, tmp_path: Path) -> None:
    from zoo.tune.space import load_space

    if data is None:
        text = DEEP
    elif data == "date":
        text = "reinforce: {default: {gamma: {categorical: [0.9, 2001-01-01]}}}\n"
    else:
        dumped = st.builds(lambda space: yaml.safe_dump(space, sort_keys=False), mutated(space_file()))
        with_tag = st.builds(lambda tag: f"reinforce:\n  default:\n    gamma: {tag}\n", TAGS)
        text = data.draw(dumped | dumped | with_tag | YAML_TEXT)
    path = tmp_path / "space.yml"
    write(path, text)

    def load() -> None:
        for env_id in SPACE_ENVS:
            space = load_space("reinforce", env_id, str(path))
            run_a_trial(journal_study(tmp_path), get_config("reinforce", "CartPole-v1"), space)

    only_zoo_errors(load, tmp_path)


ENQUEUED = {
    "learning_rate": "lin_5e-3",
    "n_episodes": 16,
    "baseline": "value",
    "vf_n_epochs": 5,
    "policy_kwargs": {"ortho_init": False, "net_arch": [8]},
}
FLOW = st.builds(lambda value: yaml.safe_dump(value, default_flow_style=True, width=10**6).strip(), mutated(ENQUEUED))
PAIRS = st.builds(lambda key, value: f"{{{key}: {value}}}", KEYS, VALUES)


@FUZZ
@given(texts=st.lists(FLOW | FLOW | PAIRS | YAML_TEXT | TAGS, min_size=1, max_size=3))
@example(texts=["{policy_kwargs: " + DEEP + "}"])
@example(texts=["{gamma: 2001-01-01}"])
def test_enqueue_option(texts: list[str], tmp_path: Path) -> None:
    from zoo.tune.cli import enqueue, parse_enqueued
    from zoo.tune.objective import Setup
    from zoo.tune.space import load_space

    base = get_config("reinforce", "CartPole-v1")
    setup = Setup("reinforce", "CartPole-v1", base.to_data(), load_space("reinforce", "CartPole-v1"), seeds=1)

    def load() -> None:
        study = journal_study(tmp_path)
        for text in texts:
            overrides, params = parse_enqueued(setup, text)
            enqueue(study, text, overrides, params)
            run_a_trial(study, setup.base_config, setup.space)

    only_zoo_errors(load, tmp_path)


def test_the_valid_tune_documents_load(tmp_path: Path) -> None:
    from zoo.tune.cli import enqueue, parse_enqueued
    from zoo.tune.objective import Setup
    from zoo.tune.space import load_space

    path = tmp_path / "space.yml"
    path.write_text(yaml.safe_dump(space_file(), sort_keys=False))  # parameters are sampled in their order
    space = load_space("reinforce", "CartPole-v1", str(path))
    assert "learning_rate" in [param.name for param in space.params]
    base = get_config("reinforce", "CartPole-v1")
    setup = Setup("reinforce", "CartPole-v1", base.to_data(), space, seeds=1)
    study = journal_study(tmp_path)
    text = yaml.safe_dump(ENQUEUED, default_flow_style=True).strip()
    assert enqueue(study, text, *parse_enqueued(setup, text)).startswith("enqueued")
    run_a_trial(study, base, space)


# ---------------------------------------------------------------------------------------------- checkpoints

CHECKPOINTED = {
    "n_timesteps": 400,
    "n_envs": 2,
    "n_episodes": 2,
    "policy_kwargs": {"net_arch": [8]},
    "normalize": True,
    "baseline": "value",
    "vf_n_epochs": 1,
}
# Fewer examples than the other loaders: each one copies a checkpoint and restores a model from it.
CHECKPOINT_FUZZ = settings(FUZZ, max_examples=60)


@pytest.fixture(scope="module")
def checkpointed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Any, dict[str, Any]]:
    """A run folder holding a checkpoint of a trained model (optimizer moments, VecNormalize statistics, evaluation
    generators, a best model) and its progress.csv; the model, its evaluation env, and the run's config."""
    from zoo.checkpoints import EvaluationState, generator_states, save_checkpoint
    from zoo.factories import make_model, training_envs

    config = get_config("reinforce", "CartPole-v1", CHECKPOINTED)
    env, eval_env = training_envs(config, 0)
    model = make_model(config, env, 0)
    model.learn(200)
    eval_env.reset()
    evaluation = EvaluationState([200], [[9.0, 11.0]], [[9, 11]], [], 10.0, 10.0, 1, generator_states(eval_env))
    run_dir = tmp_path_factory.mktemp("checkpointed") / "CartPole-v1_1"
    run_dir.mkdir()
    model.save(run_dir / "best_model.zip")
    save_checkpoint(
        run_dir,
        model,
        config=config.with_seed(0).to_data(),
        train_seconds=1.0,
        train_cpu_seconds=1.0,
        resumed_at=[],
        evaluation=evaluation,
        best_model=run_dir / "best_model.zip",
    )
    (run_dir / "progress.csv").write_text("time/total_timesteps,train/loss\n100,0.5\n200,0.25\n")
    return run_dir, model, eval_env, config.with_seed(0).to_data()


class Hostile:
    """An object that, unpickled, would create the folder ``path``: code run from a file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.path),))


def torch_bytes(value: Any) -> bytes:
    import io

    import torch as th

    buffer = io.BytesIO()
    th.save(value, buffer)
    return buffer.getvalue()


def state_variants(state: dict[str, Any]) -> dict[str, Any]:
    """torch files that torch reads: the real state with one thing wrong, or other structures."""
    import torch as th

    parameters, rng = state["parameters"], state["torch_rng"]
    first = next(iter(parameters))
    tensor_name = next(iter(parameters[first]))
    optimizer = next(name for name, value in parameters.items() if value.get("state"))
    moments = parameters[optimizer]["state"]
    index = next(iter(moments))
    moment = next(key for key, value in moments[index].items() if isinstance(value, th.Tensor) and value.dim() > 0)
    wrong_moment = {**moments, index: {**moments[index], moment: th.zeros(3, 1, 2)}}
    return {
        "no state dicts": {"parameters": {}, "torch_rng": rng},
        "a state dict missing": {"parameters": {k: v for k, v in parameters.items() if k != first}, "torch_rng": rng},
        "a tensor of another shape": {
            "parameters": {**parameters, first: {**parameters[first], tensor_name: th.zeros(3, 1, 2)}},
            "torch_rng": rng,
        },
        "an optimizer moment of another shape": {
            "parameters": {**parameters, optimizer: {**parameters[optimizer], "state": wrong_moment}},
            "torch_rng": rng,
        },
        "a generator state of floats": {"parameters": parameters, "torch_rng": rng.float()},
        "another key": {"parameters": parameters, "torch_rng": rng, "more": 1},
        "a list for a state dict": {"parameters": {first: [1, 2]}, "torch_rng": rng},
        "a list": [parameters, rng],
        "None": None,
    }


@contextlib.contextmanager
def generators_kept() -> Iterator[None]:
    """Python's, numpy's and torch's global generators as they were: restoring a checkpoint sets them."""
    import random

    import numpy as np
    import torch as th

    python, numpy, torch = random.getstate(), np.random.get_state(), th.get_rng_state()  # noqa: NPY002
    try:
        yield
    finally:
        random.setstate(python)
        np.random.set_state(numpy)  # noqa: NPY002
        th.set_rng_state(torch)


def section_mutated(valid: dict[str, Any]) -> st.SearchStrategy[str]:
    """``valid`` with one of its top-level sections mutated, as JSON text: a checkpoint's generator states hold
    over a thousand numbers, which would otherwise take most of the mutations."""

    def replaced(section: str, value: Any) -> str:
        return json.dumps({**valid, section: value}, allow_nan=True)

    return st.sampled_from(sorted(valid)).flatmap(
        lambda section: st.builds(lambda value: replaced(section, value), mutated(valid[section]))
    )


CSV_TEXT = st.text(alphabet='0123456789.,-e"\n\x00 abinf/_time/total_timesteps', max_size=80) | st.sampled_from(
    ["time/total_timesteps\ninf\n", "time/total_timesteps\n1e400\n", "time/total_timesteps\nnan\n", "a,b\n1,2\n"]
)


@CHECKPOINT_FUZZ
@given(data=st.data())
@example(data=None)
@example(data="hostile")
def test_checkpoint(checkpointed_run: tuple[Path, Any, Any, dict[str, Any]], data: Any, tmp_path: Path) -> None:
    """A corrupt or hostile checkpoint is one ZooError when named (``--resume FOLDER``), and is passed over with a
    warning when looked for (``--resume``: the run starts over); torch reads its state without unpickling code."""
    import torch as th

    from zoo.checkpoints import (
        CHECKPOINT_DIR,
        MANIFEST,
        PROGRESS_CSV,
        find_resumable,
        logged_rows,
        read_checkpoint,
        restore,
        set_generator_states,
    )

    source, model, eval_env, config = checkpointed_run
    logs = tmp_path / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    run_dir = logs / "reinforce" / source.name
    shutil.copytree(source, run_dir)
    folder = run_dir / CHECKPOINT_DIR
    manifest = json.loads((folder / MANIFEST).read_text())
    marker = tmp_path.parent / f"{tmp_path.name}-ran"  # outside the folder the loader may write to

    if data is None:
        write(folder / MANIFEST, DEEP)
    elif data == "hostile":
        refit_member(folder, "state", torch_bytes({"parameters": Hostile(marker), "torch_rng": th.get_rng_state()}))
    else:
        target = data.draw(st.sampled_from(["manifest", "manifest", "state", "best_model", "progress"]))
        if target == "manifest":
            write(folder / MANIFEST, data.draw(documents(manifest) | section_mutated(manifest)))
        elif target == "progress":
            write(run_dir / PROGRESS_CSV, data.draw(CSV_TEXT))
        else:
            original = (folder / manifest["files"][target]["name"]).read_bytes()
            state = th.load(folder / manifest["files"]["state"]["name"], weights_only=True)
            torn = st.integers(0, len(original) - 1).map(lambda n: original[:n])
            variants = st.sampled_from(list(state_variants(state).values())).map(torch_bytes)
            refit_member(folder, target, data.draw(torn | st.binary(max_size=64) | variants))

    def load() -> None:
        assert find_resumable(logs, "reinforce", "CartPole-v1", config) in (None, run_dir)
        checkpoint = read_checkpoint(run_dir)
        restore(checkpoint, model)
        if checkpoint.evaluation.generators is not None:
            set_generator_states(eval_env, checkpoint.evaluation.generators)
        logged_rows(run_dir / PROGRESS_CSV, checkpoint.num_timesteps)

    with generators_kept():
        only_zoo_errors(load, tmp_path)
    assert not marker.exists()


def refit_member(folder: Path, key: str, content: bytes) -> None:
    """A checkpoint's member file replaced, with the manifest's size and sha256 fitting it, as a hostile writer
    would do."""
    import hashlib

    from zoo.checkpoints import MANIFEST

    manifest = json.loads((folder / MANIFEST).read_text())
    record = manifest["files"][key]
    (folder / record["name"]).write_bytes(content)
    record.update(size=len(content), sha256=hashlib.sha256(content).hexdigest())
    (folder / MANIFEST).write_text(json.dumps(manifest))


def test_the_valid_checkpoint_restores(checkpointed_run: tuple[Path, Any, Any, dict[str, Any]], tmp_path: Path) -> None:
    from zoo.checkpoints import find_resumable, logged_rows, read_checkpoint, restore

    source, model, _, config = checkpointed_run
    run_dir = tmp_path / "reinforce" / source.name
    shutil.copytree(source, run_dir)
    assert find_resumable(tmp_path, "reinforce", "CartPole-v1", config) == run_dir
    checkpoint = read_checkpoint(run_dir)
    with generators_kept():
        restore(checkpoint, model)
    assert checkpoint.num_timesteps == model.num_timesteps
    assert logged_rows(run_dir / "progress.csv", checkpoint.num_timesteps)[1] == ["100,0.5\n", "200,0.25\n"]


STATE_VARIANTS = (
    "no state dicts",
    "a state dict missing",
    "a tensor of another shape",
    "an optimizer moment of another shape",
    "a generator state of floats",
    "another key",
    "a list for a state dict",
    "a list",
    "None",
)


@pytest.mark.parametrize("variant", STATE_VARIANTS)
def test_a_checkpoint_state_that_does_not_fit_is_one_error(
    checkpointed_run: tuple[Path, Any, Any, dict[str, Any]], tmp_path: Path, variant: str
) -> None:
    """Each way a state file torch can read may not fit the model (its manifest fitting it) is refused."""
    import torch as th

    from zoo.checkpoints import CHECKPOINT_DIR, read_checkpoint, restore

    source, model, _, _ = checkpointed_run
    run_dir = tmp_path / source.name
    shutil.copytree(source, run_dir)
    (state_file,) = (run_dir / CHECKPOINT_DIR).glob("state-*.pt")
    variants = state_variants(th.load(state_file, weights_only=True))
    assert sorted(variants) == sorted(STATE_VARIANTS)
    refit_member(run_dir / CHECKPOINT_DIR, "state", torch_bytes(variants[variant]))
    with generators_kept(), pytest.raises(ZooError, match=r"checkpoint|state|parameters|torch_rng|optimizer"):
        restore(read_checkpoint(run_dir), model)


# ------------------------------------------------------------------------------------- Ray task results

TASK_FILES = {"config.yml": b"algo: reinforce\n", "CartPole-v1.zip": b"PK\x05\x06" + bytes(18)}
FILE_NAMES = st.sampled_from(
    ["result.json", "config.yml", "", ".", "..", "../escape", "a/b", ".hidden", "nul\x00", "x" * 300]
) | st.text(max_size=10)
RECORD_BYTES = st.builds(lambda doc: json.dumps(doc, allow_nan=True).encode(), mutated(run_record()) | JSON)


@st.composite
def task_results(draw: st.DrawFn) -> Any:
    """What ``ray.get`` may return for a task: (record, files, node) with one to three things wrong, or anything."""
    record = run_record()
    files: dict[Any, Any] = {"result.json": json.dumps(record).encode(), **TASK_FILES}
    for _ in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(["record", "add", "remove", "value"]))
        if action == "record":
            files["result.json"] = draw(RECORD_BYTES | st.binary(max_size=32))
        elif action == "add":
            files[draw(FILE_NAMES)] = draw(st.binary(max_size=16))
        elif action == "remove" and files:
            del files[draw(st.sampled_from(sorted(files, key=repr)))]
        elif files:
            files[draw(st.sampled_from(sorted(files, key=repr)))] = draw(JSON)
    parts = [draw(mutated(record) | JSON), draw(st.just(files) | JSON), draw(st.just("10.0.0.1/abcdef") | JSON)]
    shape = draw(st.sampled_from(["tuple", "tuple", "tuple", "list", "short", "anything"]))
    if shape == "anything":
        return draw(JSON)
    return tuple(parts) if shape == "tuple" else parts if shape == "list" else tuple(parts[:2])


@FUZZ
@given(result=task_results())
@example(result=None)
@example(result=(run_record(), {"result.json": DEEP.encode()}, "node"))
def test_ray_task_result(result: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a Ray task sends back is written as a run folder whose record reads back as the one passed on, or is
    one ZooError and writes nothing: the driver's handling of ``ray.get``'s value (zoo.ray_backend)."""
    import tempfile

    from zoo.measure import Task, check_task_result, read_record
    from zoo.ray_backend import write_run

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # write_run stages the files in a temporary folder
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    task = Task("reinforce", "CartPole-v1", 0, None, str(out))

    def load() -> None:
        record, files, _ = check_task_result(task, result)
        write_run(task, files)
        assert read_record(task.folder) == record

    only_zoo_errors(load, tmp_path)
    if not (task.folder / "result.json").exists():
        assert not out.exists() or not any(out.rglob("*.json"))  # nothing half-written


def test_a_valid_ray_task_result_is_written(tmp_path: Path) -> None:
    from zoo.measure import Task, check_task_result, read_record
    from zoo.ray_backend import write_run

    task = Task("reinforce", "CartPole-v1", 0, None, str(tmp_path))
    files = {"result.json": json.dumps(run_record()).encode(), **TASK_FILES}
    record, checked, node = check_task_result(task, (run_record(), files, "10.0.0.1/abcdef"))
    write_run(task, checked)
    assert read_record(task.folder) == record == run_record()
    assert node == "10.0.0.1/abcdef"
    assert sorted(path.name for path in task.folder.iterdir()) == sorted(files)


# ------------------------------------------------------------------------------- the rl_zoo3 shim's conversion

RL_ZOO3_ENTRY = {
    "n_envs": 2,
    "n_timesteps": 1000,
    "policy": "MlpPolicy",
    "learning_rate": "lin_1e-3",
    "ent_coef": "lin_0.01",
    "vf_learning_rate": "lin_1e-3",
    "n_episodes": 2,
    "policy_kwargs": {"activation_fn": "relu", "optimizer_class": "adam", "net_arch": [16]},
}
RL_ZOO3_FUZZ = settings(FUZZ, max_examples=80)


@RL_ZOO3_FUZZ
@given(data=st.data())
@example(data="deep")
def test_rl_zoo3_conf_file(data: Any, tmp_path: Path) -> None:
    """A ``--conf-file`` entry (or ``--hyperparams`` on top of it), as rl_zoo3 parses it, converted by the shim:
    schedules and class names in the zoo's words become objects, or one ZooError names the value."""
    from types import SimpleNamespace

    from zoo.rl_zoo3 import zoo_values_as_objects

    if data == "deep":
        text = "CartPole-v1:\n  policy_kwargs: " + "{a: " * 500 + "1" + "}" * 500 + "\n"
    else:
        dumped = st.builds(lambda entry: yaml.safe_dump({"CartPole-v1": entry}), mutated(RL_ZOO3_ENTRY))
        with_tag = st.builds(lambda tag: f"CartPole-v1:\n  ent_coef: {tag}\n", TAGS)
        text = data.draw(dumped | dumped | with_tag | YAML_TEXT)
    try:
        table = yaml.safe_load(text)  # what rl_zoo3 does with a .yml conf file, before the shim sees it
    except (yaml.YAMLError, RecursionError):
        return
    entry = table.get("CartPole-v1") if isinstance(table, dict) else None
    if not isinstance(entry, dict):
        return  # rl_zoo3 reports a missing entry itself
    manager = SimpleNamespace(algo="reinforce")
    only_zoo_errors(lambda: zoo_values_as_objects(lambda self: (entry, dict(entry)))(manager), tmp_path)


@RL_ZOO3_FUZZ
@given(data=st.data())
def test_rl_zoo3_reads_the_zoo_table(data: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The zoo's hyperparameter table as rl_zoo3 reads it through ``--conf-file zoo.rl_zoo3``: every entry, with
    its schedules and class names as objects, or one ZooError."""
    import zoo.rl_zoo3

    dumped = st.builds(lambda table: yaml.safe_dump(table, sort_keys=False), mutated(load_file("reinforce")))
    text = data.draw(dumped | dumped | st.builds(lambda tag: f"Pendulum-v1:\n  ent_coef: {tag}\n", TAGS))

    def load() -> None:
        table = parse_table(text, "fuzz.yml")
        monkeypatch.setattr(zoo_config, "load_file", lambda algo: table)
        for env_id, entry in zoo.rl_zoo3.hyperparams.items():
            assert not isinstance(entry.get("ent_coef"), str)
            assert entry["n_timesteps"] == get_config("reinforce", env_id).n_timesteps

    only_zoo_errors(load, tmp_path)
