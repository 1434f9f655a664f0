"""Slash commands: ``/name arg "quoted arg" key=value rest`` dispatched to COMMAND tools.

The grammar, with the quoting of a POSIX shell (as :func:`shlex.split`, in linear time):

* positional tokens fill the command's parameters in signature order;
* ``key=value`` tokens set the parameter ``key`` (only when ``key`` is a parameter name,
  so ``x=1`` inside free text stays text);
* extra positional tokens are joined with spaces into the last positional parameter that
  takes a string, so ``/note buy milk and eggs`` needs no quotes.

Values are strings; the pipeline coerces them (``"5"`` → ``5``, JSON text → a list).
A command longer than :data:`MAX_COMMAND_CHARS` is refused before it is read.

Every command takes the one road: parsed here, then validated and run by the tool's
pipeline (:meth:`Tool.call_sync`), so its answers and messages are a tool call's.
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from toolcards.core._channels import Channels
from toolcards.core._tool import Tool
from toolcards.errors import CommandNotRecognized, RetriableError, ToolFailed

__all__ = ["MAX_COMMAND_CHARS", "CommandArg", "CommandDescriptor", "CommandRegistry", "split_command"]

MAX_COMMAND_CHARS = 256 * 1024
"""Characters of one slash command accepted (256 KiB); longer ones are refused unread.

Larger arguments belong in a tool call's JSON arguments, not in a command line."""

# Text without quoting splits on whitespace: " \t\r\n" only, as shlex does (str.split
# would also split on the other Unicode spaces).
_WORDS = re.compile(r"[^ \t\r\n]+")
# The quoting is balanced: every quote closed, no backslash at the very end. Possessive
# quantifiers, so a failing match never backtracks (no quadratic or exponential case).
_BALANCED = re.compile(r"""(?:[^'"\\]++|\\.|'[^']*+'|"(?:[^"\\]++|\\.)*+")*+""", re.S)
# One segment of a word, with the whitespace before it (which starts a new word): unquoted
# text, an escaped character, "...", or '...'.
_SEGMENT = re.compile(r"""([ \t\r\n]*+)(?:([^ \t\r\n'"\\]++)|\\(.)|"((?:[^"\\]++|\\.)*+)"|'([^']*+)')""", re.S)


@dataclass(frozen=True, kw_only=True)
class CommandArg:
    """One argument of a command, as a help screen shows it."""

    name: str
    type: str
    """The JSON-schema type (``string``, ``integer``, ``array``, ...)."""
    required: bool
    default: Any = None
    choices: tuple[Any, ...] = ()
    description: str = ""


@dataclass(frozen=True, kw_only=True)
class CommandDescriptor:
    """A command's name, description and arguments."""

    name: str
    description: str
    args: tuple[CommandArg, ...]

    @property
    def usage(self) -> str:
        """``/name <required> [optional]``."""
        parts = [f"<{a.name}>" if a.required else f"[{a.name}]" for a in self.args]
        return " ".join([f"/{self.name}", *parts])


class CommandRegistry:
    """Dispatch slash-command text to the COMMAND channel's tools."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools = {tool.name: tool for tool in tools}
        # Read once: a signature's parameters are a fresh mapping view on every access.
        self._params = {name: tuple(tool.args.signature.parameters) for name, tool in self._tools.items()}

    @property
    def names(self) -> list[str]:
        """Known command names, sorted."""
        return sorted(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def parse(self, text: str) -> tuple[str, dict[str, Any]]:
        """Split ``text`` into a command name and its arguments (not yet validated).

        Raises:
            CommandNotRecognized: ``text`` is not a known ``/command``.
            RetriableError: the quoting is unbalanced, or ``text`` is longer than
                :data:`MAX_COMMAND_CHARS`.
        """
        if len(text) > MAX_COMMAND_CHARS:
            raise RetriableError(
                f"The command {text[:80]!r}… is {len(text):,} characters, over the limit of "
                f"{MAX_COMMAND_CHARS:,}, so it was not read. Send large content as a tool call's "
                "JSON arguments, or in several smaller commands."
            )
        stripped = text.strip()
        if not stripped.startswith("/"):
            raise CommandNotRecognized(f"Not a command: {_preview(text)}. Commands start with '/': {self._known()}.")
        tokens, literal = _split_words(stripped[1:], text)
        if not tokens:
            raise CommandNotRecognized(f"Empty command. Known commands: {self._known()}.")
        name = tokens[0]
        tool = self._tools.get(name)
        if tool is None:
            raise CommandNotRecognized(f"Unknown command /{name}. Known commands: {self._known()}.")
        if len(tokens) == 1:
            return name, {}
        params = self._params[name]
        rest = tokens[1:]
        if len(rest) <= len(params) and "=" not in stripped:  # positional only, one each: in order
            return name, {params[0]: rest[0]} if len(rest) == 1 else dict(zip(params, rest, strict=False))
        return name, _bind_tokens(tool, params, rest, {index - 1 for index in literal})

    def dispatch(self, text: str, *, approved: bool = False, idempotency_key: str | None = None) -> str:
        """Run a slash command and return its result as text.

        A known command's failure (bad arguments, a retriable or terminal error, a refused
        approval) returns a one-line ``Error: ...`` string.

        Args:
            text: The command, e.g. ``/add_note "buy milk"``.
            approved: The caller approved this call of a tool that ``requires_approval``
                (otherwise the tool's approver decides, and without one it is refused).
            idempotency_key: The caller's key of this command, the same when it sends the
                command again: a command that changes the team's state is then applied at
                most once (:mod:`toolcards.core._idempotency`).

        Raises:
            CommandNotRecognized: the command is unknown (so callers can fall through to
                treating the text as a message).
        """
        try:
            name, args = self.parse(text)
            result = self._tools[name].call_sync(
                args, channel=Channels.COMMAND, approved=approved, idempotency_key=idempotency_key
            )
        except (RetriableError, ToolFailed) as exc:
            return "Error: " + " ".join(str(exc).split())
        if isinstance(result, str):
            return result
        if type(result) is int:  # what json.dumps gives, without its machinery
            return str(result)
        return json.dumps(result, ensure_ascii=False, default=str)

    def descriptors(self) -> list[CommandDescriptor]:
        """A descriptor per command, sorted by name, for help screens and UIs."""
        return [self.describe(name) for name in self.names]

    def describe(self, name: str) -> CommandDescriptor:
        """The descriptor of one command (``CommandNotRecognized`` if unknown)."""
        tool = self._tools.get(name)
        if tool is None:
            raise CommandNotRecognized(f"Unknown command /{name}. Known commands: {self._known()}.")
        schema = tool.parameters_schema
        required = set(schema.get("required", ()))
        args = tuple(
            CommandArg(
                name=arg,
                type=_type_name(prop),
                required=arg in required,
                default=prop.get("default"),
                choices=tuple(prop.get("enum", ())),
                description=prop.get("description", ""),
            )
            for arg, prop in schema.get("properties", {}).items()
        )
        summary = tool.description.split("\n\n", 1)[0]
        return CommandDescriptor(name=name, description=summary, args=args)

    def _known(self) -> str:
        return ", ".join(f"/{name}" for name in self.names) or "none"


def split_command(text: str, *, label: str | None = None) -> list[str]:
    """Split ``text`` into words as :func:`shlex.split` does (POSIX quoting), in linear time.

    ``shlex`` builds each word a character at a time, which is quadratic: a 2 MB command
    took over a minute. Here regular expressions without backtracking do the scanning.

    ``label`` is the command as errors show it (clipped; default "the command"): it is only
    read when a quote is not closed, so a command that parses pays nothing for it.

    Raises:
        RetriableError: a quote is not closed, or ``text`` ends with a lone backslash.
    """
    return _split_words(text, label)[0]


def _split_words(text: str, label: str | None) -> tuple[list[str], frozenset[int]]:
    """:func:`split_command`'s words, and the positions of those that start quoted or escaped:
    such a word is a value as it stands, never ``key=value`` (``'path=a.md'`` is text)."""
    if '"' not in text and "'" not in text and "\\" not in text:
        plain = text.split()
        # Words joined by single spaces give the text back only when it had no other
        # whitespace: then str.split agrees with shlex, at a fraction of a regex's cost.
        return (plain if " ".join(plain) == text else _WORDS.findall(text)), frozenset()
    balanced = _BALANCED.match(text)
    assert balanced is not None  # the pattern matches the empty string
    if balanced.end() != len(text):
        at = balanced.end()
        label = "the command" if label is None else _preview(label)
        if text[at] == "\\":
            raise RetriableError(f"Cannot parse {label}: it ends with a lone backslash. Remove it or double it.")
        raise RetriableError(f"Cannot parse {label}: the quote {_preview(text[at:], 20)} is never closed. Close it.")
    words: list[str] = []
    literal: set[int] = set()
    word: list[str] | None = None
    for space, plain, escaped, double, single in _SEGMENT.findall(text):
        piece = plain or escaped or double or single
        if "\\" in double:
            piece = _unescape_double_quoted(double)
        if word is not None and not space:
            word.append(piece)
            continue
        if word is not None:
            words.append("".join(word))
        word = [piece]
        if not plain:
            literal.add(len(words))
    if word is not None:
        words.append("".join(word))
    return words, frozenset(literal)


def _unescape_double_quoted(text: str) -> str:
    """Inside double quotes a backslash escapes only a backslash or a double quote."""
    parts = text.split("\\\\")
    if len(parts) == 1:
        return text.replace('\\"', '"')
    return "\\".join([part.replace('\\"', '"') for part in parts])


def _preview(text: str, limit: int = 80) -> str:
    """``text`` quoted for an error message, clipped: an error never echoes a whole payload."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}… ({len(text):,} characters)"


def _bind_tokens(tool: Tool, params: tuple[str, ...], tokens: list[str], literal: set[int]) -> dict[str, Any]:
    """``key=value`` tokens by name, the rest in order, extra words joined into the last text
    parameter. A token at a position in ``literal`` (it started quoted) is a value, whatever it holds."""
    args: dict[str, Any] = {}
    positional: list[str] = []
    for index, token in enumerate(tokens):
        key, sep, value = token.partition("=")
        if sep and key in params and index not in literal:
            args[key] = value
        else:
            positional.append(token)
    free = [name for name in params if name not in args]
    for name, value in zip(free, positional, strict=False):
        args[name] = value
    if len(positional) > len(free) and free:
        text_params = [name for name in free if _takes_text(tool, name)]
        if not text_params:
            raise RetriableError(
                f"/{tool.name} takes {len(free)} positional argument(s), got {len(positional)}: "
                f"{_preview(' '.join(positional))}. Quote values that contain spaces."
            )
        last = text_params[-1]
        start = free.index(last)
        args[last] = " ".join(positional[start:])
        for name in free[start + 1 :]:
            args.pop(name, None)
    elif len(positional) > len(free):
        raise RetriableError(f"/{tool.name} takes no more arguments; got {_preview(' '.join(positional))}.")
    return args


def _takes_text(tool: Tool, name: str) -> bool:
    annotation = tool.args.signature.parameters[name].annotation
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation is str or str in typing.get_args(annotation)


def _type_name(prop: dict[str, Any]) -> str:
    if "type" in prop:
        return str(prop["type"])
    options = [p.get("type") for p in prop.get("anyOf", []) if p.get("type") not in (None, "null")]
    return "|".join(str(o) for o in options) or "any"
