"""The zoo's commands agree with each other and say what they used (issue 46): one evaluation for train's final
score and `zoo evaluate`, the env read from the agent's own files, entries from a file, envs without one refused,
shortened schedules said, SIGTERM taken as Ctrl-C, no window without a display, help under the console script."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from stable_baselines3.common.callbacks import BaseCallback, ProgressBarCallback

import zoo.train
from tests.helpers import one_error_line
from zoo.cli import main as cli
from zoo.config import get_config
from zoo.train import train

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--no-progress-bar", "--hyperparams", "policy_kwargs={net_arch: [8]}", "n_episodes=8"]


def train_cartpole(log_folder: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[Path, str]:
    argv = ["train", "--env", "CartPole-v1", "--n-timesteps", "2000", "--log-folder", str(log_folder), *TINY]
    assert cli([*argv, *extra]) == 0
    return log_folder / "reinforce" / "CartPole-v1_1", capsys.readouterr().out


def printed_mean(out: str) -> str:
    found = re.search(r"mean_reward = (\S+ \+/- \S+) over (.*)\)", out)
    assert found is not None, out
    return found.group(1)


def test_train_and_evaluate_score_the_same_model_the_same_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: train's final score came from its periodic-evaluation env (seed + 10,000, 10 envs, mid-stream),
    `zoo evaluate` from a fresh env seeded 12345, and neither printed its seed: one model, two scores."""
    run, out = train_cartpole(tmp_path, capsys)
    assert "over 20 episodes (deterministic, eval seed 12345)" in out
    # No --env: the run folder's config.yml names it.
    assert cli(["evaluate", "--model", str(run)]) == 0
    evaluated = capsys.readouterr().out
    assert evaluated.startswith("CartPole-v1: mean_reward = ")
    assert "over 20 episodes (deterministic, eval seed 12345)" in evaluated
    assert printed_mean(evaluated) == printed_mean(out)
    assert cli(["evaluate", "--model", str(run), "--episodes", "1"]) == 0
    assert "over 1 episode (deterministic, eval seed 12345)" in capsys.readouterr().out


def test_evaluate_names_both_envs_when_they_disagree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a CartPole agent evaluated on LunarLander blamed the spaces (or the statistics' shape) alone."""
    run, _ = train_cartpole(tmp_path, capsys)
    assert cli(["evaluate", "--model", str(run), "--env", "LunarLander-v3"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"note: {run} was trained on CartPole-v1; evaluating it on LunarLander-v3"
    assert err[1].startswith(f"error: {run} was trained on CartPole-v1, not LunarLander-v3: the model does not fit")
    assert len(err) == 2
    lone = tmp_path / "lone.zip"
    shutil.copy(run / "CartPole-v1.zip", lone)  # a zip without its run folder: nothing names its env
    assert cli(["evaluate", "--model", str(lone)]) == 2
    assert (
        one_error_line(capsys) == f"error: --env is needed: {lone} has no config.yml or config.json that names its env"
    )


def test_train_takes_an_exported_entry_with_conf_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `zoo tune export` wrote best.yml, and nothing trained from it."""
    best = tmp_path / "best.yml"
    entry = {
        "n_envs": 2,
        "n_timesteps": 1500,
        "policy": "MlpPolicy",
        "learning_rate": 0.02,
        "n_episodes": 4,
        "policy_kwargs": {"net_arch": [8]},
    }
    best.write_text("# Tuned (python -m zoo tune, study s): trial 3\n" + yaml.safe_dump({"CartPole-v1": entry}))
    argv = ["train", "--env", "CartPole-v1", "--conf-file", str(best), "--log-folder", str(tmp_path / "logs")]
    assert cli([*argv, "--no-progress-bar", "--verbose", "0"]) == 0
    saved = yaml.safe_load((tmp_path / "logs" / "reinforce" / "CartPole-v1_1" / "config.yml").read_text())
    assert (saved["n_envs"], saved["n_timesteps"]) == (2, 1500)
    assert saved["hyperparams"]["learning_rate"] == 0.02
    assert cli(["train", "--env", "Acrobot-v1", "--conf-file", str(best)]) == 2
    assert one_error_line(capsys) == f"error: {best} has no entry for Acrobot-v1; its entries: CartPole-v1"


def test_an_env_without_an_entry_is_refused_unless_asked_for_the_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `zoo train --env MountainCar-v0` silently took the default: entry (1e6 steps, ending at -200)."""
    assert cli(["train", "--env", "MountainCar-v0", "--log-folder", str(tmp_path)]) == 2
    assert one_error_line(capsys) == (
        "error: MountainCar-v0 has no entry in reinforce.yml: give its hyperparameters with --conf-file FILE or "
        "--hyperparams KEY=VALUE, or train the file's default: entry with --defaults"
    )
    assert not tmp_path.joinpath("reinforce").exists()
    argv = ["train", "--env", "MountainCar-v0", "--n-timesteps", "600", "--log-folder", str(tmp_path)]
    assert cli([*argv, "--defaults", "--no-progress-bar", "--verbose", "0"]) == 0
    assert (tmp_path / "reinforce" / "MountainCar-v0_1" / "MountainCar-v0.zip").is_file()


def test_a_shorter_budget_says_the_schedules_decay_faster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: Acrobot's entry at --n-timesteps 50000 ended at -500, and the help said only "override the budget"."""
    argv = ["train", "--env", "Acrobot-v1", "--n-timesteps", "500", "--log-folder", str(tmp_path)]
    assert cli([*argv, "--no-progress-bar", "--verbose", "0", "--hyperparams", "n_envs=1"]) == 0
    err = capsys.readouterr().err
    assert (
        "warning: the entry's schedules (learning_rate lin_0.006179395366481486, ent_coef lin_0.11970888609879597)"
        " were tuned for 500,000 steps; over --n-timesteps 500 they decay 1e+03x faster" in err
    )


def test_sigterm_ends_train_as_ctrl_c_does(tmp_path: Path) -> None:
    """Before: SIGTERM ended `zoo train` without a word and without a final zip."""
    argv = [sys.executable, "-m", "zoo", "train", "--env", "CartPole-v1", "--n-timesteps", "100000000"]
    argv += ["--log-folder", str(tmp_path), "--checkpoint-freq", "0", *TINY]
    process = subprocess.Popen(argv, cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    run = tmp_path / "reinforce" / "CartPole-v1_1"
    deadline = time.monotonic() + 300  # a bound for a stuck start, not a race: the run folder comes in seconds
    while not (run / "progress.csv").is_file() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    assert "interrupted after" in err
    assert "Traceback" not in err
    assert (run / "CartPole-v1.zip").is_file()


@pytest.mark.parametrize("command", ["evaluate", "enjoy"])
def test_render_without_a_display_is_one_line(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: Hopper aborted with exit code 134 (a GLFW assertion); CartPole printed an XDG error and went on."""
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    source = "--model" if command == "evaluate" else "--folder"
    assert cli([command, source, str(ROOT / "hub_cards" / "CartPole-v1"), "--render"]) == 2
    assert one_error_line(capsys).startswith("error: --render needs a display, and neither DISPLAY nor")


def test_help_under_the_console_script_names_it_and_a_closed_pipe_is_quiet() -> None:
    """Before: `sb3-reinforce-zoo --help | head -3` printed a BrokenPipeError traceback, under a usage line that
    said `python -m zoo`."""
    script = shutil.which("sb3-reinforce-zoo", path=os.path.dirname(sys.executable)) or shutil.which(
        "sb3-reinforce-zoo"
    )
    if script is None:
        pytest.skip("the package is not installed with its console script (pip install -e .)")
    done = subprocess.run([script, "train", "--help"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("usage: sb3-reinforce-zoo train ")
    assert "python -m zoo" not in done.stdout
    for argv in ([script, "--help"], [script, "benchmark", "--help"]):
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdout.readline()
        process.stdout.close()  # the reader goes away after one line, as `| head -1` does
        err = process.stderr.read().decode()
        process.wait()
        assert "Traceback" not in err, err


def test_an_interrupt_closes_the_progress_bar_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the progress bar (rich's, from learn(progress_bar=True)) was drawn again after "interrupted"."""
    bars: list[ProgressBarCallback] = []

    class Recorded(ProgressBarCallback):
        def __init__(self) -> None:
            super().__init__()
            bars.append(self)

    class Interrupt(BaseCallback):
        def _on_step(self) -> bool:
            raise KeyboardInterrupt

    monkeypatch.setattr(zoo.train, "ProgressBarCallback", Recorded)
    config = get_config("reinforce", "CartPole-v1", {"n_timesteps": 2000, "policy_kwargs": {"net_arch": [8]}})
    with pytest.raises(KeyboardInterrupt):
        train(config, log_folder=tmp_path, eval_freq=200, eval_episodes=1, after_eval=Interrupt(), verbose=0)
    (bar,) = bars
    assert bar.pbar.disable  # tqdm's close() disables the bar: nothing draws it again
