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


def plain(text: str) -> str:
    """``text`` without reST's inline-literal markup: ````python -m zoo train```` becomes ``python -m zoo train``."""
    return re.sub(r"``([^`]+)``", r"\1", text)


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


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    """An ``ArgumentParser`` in the zoo's help style."""
    return argparse.ArgumentParser(prog=prog, description=plain(description), formatter_class=HelpFormatter)


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
