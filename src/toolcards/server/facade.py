"""Facade mode: three meta tools in front of a large catalog, so a client's context stays small.

Instead of every tool definition on every request, ``tools/list`` shows:

* ``search_tools(query)`` — tools ranked by BM25 over their names (weighted 3), descriptions
  (2) and parameter names (1), with a one-line summary and a score each. A query may be a
  sentence: stop words are dropped and a few everyday words are read as the words tools use
  (:data:`SYNONYMS`: "look at a screenshot" searches for view and image too);
* ``describe_tool(name)`` — one tool's full description and input schema;
* ``call_tool(name, arguments)`` — run it, through the same pipeline as a direct call;

plus the tools the config keeps on the hot path (``hot_tools``). An unknown name gets
"did you mean" suggestions. Nothing here imports mcp: results are plain data.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from toolcards.errors import RetriableError

if TYPE_CHECKING:
    from toolcards.core.tool import Tool

__all__ = [
    "CALL_TOOL",
    "DESCRIBE_TOOL",
    "META_TOOLS",
    "SEARCH_TOOLS",
    "BM25Index",
    "ToolCatalog",
    "did_you_mean",
    "meta_tools",
    "query_terms",
    "summary",
    "tokenize",
    "unknown_tool_message",
]

SEARCH_TOOLS = "search_tools"
DESCRIBE_TOOL = "describe_tool"
CALL_TOOL = "call_tool"
META_TOOLS = (SEARCH_TOOLS, DESCRIBE_TOOL, CALL_TOOL)

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

STOP_WORDS = frozenset(
    (  # noqa: SIM905 - a paragraph of words reads better than seventy lines of them
        "a about after all an and any are as at be been but by can could do does for from give has have "
        "how i in into is it its let me my need of on or our please some tell that the their them then there "
        "these this those to up us use using want we what when where which who why will with would you your"
    ).split()
)
"""Words a query in a sentence carries that say nothing about which tool is meant."""

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


class ToolCatalog:
    """Search, describe and resolve a set of tools by name.

    Args:
        tools: The tools the meta tools reach (every TOOL_CALL tool of an agent).
    """

    def __init__(self, tools: Mapping[str, Tool]) -> None:
        self.tools = dict(tools)
        self._index = BM25Index((name, _document(tool)) for name, tool in self.tools.items())
        self._name_terms = {name: set(tokenize(name)) for name in self.tools}

    def search(self, query: str, limit: int = 8) -> list[dict[str, Any]]:
        """Ranked matches for ``query``: ``{"name", "summary", "score"}`` each, best first.

        Raises:
            RetriableError: the query has no searchable word, or nothing matches.
        """
        if not tokenize(query):
            raise RetriableError(
                f"The query {query!r} has no words to search for. Describe the task in a few words, e.g. 'read a file'."
            )
        terms = query_terms(query)
        scored = dict(self._index.search(terms, limit=len(self.tools)))
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
        return [
            {"name": name, "summary": summary(self.tools[name].description), "score": round(score, 3)}
            for name, score in hits
        ]

    def describe(self, name: str) -> dict[str, Any]:
        """``{"name", "description", "input_schema"}`` of one tool.

        Raises:
            RetriableError: no tool is called ``name`` (with suggestions).
        """
        tool = self.resolve(name)
        return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters_schema}

    def resolve(self, name: str) -> Tool:
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


def _document(tool: Tool) -> list[str]:
    properties = tool.parameters_schema.get("properties", {})
    return [
        *tokenize(tool.name) * NAME_WEIGHT,
        *tokenize(tool.description) * DESCRIPTION_WEIGHT,
        *(token for parameter in properties for token in tokenize(parameter)),
    ]


def meta_tools(catalog: ToolCatalog) -> dict[str, Tool]:
    """The three meta tools over ``catalog``, as pipeline tools (their signatures are the schemas).

    ``call_tool``'s handler only echoes its validated arguments: the server runs the
    named tool itself, so the call goes through that tool's own pipeline.
    """
    from toolcards.core.tool import Tool

    def search_tools(query: str, limit: Annotated[int, Field(ge=1, le=50)] = 8) -> list[dict[str, Any]]:
        """Find tools for a task, best first; then describe_tool gives a tool's arguments.

        Args:
            query: The task, e.g. 'edit a file'.
        """
        return catalog.search(query, limit)

    def describe_tool(name: str) -> dict[str, Any]:
        """One tool's description and input schema."""
        return catalog.describe(name)

    def call_tool(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run a tool by name with its arguments."""
        return {"name": name, "arguments": arguments or {}}

    from toolcards.core.hints import ToolHints

    # call_tool runs any tool: clients are told the worst of it (it may change and delete
    # things, and reach the web); the tool it runs has its own hints in describe_tool.
    return {
        SEARCH_TOOLS: Tool.from_function(search_tools, name=SEARCH_TOOLS, hints=ToolHints(title="Find tools")),
        DESCRIBE_TOOL: Tool.from_function(describe_tool, name=DESCRIBE_TOOL, hints=ToolHints(title="Describe tool")),
        CALL_TOOL: Tool.from_function(
            call_tool,
            name=CALL_TOOL,
            mutates=True,
            hints=ToolHints(title="Call tool", destructive=True, open_world=True),
        ),
    }
