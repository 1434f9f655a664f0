"""Skills: folders of instructions (the Agent Skills layout) an agent loads when a task calls for them.

* :mod:`~toolcards.skills._models` — :class:`Skill` and :func:`parse_skill`: a ``SKILL.md``'s
  front matter (``name``, ``description``) and body, checked with the file and line of a problem.
* :mod:`~toolcards.skills._library` — :class:`SkillLibrary`: skills from configured folders and
  installed packages (entry point group ``toolcards.skills``), kept current by ``stat``.
* :mod:`~toolcards.skills._files` — reading a skill's file without leaving its folder.
* :mod:`~toolcards.skills._tool` — :class:`SkillsTool`, the card: the menu, ``use_skill``,
  ``read_skill_file``.

Importing this package loads pydantic and PyYAML; no actor is involved (a skill's truth is its files).
"""

from __future__ import annotations

from toolcards.skills._files import MAX_LISTED_FILES, read_skill_file
from toolcards.skills._library import (
    ENTRY_POINT_GROUP,
    MAX_SKILL_BYTES,
    SkillLibrary,
    SkillSource,
)
from toolcards.skills._models import DESCRIPTION_MAX, NAME_PATTERN, SKILL_FILE, Skill, SkillProblem, parse_skill
from toolcards.skills._tool import ReadSkillFileParam, SkillMenuParam, SkillsTool, UseSkillParam

__all__ = [
    "DESCRIPTION_MAX",
    "ENTRY_POINT_GROUP",
    "MAX_LISTED_FILES",
    "MAX_SKILL_BYTES",
    "NAME_PATTERN",
    "SKILL_FILE",
    "ReadSkillFileParam",
    "Skill",
    "SkillLibrary",
    "SkillMenuParam",
    "SkillProblem",
    "SkillSource",
    "SkillsTool",
    "UseSkillParam",
    "parse_skill",
    "read_skill_file",
]
