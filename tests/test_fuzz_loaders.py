"""Hypothesis fuzzing of the zoo's loaders of outside data: config.json (a downloaded agent), vec_normalize.json,
a hyperparameter YAML file, ``--hyperparams``, a downloaded or packaged results.json, a benchmark record, a search
space of ``zoo tune`` and its ``--enqueue`` (each as far as the configuration a trial would train, through a
journal, so that what a trial records must be JSON).

Each example is either a valid document with a few fields replaced, removed or added, or arbitrary data or text.
Whatever it is, the loader either returns or raises one ZooError naming the problem: never another exception, a
RecursionError or a hang, and it writes no file outside the example's folder (checked with an audit hook on every
open-for-writing, rename, removal and folder creation of the process while the loader runs).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
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
from zoo.config import ZOO_KEYS, get_config, load_file, parse_overrides, parse_table
from zoo.errors import ZooError
from zoo.normalization import VecNormalizeStats

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


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _allowed:
        return
    if event == "open":
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
    from zoo.tune.space import apply, suggest, with_overrides

    trial = study.ask()
    overrides = dict(trial.user_attrs.get(OVERRIDES_ATTR, {}))
    asked = set(overrides) | {f"policy_kwargs.{key}" for key in overrides.get("policy_kwargs", {})}
    apply(with_overrides(base, overrides), suggest(trial, space), keep=asked).algorithm_kwargs()


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
