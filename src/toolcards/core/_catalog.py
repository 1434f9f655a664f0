"""The search behind ``search_tools``: a catalog of tools (and things tools serve), ranked by BM25.

One catalog serves both places a model finds tools instead of reading them all: the MCP
server's facade (``toolcards serve --facade``) and an agent's in-process tool search
(``member.toolset(..., tool_search=True)``). :class:`ToolCatalog` holds anything with a
name, a description and an input schema (a pipeline :class:`~toolcards.core._tool.Tool`, or a
pydantic-ai tool definition seen through :class:`CatalogTool`), plus the
:class:`CatalogEntry` rows cards offer besides their tools (a skill, served by ``use_skill``).

Ranking: BM25 over a tool's name (weighted 3), description (3) and parameter names (1). A
query may be a sentence: stop words are dropped and a few everyday words are read as the
words tools use (:data:`SYNONYMS`: "look at a screenshot" searches for view and image too);
a query word that names a tool adds a bonus in proportion to how much of the name it covers.
An unknown name gets "did you mean" suggestions.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from toolcards.core._words import STOP_WORDS as TEXT_STOP_WORDS
from toolcards.errors import RetriableError

__all__ = [
    "DESCRIBE_TOOL",
    "SEARCH_TOOLS",
    "SYNONYMS",
    "BM25Index",
    "CatalogEntry",
    "CatalogTool",
    "Searchable",
    "ToolCatalog",
    "did_you_mean",
    "query_terms",
    "summary",
    "tokenize",
    "unknown_tool_message",
]

SEARCH_TOOLS = "search_tools"
"""The name of the tool that searches a catalog, wherever one is offered."""
DESCRIBE_TOOL = "describe_tool"
"""The name of the tool that shows one tool's description and input schema."""

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SUFFIXES = ("ing", "ies", "es", "ed", "s")
NAME_WEIGHT = 3
"""A tool's name tokens count this many times: a name match beats a passing mention."""
NAME_BONUS = 2.0
"""Added to a tool's score when its name is made of query words (in proportion to how much of it)."""
_GENERIC_NAME_WORDS = frozenset({"workspace", "web", "get"})
"""Name parts shared by whole families of tools: they do not pick one."""
DESCRIPTION_WEIGHT = 3
"""A tool's description tokens count this many times, above its parameter names (once)."""

STOP_WORDS = TEXT_STOP_WORDS | frozenset(("give", "let", "need", "please", "tell", "us", "use", "using", "want"))
"""The package's stop words (:mod:`toolcards.core._words`) and the words of a request
(``please``, ``let``, ``want``) that say nothing about which tool is meant."""

SYNONYMS: dict[str, tuple[str, ...]] = {
    "look": ("view",),
    "see": ("view",),
    "screenshot": ("image",),
    "picture": ("image",),
    "photo": ("image",),
    "diagram": ("image",),
    "content": ("read",),
    "open": ("read",),
    "remember": ("record", "knowledge"),
    "fact": ("knowledge",),
    "learn": ("knowledge", "record"),
    "assign": ("owner", "task"),
    "todo": ("task",),
    "execute": ("run", "command"),
    "test": ("run", "command"),
    "build": ("run", "command"),
    "install": ("run", "command"),
    "shell": ("command",),
    "defin": ("content",),
    "definition": ("content",),
    "usage": ("content",),
    "function": ("content",),
    "class": ("content",),
    "method": ("content",),
    "symbol": ("content",),
    "undo": ("edit", "replace"),
    "revert": ("edit", "replace"),
    "modify": ("edit",),
    "change": ("edit",),
    "internet": ("web",),
    "online": ("web",),
    "latest": ("web",),
    "url": ("fetch",),
    "download": ("fetch",),
}
"""Everyday words (as stems) and the words tool descriptions use for the same thing."""


def _stem(word: str) -> str:
    # Just enough to match "tasks" with "task", "reading" with "read" and "replacing" with
    # "replace" (a final "e" goes, so both become "replac").
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "ies":
                return word[:-3] + "y"
            if suffix == "es" and not word.endswith(("ses", "xes", "zes", "ches", "shes")):
                return word[:-1].removesuffix("e") if len(word) > 5 else word[:-1]
            return word[: -len(suffix)]
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


def tokenize(text: str) -> list[str]:
    """Lower-case word stems of ``text``, splitting snake_case and camelCase; stop words dropped."""
    words = [match.group(0).lower() for match in _WORD.finditer(text)]
    return [_stem(word) for word in words if len(word) > 1 and word not in STOP_WORDS]


_GENERIC_NAME_STEMS = frozenset(_stem(word) for word in _GENERIC_NAME_WORDS)
_SYNONYM_STEMS = {_stem(word): tuple(_stem(other) for other in others) for word, others in SYNONYMS.items()}


def query_terms(query: str) -> list[str]:
    """The search terms of ``query``: its stems, then the tool words its everyday words stand for."""
    terms = tokenize(query)
    expanded = [synonym for term in terms for synonym in _SYNONYM_STEMS.get(term, ())]
    return terms + [term for term in expanded if term not in terms]


class BM25Index:
    """Okapi BM25 over a fixed set of documents, each a name and its tokens.

    Args:
        documents: ``(name, tokens)`` pairs.
        k1: Term-frequency saturation.
        b: Length normalisation.
    """

    def __init__(self, documents: Iterable[tuple[str, Sequence[str]]], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._names: list[str] = []
        self._counts: list[Counter[str]] = []
        self._lengths: list[int] = []
        for name, tokens in documents:
            self._names.append(name)
            self._counts.append(Counter(tokens))
            self._lengths.append(len(tokens))
        self._average = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0
        frequency: Counter[str] = Counter()
        for counts in self._counts:
            frequency.update(counts.keys())
        total = len(self._names)
        self._idf = {term: math.log(1 + (total - df + 0.5) / (df + 0.5)) for term, df in frequency.items()}

    def search(self, query: str | Sequence[str], limit: int = 10) -> list[tuple[str, float]]:
        """The best ``limit`` documents for ``query`` as ``(name, score)``, best first.

        Documents sharing no term with the query are left out; ties keep insertion order.
        """
        terms = query_terms(query) if isinstance(query, str) else list(query)
        scores: list[tuple[float, int]] = []
        for index, counts in enumerate(self._counts):
            score = 0.0
            norm = self.k1 * (1 - self.b + self.b * self._lengths[index] / (self._average or 1.0))
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    score += self._idf[term] * tf * (self.k1 + 1) / (tf + norm)
            if score > 0:
                scores.append((score, index))
        scores.sort(key=lambda item: (-item[0], item[1]))
        return [(self._names[index], score) for score, index in scores[:limit]]


def did_you_mean(name: str, candidates: Iterable[str], limit: int = 3) -> list[str]:
    """Up to ``limit`` names from ``candidates`` close to ``name`` (rapidfuzz), best first."""
    from rapidfuzz import fuzz, process

    pool = list(candidates)
    matches = process.extract(name, pool, scorer=fuzz.WRatio, limit=limit, score_cutoff=70)
    return [match[0] for match in matches]


def summary(description: str, limit: int = 120) -> str:
    """The first sentence (or line) of ``description``, at most ``limit`` characters."""
    first = description.strip().split("\n", 1)[0]
    sentence = re.split(r"(?<=[.!?])\s", first, maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


class Searchable(Protocol):
    """What a catalog needs of a tool: a :class:`~toolcards.core._tool.Tool` has it."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters_schema(self) -> dict[str, Any]: ...


T = TypeVar("T", bound=Searchable)


@dataclass(frozen=True, kw_only=True)
class CatalogTool:
    """A tool known only by its definition (an external MCP server's, seen through pydantic-ai)."""

    name: str
    """The tool's name."""
    description: str
    """What the model reads about it."""
    parameters_schema: dict[str, Any] = field(default_factory=dict)
    """Its input's JSON schema."""


@dataclass(frozen=True, kw_only=True)
class CatalogEntry:
    """Something a card offers besides its tools, found by ``search_tools``: a skill, say.

    A hit names the tool to call and its arguments (``use_skill`` with ``{"name": ...}``).
    """

    name: str
    """What the entry is called (a skill's name); searched like a tool's name."""
    description: str
    """What it is for; searched, and its first sentence is the hit's summary."""
    tool: str
    """The tool that serves it."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """The arguments to call :attr:`tool` with."""
    tools: tuple[str, ...] = ()
    """Further tools it needs besides :attr:`tool` (an in-process search loads them with it)."""


class ToolCatalog(Generic[T]):
    """Search, describe and resolve a set of tools by name.

    Args:
        tools: The tools the search reaches, by name.
        entries: Called at each search for the cards' :class:`CatalogEntry` rows; the index is
            rebuilt only when it returns another object than the time before, so a card returns
            the same tuple while its entries are unchanged.
    """

    def __init__(self, tools: Mapping[str, T], entries: Callable[[], Sequence[CatalogEntry]] | None = None) -> None:
        self.tools = dict(tools)
        self._entries_of = entries
        self._entries: Sequence[CatalogEntry] | None = None
        self._by_key: dict[str, CatalogEntry] = {}
        self._index = BM25Index(())
        self._name_terms: dict[str, set[str]] = {}
        self._build(())

    def _build(self, entries: Sequence[CatalogEntry]) -> None:
        # An entry's key cannot be a tool name: tool names never hold a NUL.
        self._entries = entries
        self._by_key = {f"\0{index}": entry for index, entry in enumerate(entries)}
        documents = [(name, _document(tool)) for name, tool in self.tools.items()]
        documents += [(key, _entry_document(entry)) for key, entry in self._by_key.items()]
        self._index = BM25Index(documents)
        self._name_terms = {name: set(tokenize(name)) for name in self.tools}
        self._name_terms.update({key: set(tokenize(entry.name)) for key, entry in self._by_key.items()})

    def entries(self) -> Sequence[CatalogEntry]:
        """The cards' entries as they are now (the index follows them)."""
        if self._entries_of is not None:
            current = self._entries_of()
            if current is not self._entries:
                self._build(current)
        return self._entries or ()

    def search(self, query: str, limit: int = 8) -> list[dict[str, Any]]:
        """Ranked matches for ``query``, best first: ``{"name", "summary", "score"}`` for a tool,
        plus ``"arguments"`` for an entry (``name`` is then the tool that serves it).

        Raises:
            RetriableError: the query has no searchable word, or nothing matches.
        """
        if not tokenize(query):
            raise RetriableError(
                f"The query {query!r} has no words to search for. Describe the task in a few words, e.g. 'read a file'."
            )
        self.entries()
        terms = query_terms(query)
        scored = dict(self._index.search(terms, limit=len(self._name_terms)))
        # A word the user wrote that names the tool ("read file") says more than any
        # description: the bonus grows with how much of the name the query covers. Words
        # added as synonyms do not count: they widen the search, they do not pick a tool.
        written = set(tokenize(query))
        for name, words in self._name_terms.items():
            specific = words - _GENERIC_NAME_STEMS
            named = len(specific & written)
            if named:
                scored[name] = scored.get(name, 0.0) + NAME_BONUS * named / len(specific)
        hits = sorted(scored.items(), key=lambda item: -item[1])[:limit]
        if not hits:
            raise RetriableError(
                f"No tool matches {query!r}. Try other words for the task; there are {len(self.tools)} tools."
            )
        return [self._hit(name, score) for name, score in hits]

    def _hit(self, key: str, score: float) -> dict[str, Any]:
        entry = self._by_key.get(key)
        if entry is None:
            return {"name": key, "summary": summary(self.tools[key].description), "score": round(score, 3)}
        return {
            "name": entry.tool,
            "arguments": dict(entry.arguments),
            "summary": summary(entry.description),
            "score": round(score, 3),
        }

    def entry_of(self, hit: Mapping[str, Any]) -> CatalogEntry | None:
        """The entry a :meth:`search` hit stands for, or ``None`` for a tool's own hit."""
        if "arguments" not in hit:
            return None
        return next((e for e in self._entries or () if e.tool == hit["name"] and e.arguments == hit["arguments"]), None)

    def describe(self, name: str) -> dict[str, Any]:
        """``{"name", "description", "input_schema"}`` of one tool.

        Raises:
            RetriableError: no tool is called ``name`` (with suggestions).
        """
        tool = self.resolve(name)
        return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters_schema}

    def resolve(self, name: str) -> T:
        """The tool called ``name``.

        Raises:
            RetriableError: no tool is called ``name``; the message suggests close names.
        """
        tool = self.tools.get(name)
        if tool is None:
            raise RetriableError(unknown_tool_message(name, self.tools))
        return tool


def unknown_tool_message(name: str, known: Iterable[str], *, facade: bool = True) -> str:
    """What a model reads after calling a tool that does not exist."""
    suggestions = did_you_mean(name, known)
    hint = f" Did you mean {', '.join(suggestions)}?" if suggestions else ""
    step = f" Call {SEARCH_TOOLS} to find the right tool." if facade else " Check the tool list."
    return f"There is no tool called {name!r}.{hint}{step}"


def _document(tool: Searchable) -> list[str]:
    properties = tool.parameters_schema.get("properties", {})
    return [
        *tokenize(tool.name) * NAME_WEIGHT,
        *tokenize(tool.description) * DESCRIPTION_WEIGHT,
        *(token for parameter in properties for token in tokenize(parameter)),
    ]


def _entry_document(entry: CatalogEntry) -> list[str]:
    return [*tokenize(entry.name) * NAME_WEIGHT, *tokenize(entry.description) * DESCRIPTION_WEIGHT]
