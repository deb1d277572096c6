"""One ``--help`` style for every command of the zoo.

Descriptions come from module docstrings written in reST, so their double backticks are dropped here rather than
shown raw. Each option states its default once: argparse's ``(default: ...)`` is added only where the help does
not already say it, and never for a flag (``store_true``/``store_false``: "default: True" on both sides of a pair
of flags says nothing) or an unset value (``None``: the help says in words what happens then).

This module imports nothing heavy, so a command's help can be printed without loading torch.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import NoReturn

# pyproject.toml's [project.scripts] name for zoo.cli:main.
CONSOLE_SCRIPT = "sb3-reinforce-zoo"


# A Sphinx cross-reference, :func:`zoo.statistics.iqm` or :mod:`~zoo.checkpoints`: the target's name stays.
ROLE = re.compile(r":(?:func|mod|class|meth|data|attr|exc|obj|ref|doc):`(~?)([^`<]+?)(?:\s*<[^`]*>)?`")


def plain(text: str) -> str:
    """``text`` without reST's markup: ````python -m zoo train```` becomes ``python -m zoo train``, and a
    cross-reference its target's name (:func:`~zoo.statistics.iqm` becomes ``iqm``)."""
    text = ROLE.sub(lambda found: found.group(2).rsplit(".", 1)[-1] if found.group(1) else found.group(2), text)
    return re.sub(r"``([^`]+)``", r"\1", text)


def invoked_as() -> str:
    """How the user called the zoo: its console script ``sb3-reinforce-zoo``, or ``python -m zoo``."""
    script = Path(sys.argv[0]).name
    return script if script.startswith(CONSOLE_SCRIPT) else "python -m zoo"


def as_invoked(text: str) -> str:
    """``text`` with ``python -m zoo`` as the user called the zoo (usage lines, descriptions)."""
    return text.replace("python -m zoo", invoked_as())


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The description's paragraphs as written (without markup), and every default once and true."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = plain(action.help or "")
        if (
            "default" in text
            or action.required
            or action.default is None
            or action.default is argparse.SUPPRESS
            or action.default == []
            or action.nargs == 0  # a flag: store_true, store_false, store_const (help and version are SUPPRESSed)
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)"


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser with the zoo's one-line errors: the error and where the options are listed, not the
    whole usage (5 to 12 lines) before it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the options)\n")


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    """An ``ArgumentParser`` in the zoo's help style."""
    return ArgumentParser(
        prog=as_invoked(prog), description=as_invoked(plain(description)), formatter_class=HelpFormatter
    )


def parser_with_subcommands(
    prog: str, description: str, subcommands: dict[str, str]
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """A parser of ``prog COMMAND``, one of ``subcommands`` (name -> description, whose first sentence is the
    command's line in ``prog --help``), and the parser of each command, all in the zoo's help style. The command
    parsed is ``command`` in the namespace."""
    top = parser(prog, description)
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND", prog=prog)
    return top, {
        name: commands.add_parser(
            name,
            help=plain(text.split(". ")[0].rstrip(".")),
            description=plain(text),
            formatter_class=HelpFormatter,
        )
        for name, text in subcommands.items()
    }
