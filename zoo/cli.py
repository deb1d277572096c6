"""The zoo's command line: ``python -m zoo <command> [options]`` (also the ``sb3-reinforce-zoo`` script)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from importlib import import_module

from zoo.errors import ZooError
from zoo.helptext import as_invoked
from zoo.parsers import HELP

# command -> (module, function, one-line help); modules are imported only when their command runs.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "train": ("zoo.train", "main", "train an agent with tuned hyperparameters"),
    "evaluate": ("zoo.evaluate", "main", "evaluate a saved agent"),
    "benchmark": ("zoo.benchmark", "main", "train every env over several seeds and write the results table"),
    "tune": ("zoo.tune.cli", "main", "search hyperparameters with Optuna (one machine, or many on one study)"),
    "push": ("zoo.hub.cli", "push_main", "push an agent to the Hugging Face Hub"),
    "enjoy": ("zoo.hub.cli", "enjoy_main", "download an agent from the Hub and evaluate it"),
    "push-all": ("zoo.hub.cli", "push_all_main", "push every packaged zoo agent under hub_cards/"),
}


def usage() -> str:
    lines = ["usage: python -m zoo <command> [options]", "", "commands:"]
    lines += [f"  {name:<10} {help_text}" for name, (_, _, help_text) in COMMANDS.items()]
    lines.append("\n`python -m zoo <command> --help` lists a command's options and defaults.")
    return as_invoked("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except BrokenPipeError:
        # The reader went away (`... --help | head -3`): what it did not read is dropped, without a traceback, and
        # so is the interpreter's own flush of stdout at exit (Python's documented recipe).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # a shell's status for a process ended by SIGPIPE


def run(args: list[str]) -> int:
    if not args or args[0] in {"-h", "--help"}:
        print(usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"error: unknown command {name!r}; choose from {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    module, function, _ = COMMANDS[name]
    try:
        if {"-h", "--help"} & set(rest) and name in HELP:
            # The command's parser prints its help and exits, without importing the command (and torch).
            HELP[name](rest)
        command: Callable[[list[str]], int] = getattr(import_module(module), function)
        return command(rest)
    except ZooError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except SystemExit as exit_:  # argparse's own usage errors: already printed as one clear message
        return exit_.code if isinstance(exit_.code, int) else 2
    except KeyboardInterrupt:  # Ctrl-C: what could be saved was, and said where; no traceback
        print("interrupted", file=sys.stderr)
        return 130
