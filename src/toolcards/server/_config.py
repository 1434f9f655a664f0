"""The team config file: which cards a served team has, and how the server offers them.

A config is YAML (or JSON, which is YAML) with one team::

    team_id: acme              # the team the agents join; names the state in the store
    name: acme-tools           # the server name MCP clients see (default: toolcards)
    cards:                     # serialized cards, the format of toolcards.dump_cards
      - kind: planning
      - kind: workspace
        read_only: true
    facade: false              # true: list search_tools/describe_tool/call_tool instead
    hot_tools: [get_planning]  # in facade mode, also list these tools directly
    context_tool: true         # list get_team_context: the live context as a tool result
    approve_all: false         # true: run tools marked requires_approval without asking
    approval_timeout_s: 300    # how long a user asked to approve a call may take
    roots: "off"               # read-only / writable: the client's root is the workspace
    imports: [mypkg.cards]     # modules to import first (cards register when defined)
    user_id: null              # the human the team works for, if any

Unknown keys are refused, so a typo fails at start instead of being ignored. Card entries
are checked by :func:`toolcards.core._registry.load_cards` when the config is loaded.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolcards.core._registry import card_class, card_kinds, load_cards
from toolcards.errors import WiringError

if TYPE_CHECKING:
    from toolcards.core._card import ToolCard

__all__ = ["DEFAULT_TEAM_CARDS", "ServeConfig", "default_config", "load_config"]

DEFAULT_TEAM_CARDS: tuple[str, ...] = ("workspace", "planning", "knowledge_graph", "exec", "messaging")
"""The card kinds of the team served when no config is given, each with default fields."""


class ServeConfig(BaseModel):
    """One served team: its id, its cards (as data) and how they are offered over MCP."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    team_id: str = Field(default="default", min_length=1, max_length=100)
    """The team every client joins; persisted state is keyed by it."""
    name: str = Field(default="toolcards", min_length=1)
    """The server name announced to MCP clients."""
    cards: list[dict[str, Any]] = Field(default_factory=list)
    """Serialized cards (``[{"kind": ..., ...fields}]``), as :func:`~toolcards.dump_cards` writes them."""
    facade: bool = False
    """List three meta tools (search, describe, call) instead of every tool."""
    hot_tools: list[str] = Field(default_factory=list)
    """Tools listed directly in facade mode, next to the meta tools."""
    approve_all: bool = False
    """Run tools marked ``requires_approval`` without asking anyone (otherwise the client's user
    is asked where the client can elicit, and the call refused where it cannot)."""
    approval_timeout_s: float = Field(default=300.0, gt=0, le=86_400)
    """Seconds the client's user may take to approve a call before it is refused."""
    roots: Literal["off", "read-only", "writable"] = "off"
    """``read-only`` / ``writable``: the client's first root directory is its agent's
    workspace (``--roots``), read-only unless ``writable``; ``off``: the configured tree."""
    context_tool: bool = True
    """List ``get_team_context``, which returns the team's live context (the plan, the graph
    summary: what the cards' system prompts render), for clients that read no resources."""
    imports: list[str] = Field(default_factory=list)
    """Modules imported before the cards are loaded, so card classes they define are known."""
    user_id: str | None = None
    """The human the team works for, passed to every agent."""

    @field_validator("cards")
    @classmethod
    def _each_card_has_a_kind(cls, cards: list[dict[str, Any]]) -> list[dict[str, Any]]:
        missing = [str(index) for index, card in enumerate(cards) if "kind" not in card]
        if missing:
            raise ValueError(f"card(s) #{', #'.join(missing)} need a 'kind' key")
        return cards

    def build_cards(self) -> list[ToolCard]:
        """Fresh, unbound cards from :attr:`cards` (a new list of new objects on every call).

        Modules in :attr:`imports` are imported first, with the current directory on
        ``sys.path`` (as ``python -m`` has it), so a ``mycards.py`` next to where the
        server starts can be listed.

        Raises:
            WiringError: a module in :attr:`imports` or a card kind cannot be imported, or a
                card entry has an unknown kind or invalid fields (every problem listed).
        """
        if self.imports:
            cwd = os.getcwd()
            if cwd not in sys.path and "" not in sys.path:
                sys.path.insert(0, cwd)
        for module in self.imports:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise WiringError(
                    f"Cannot import {module!r} listed under 'imports': {exc}. Fix the module name or install it."
                ) from exc
        problems = []
        for kind in dict.fromkeys(str(card["kind"]) for card in self.cards):
            try:
                card_class(kind)
            except ImportError as exc:
                where = card_kinds().get(kind, kind)
                problems.append(f"card kind {kind!r} ({where}) cannot be imported: {exc}")
        if problems:
            raise WiringError("; ".join(problems) + ". Install what it needs, or remove the card from the config.")
        return load_cards(self.cards)

    def with_options(self, **changes: Any) -> ServeConfig:
        """A copy with ``changes`` applied and validated (command-line overrides).

        Raises:
            WiringError: a change is invalid; the message names each field and its problem.
        """
        try:
            return ServeConfig.model_validate({**self.model_dump(), **changes})
        except ValidationError as exc:
            raise WiringError(f"Invalid team options: {_problems(exc)}.") from None


def default_config(team_id: str = "default") -> ServeConfig:
    """The team served without a config file: workspace, planning, knowledge graph, exec and
    messaging (every client's agent gets a mailbox)."""
    return ServeConfig(team_id=team_id, cards=[{"kind": kind} for kind in DEFAULT_TEAM_CARDS])


def load_config(path: str | Path) -> ServeConfig:
    """Read and validate the config file at ``path`` (YAML or JSON).

    The cards are not built here (see :meth:`ServeConfig.build_cards`).

    Raises:
        WiringError: the file is missing, empty, not YAML, or does not describe a team; the
            message names the file and every problem.
    """
    import yaml

    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise WiringError(f"Cannot read config {source}: {exc.strerror or exc}.") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise WiringError(f"Config {source} is not valid YAML: {_yaml_problem(exc)}.") from exc
    if data is None:
        # An empty file is a mistake (the wrong file, or one cut short), not a team without cards.
        raise WiringError(
            f"Config {source} is empty. Describe a team in it (team_id, and cards: `toolcards cards` lists the "
            "kinds), or leave --config out to serve the default team."
        )
    if isinstance(data, list):
        # A bare list of cards is a team with the default id.
        data = {"cards": data}
    if not isinstance(data, Mapping):
        raise WiringError(f"Config {source} must be a mapping with 'team_id' and 'cards', not {type(data).__name__}.")
    try:
        return ServeConfig.model_validate(dict(data))
    except ValidationError as exc:
        raise WiringError(f"Config {source} is invalid: {_problems(exc)}.") from None


def _yaml_problem(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None or not problem:
        return " ".join(str(exc).split())
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'config'}: {err['msg']}" for err in exc.errors(include_url=False)
    )
