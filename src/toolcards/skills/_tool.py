"""``SkillsTool``: folders of instructions an agent loads when a task calls for them.

``skill_menu`` (a line per skill in the system prompt), ``use_skill(name)`` (its ``SKILL.md``
body and files) and ``read_skill_file(name, path)`` (one file, read inside its folder); see
``docs/cards/skills.md``. Skills are read from ``paths`` and installed packages
(:mod:`toolcards.skills._library`) when the card is bound; an invalid ``SKILL.md`` is a
:class:`~toolcards.errors.WiringError` naming the file and line. Every render and use checks
the files' modification times, so edits reach the agent without a restart; the menu is sorted
and carries no time or version, so it changes only when a skill does. Skill text reaches the
model as it is, like the card's own words: install only skills you trust. No team is needed;
``search_tools`` also finds skills, as entries served by ``use_skill``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from pydantic import Field, PrivateAttr, field_validator

from toolcards.core._card import ToolCard, capability
from toolcards.core._catalog import CatalogEntry, did_you_mean
from toolcards.core._channels import COMMAND, SYSTEM_PROMPT, TOOL_CALL, Channels
from toolcards.core._params import BaseToolParam
from toolcards.core._tool import Tool
from toolcards.errors import RetriableError
from toolcards.skills._files import list_skill_files, read_skill_file
from toolcards.skills._library import SkillLibrary, SkillSource, installed_sources
from toolcards.skills._models import NAME_MAX, NAME_PATTERN, Skill, SkillProblem

__all__ = ["ReadSkillFileParam", "SkillMenuParam", "SkillsTool", "UseSkillParam"]

MENU_HEADER = "Skills"
LEFT_OUT_SHOWN = 5
"""Folders left out (no valid ``SKILL.md``) the menu names, at most; it counts the others."""


class SkillMenuParam(BaseToolParam):
    """The menu of skills in the agent's context."""

    expose: set[Channels] = {SYSTEM_PROMPT, COMMAND}


class UseSkillParam(BaseToolParam):
    """Load one skill's instructions."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ReadSkillFileParam(BaseToolParam):
    """Read one file of a skill."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class SkillsTool(ToolCard):
    """Skills in the Agent Skills layout, from folders and installed packages."""

    kind: ClassVar[str] = "skills"

    paths: list[str] = Field(default_factory=list)
    """Folders to read skills from: each a skill's folder (it holds a ``SKILL.md``) or a folder
    of skill folders. ``~`` is expanded; a relative path is taken from the working directory
    when the card is bound."""
    installed: bool = True
    """Also read the skill folders installed packages offer (entry point group ``toolcards.skills``)."""
    menu_chars: int = Field(default=52, ge=20, le=1024)
    """Characters of a skill's description the menu shows (its first sentence, cut at a word)."""
    max_file_bytes: int = Field(default=256 * 1024, ge=1, le=16 * 1024 * 1024)
    """Larger files of a skill are not read by ``read_skill_file``."""
    skill_menu: SkillMenuParam | bool = True
    use_skill: UseSkillParam | bool = True
    read_skill_file: ReadSkillFileParam | bool = True
    _library: SkillLibrary | None = PrivateAttr(default=None)
    _menu: tuple[tuple[Skill, ...], tuple[tuple[str, SkillProblem], ...], str | None] | None = PrivateAttr(default=None)
    _entries: tuple[tuple[Skill, ...], tuple[CatalogEntry, ...]] | None = PrivateAttr(default=None)

    @field_validator("paths")
    @classmethod
    def _no_empty_path(cls, paths: list[str]) -> list[str]:
        # An empty path would read the working directory's folders as skills.
        if any(not path.strip() for path in paths):
            raise ValueError("an empty path; give a folder, e.g. paths=['skills']")
        return paths

    def build_tools(self) -> list[Tool]:
        """Read every skill (once per card; see :mod:`toolcards.skills._library`), then build the tools.

        Binding builds them, with or without an agent, so a broken skill is found there.

        Raises:
            WiringError: a ``SKILL.md`` is not a valid skill, two skills share a name, a path
                is not a folder, or an installed package's entry point is broken.
        """
        if self._library is None:
            sources = [
                SkillSource(path=Path(os.path.abspath(os.path.expanduser(path))), origin=f"paths[{index}]")
                for index, path in enumerate(self.paths)
            ]
            if self.installed:
                sources += installed_sources()
            library = SkillLibrary(sources)
            library.load()
            self._library = library
        return super().build_tools()

    @property
    def library(self) -> SkillLibrary:
        """The skills this card reads (read when its tools are first built)."""
        if self._library is None:
            self.build_tools()
        assert self._library is not None
        return self._library

    def skills(self) -> tuple[Skill, ...]:
        """The skills as the files are now, sorted by name."""
        return self.library.current()

    def _callable(self, field: str) -> bool:
        param = self.param(field)
        return param is not None and TOOL_CALL in param.expose

    def _skill(self, name: str) -> Skill:
        self.library.current()
        skill = self.library.get(name)
        if skill is None:
            problem = dict(self.library.left_out()).get(name)
            if problem is not None:
                raise RetriableError(
                    f"Skill {name} is left out: SKILL.md:{problem.line}: {problem.reason}. "
                    "The skill menu lists the skills you can use."
                )
            known = [skill.name for skill in self.library.current()]
            close = did_you_mean(name, known)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise RetriableError(f"No skill is called {name!r}.{hint} The skill menu lists them.")
        return skill

    # -- capabilities ------------------------------------------------------------------------

    @capability("skill_menu")
    def show_menu(self) -> str | None:
        """The skills: name and what each is for."""
        skills = self.skills()
        left_out = self.library.left_out()
        cached = self._menu
        if cached is not None and cached[0] is skills and cached[1] is left_out:
            return cached[2]
        menu = render_menu(
            skills,
            self.menu_chars,
            use_tool="use_skill" if self._callable("use_skill") else None,
            left_out=[name for name, _ in left_out],
        )
        self._menu = (skills, left_out, menu)
        return menu

    @capability("use_skill")
    def load_skill(self, name: str) -> str:
        """Load a skill's instructions.

        Args:
            name: The skill's name.
        """
        skill = self._skill(name)
        if not self._callable("read_skill_file"):
            return skill.body
        files = list_skill_files(skill.folder)
        if not files:
            return skill.body
        return f"{skill.body}\n\nFiles of {skill.name} (read_skill_file): {', '.join(files)}"

    @capability("read_skill_file")
    def read_file(self, name: str, path: str) -> str:
        """Read a file of a skill.

        Args:
            name: The skill's name.
            path: The file's path in the skill's folder.
        """
        skill = self._skill(name)
        return read_skill_file(skill.folder, path, skill=skill.name, max_bytes=self.max_file_bytes)

    # -- search and tool search ------------------------------------------------------------

    def catalog_entries(self) -> Sequence[CatalogEntry]:
        """One entry per skill, served by ``use_skill`` (none when the model cannot call it)."""
        if not self._callable("use_skill"):
            return ()
        skills = self.skills()
        cached = self._entries
        if cached is not None and cached[0] is skills:
            return cached[1]
        extra = ("read_skill_file",) if self._callable("read_skill_file") else ()
        entries = tuple(
            CatalogEntry(
                name=skill.name,
                description=f"Skill {skill.name}: {skill.description}",
                tool="use_skill",
                arguments={"name": skill.name},
                tools=extra,
            )
            for skill in skills
        )
        self._entries = (skills, entries)
        return entries

    def context_tools(self) -> frozenset[str]:
        """``use_skill`` (and ``read_skill_file``, which its answer names) while the menu is in the context."""
        menu = self.param("skill_menu")
        if menu is None or SYSTEM_PROMPT not in menu.expose:
            return frozenset()
        return frozenset(field for field in ("use_skill", "read_skill_file") if self._callable(field))


def render_menu(
    skills: Sequence[Skill], menu_chars: int, *, use_tool: str | None, left_out: Sequence[str] = ()
) -> str | None:
    """The menu a model reads: ``name — description``, a line per skill, in the given order,
    then a line naming the folders ``left_out`` (their ``SKILL.md`` is not valid: a named pipe,
    a broken front matter); ``None`` without either. Each description is its first sentence,
    cut at a word to ``menu_chars``. At most :data:`LEFT_OUT_SHOWN` folders are named, and only
    those named as a skill may be (a folder's name could be any text, a line break included);
    the others are counted."""
    if not skills and not left_out:
        return None
    header = f"{MENU_HEADER} ({use_tool} loads one):" if use_tool else f"{MENU_HEADER}:"
    lines = [header, *(f"{skill.name} — {short(skill.description, menu_chars)}" for skill in skills)]
    if left_out:
        shown = [name for name in left_out if len(name) <= NAME_MAX and NAME_PATTERN.fullmatch(name)]
        shown = shown[:LEFT_OUT_SHOWN]
        more = len(left_out) - len(shown)
        if shown:
            why = f" ({use_tool} says why)" if use_tool else ""
            names = ", ".join(shown) + (f" and {more} more" if more else "")
            lines.append(f"Left out, SKILL.md not valid{why}: {names}")
        else:
            lines.append(f"Left out, SKILL.md not valid: {more} folder{'s' if more > 1 else ''}")
    return "\n".join(lines)


def short(description: str, limit: int) -> str:
    """``description``'s first sentence, cut at a word boundary to ``limit`` characters (``…`` marks a cut)."""
    first = description.split(". ", 1)[0].rstrip(".")
    if len(first) <= limit:
        return first
    cut = first[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"
