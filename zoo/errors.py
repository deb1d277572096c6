"""The zoo's one exception: a user error, reported by the CLI as one line and exit status 2; and the messages that
name the library's parameters, which each command names by its own flags."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Parameter:
    """A parameter of a library function (or the function itself), as a message names it: ``name`` as the function
    takes it, ``written`` as its caller writes it where the message says what to pass (``force=True``; default:
    ``name``). A command's message names the flag that sets it instead (:meth:`Message.naming`)."""

    name: str
    written: str = ""

    def __str__(self) -> str:
        return self.written or self.name


class Message(str):
    """A message of the library, made of text and :class:`Parameter` parts: as a ``str``, the parameters as the
    library takes them; :meth:`naming` gives it in a command's words, without rewriting its text."""

    parts: tuple[str | Parameter, ...]

    def __new__(cls, *parts: str | Parameter) -> Message:
        message = super().__new__(cls, "".join(str(part) for part in parts))
        message.parts = parts
        return message

    @property
    def parameters(self) -> list[str]:
        """The names of the parameters the message names, in its order."""
        return [part.name for part in self.parts if isinstance(part, Parameter)]

    def naming(self, flags: Mapping[str, str]) -> str:
        """The message with each parameter that ``flags`` maps (name -> flag) named by its flag."""
        return "".join(flags.get(part.name, str(part)) if isinstance(part, Parameter) else part for part in self.parts)


class ZooError(Exception):
    """A user error: reported as one line and a non-zero exit, without a traceback.

    Its message is made of ``parts``: text, and the :class:`Parameter` s of the library it is about, which a command
    names by its flags (:meth:`naming`).
    """

    def __init__(self, *parts: str | Parameter) -> None:
        super().__init__(*parts)  # the parts, as the exception's args: a ZooError pickles across processes
        self.message = Message(*parts)

    def __str__(self) -> str:
        return str(self.message)

    @property
    def parameter(self) -> str | None:
        """The first parameter of the library the error is about; None where it names none."""
        return next(iter(self.message.parameters), None)

    def naming(self, flags: Mapping[str, str]) -> str:
        """The message in a command's words: each parameter that ``flags`` maps (name -> flag) named by its flag."""
        return self.message.naming(flags)


def in_words_of(flags: Mapping[str, str], message: str | ZooError) -> str:
    """``message`` (a library's warning or error) in a command's words: each parameter it names that ``flags`` maps
    (name -> flag) named by its flag; a plain ``str`` as it is."""
    parts = message.message if isinstance(message, ZooError) else message
    return parts.naming(flags) if isinstance(parts, Message) else str(parts)


def first_line(error: BaseException) -> str:
    """``"<exception class>: <first line of its message>"``, for a one-line report of another library's error."""
    text = str(error).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0] if lines else text}"
