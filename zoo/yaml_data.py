"""YAML data as the zoo reads it: ``yaml.safe_load`` within bounds on size, count and depth, plain data only.

Every YAML the zoo is given goes through here: the hyperparameter files, search spaces, ``--hyperparams`` and
``--enqueue`` values, a run's ``config.yml`` and a pulled agent's files. A mistake is one
:class:`~zoo.errors.ZooError` naming where the text came from.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from zoo.checks import clipped, read_bounded, shown
from zoo.errors import ZooError

# Bounds on YAML data given to the zoo (hyperparameters, search spaces, --enqueue, run configs): far above any
# real file (the zoo's largest is a few kB and a few hundred values), low enough that a hostile one costs
# milliseconds. Aliases are what need the count: ``&a [*b, *b, ...]`` nests shared lists whose walk grows
# exponentially, though the text stays short.
MAX_YAML_CHARS = 1_000_000
MAX_YAML_VALUES = 100_000
MAX_YAML_DEPTH = 32

# What the zoo keeps of YAML data: what JSON holds too (a study's attributes, result records and config.yml are
# written as JSON or plain YAML). ``yaml.safe_load`` also makes dates (``2001-01-01``), binary values and sets;
# they are refused with their key rather than read as text, which would hide a typo in a number.
PLAIN_SCALARS = (str, bool, int, float, type(None))
NOT_PLAIN = {"date": "a date", "datetime": "a date and time", "bytes": "a binary value", "set": "a set"}
PLAIN_VALUES = "only numbers, strings, booleans, null, lists and mappings are allowed"


def safe_yaml(text: str, source: str) -> Any:
    """``yaml.safe_load(text)`` within the bounds above, or one ZooError naming ``source``."""
    if len(text) > MAX_YAML_CHARS:
        raise ZooError(f"{source} is {len(text):,} characters; YAML data here is at most {MAX_YAML_CHARS:,}")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ZooError(f"{source} is not valid YAML data: {clipped(str(error))}") from None
    except (RecursionError, ValueError, OverflowError) as error:  # deep nesting; dates or numbers out of range
        raise ZooError(f"{source} cannot be read: {type(error).__name__}: {clipped(str(error))}") from None
    check_yaml_bounds(data, source)
    return data


def check_yaml_bounds(data: Any, source: str) -> None:
    """ZooError if ``data`` nests deeper than MAX_YAML_DEPTH, holds more than MAX_YAML_VALUES values (counting a
    value shared through an alias once per place it appears, as every later walk of it will), or holds a value
    or key that is not plain data (a date, say), named by its place in ``data``."""
    stack: list[tuple[Any, int, str]] = [(data, 0, "")]
    values = 0
    while stack:
        value, depth, where = stack.pop()
        values += 1
        if values > MAX_YAML_VALUES:
            raise ZooError(f"{source} holds more than {MAX_YAML_VALUES:,} values (YAML aliases expand to them)")
        if depth > MAX_YAML_DEPTH:
            raise ZooError(f"{source} nests deeper than {MAX_YAML_DEPTH} levels")
        if isinstance(value, dict):
            for key, item in value.items():
                place = f"{where}.{key}" if where else str(key)
                _check_plain(key, f"{place} (a key)", source)
                stack.append((item, depth + 1, place))
        elif isinstance(value, list):
            stack.extend((item, depth + 1, f"{where}[{i}]") for i, item in enumerate(value))
        else:
            _check_plain(value, where, source)


def _check_plain(value: Any, where: str, source: str) -> None:
    if not isinstance(value, PLAIN_SCALARS):
        kind = NOT_PLAIN.get(type(value).__name__, f"a {type(value).__name__}")
        found = shown(str(value) if isinstance(value, (date, datetime)) else value)
        name = f"{source}: {where}" if where else source
        raise ZooError(f"{name} is {kind} ({found}); {PLAIN_VALUES} (quote text)")


def read_yaml_file(path: str | Path, source: str | None = None) -> Any:
    """The YAML data of a UTF-8 file, through :func:`safe_yaml`; one ZooError naming the file otherwise."""
    source = source or str(path)
    try:
        text = read_bounded(Path(path)).decode("utf-8")
    except UnicodeDecodeError as error:
        raise ZooError(f"{source} is not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise ZooError(f"cannot read {source}: {error.strerror or error}") from None
    return safe_yaml(text, source)


def yaml_numbers(value: Any) -> Any:
    """``value`` with every string that reads as a number turned into one: YAML 1.1 reads ``1e-3`` and ``3e5`` as
    text, and a user who types them on the command line means numbers."""
    if isinstance(value, dict):
        return {key: yaml_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [yaml_numbers(item) for item in value]
    if isinstance(value, str):
        for number in (int, float):
            try:
                return number(value)
            except ValueError:
                continue
    return value
