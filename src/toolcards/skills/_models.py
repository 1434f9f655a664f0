"""A skill: a folder with a ``SKILL.md`` (YAML front matter, then Markdown), in the Agent Skills layout.

::

    pdf-forms/
    ├── SKILL.md          # ---\\nname: pdf-forms\\ndescription: ...\\n---\\n<the instructions>
    ├── reference.md      # read on demand with read_skill_file
    └── scripts/fill.py

The front matter must hold ``name`` (1 to 64 lowercase letters, digits and single hyphens,
not at either end, the same as the folder's name) and ``description`` (1 to 1,024
characters: what the skill does and when to use it). ``license``, ``compatibility`` (up to
500 characters), ``metadata`` (text to text) and ``allowed-tools`` are read when present;
other keys are left alone, since other agents add their own. :func:`parse_skill` checks all
of it and says what is wrong at which line of the file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "DESCRIPTION_MAX",
    "NAME_PATTERN",
    "SKILL_FILE",
    "Skill",
    "SkillFile",
    "SkillProblem",
    "parse_skill",
    "parse_skills",
    "skill_from",
    "split_skill_file",
]

SKILL_FILE = "SKILL.md"
"""The file that makes a folder a skill."""
NAME_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
"""What a skill's name may look like (and at most 64 characters)."""
NAME_MAX = 64
DESCRIPTION_MAX = 1024
"""Characters of a skill's description, at most."""
COMPATIBILITY_MAX = 500

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FENCE = "---"


@dataclass(frozen=True, kw_only=True)
class Skill:
    """One parsed skill."""

    name: str
    """The skill's name, as its front matter and its folder say."""
    description: str
    """What it does and when to use it."""
    body: str
    """The Markdown after the front matter: what ``use_skill`` returns."""
    folder: Path
    """The skill's folder (resolved): ``read_skill_file`` reads only inside it."""
    license: str | None = None
    """The license named in the front matter, if any."""
    compatibility: str | None = None
    """What the skill needs to run (products, system packages, network), if stated."""
    metadata: dict[str, str] = field(default_factory=dict)
    """Further text fields of the front matter's ``metadata``."""
    allowed_tools: tuple[str, ...] = ()
    """The front matter's ``allowed-tools``, split on spaces."""


class SkillProblem(ValueError):
    """A ``SKILL.md`` that is not a valid skill; the message names the file and the line."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.reason = message
        """What is wrong, without the file and line."""


@dataclass(frozen=True, kw_only=True)
class SkillFile:
    """A ``SKILL.md`` split into its front matter and its body, before the front matter is read."""

    path: Path
    """The file."""
    folder: Path
    """The skill's folder (its name must be the skill's)."""
    front: str
    """The front matter's YAML text (the lines between the two ``---``)."""
    body: str
    """The Markdown after the front matter."""


def split_skill_file(path: Path, text: str, *, folder: Path) -> SkillFile:
    """``text`` (the content of ``path``) split at its front matter's fences.

    Raises:
        SkillProblem: it does not start with ``---``, or the front matter is not closed.
    """
    lines = text.split("\n")
    if not lines or lines[0].strip() != _FENCE:
        raise SkillProblem(path, 1, "does not start with '---': put the front matter (name, description) first")
    end = next((index for index in range(1, len(lines)) if lines[index].rstrip() == _FENCE), None)
    if end is None:
        raise SkillProblem(path, 1, "the front matter has no closing '---' line")
    return SkillFile(
        path=path, folder=folder, front="\n".join(lines[1:end]), body="\n".join(lines[end + 1 :]).strip("\n")
    )


def parse_skill(path: Path, text: str, *, folder: Path) -> Skill:
    """The skill ``path`` (a ``SKILL.md`` whose content is ``text``) describes.

    Raises:
        SkillProblem: no front matter, YAML that does not parse, a missing or invalid
            ``name`` or ``description``, a name unlike the folder's, a field of the wrong kind.
    """
    file = split_skill_file(path, text, folder=folder)
    return skill_from(file, _load_one(file))


def parse_skills(files: Sequence[SkillFile]) -> list[Skill | SkillProblem]:
    """The skill each file describes, or what is wrong with it, in order.

    The front matters are read as one YAML stream (one parser for all: a bind reads every
    skill, and starting a parser per file cost more than the parsing); when the stream does
    not parse, each file is read alone, so a problem names its own file and line.
    """
    documents: list[Any] | None = None
    if len(files) > 1:
        try:
            documents = list(yaml.load_all("\n---\n".join(file.front for file in files), Loader=_LOADER))
        except yaml.YAMLError:
            documents = None
        if documents is not None and len(documents) != len(files):
            documents = None
    results: list[Skill | SkillProblem] = []
    for index, file in enumerate(files):
        try:
            data = documents[index] if documents is not None else _load_one(file)
            results.append(skill_from(file, data))
        except SkillProblem as problem:
            results.append(problem)
    return results


def _load_one(file: SkillFile) -> Any:
    try:
        return yaml.load(file.front, Loader=_LOADER)  # a safe loader (the C one when PyYAML has it)
    except yaml.YAMLError as exc:
        # Where the broken construct starts (an unclosed bracket's line), else where it broke.
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        line = 2 + (mark.line if mark is not None else 0)
        problem = getattr(exc, "problem", None) or str(exc).split("\n")[0]
        raise SkillProblem(file.path, line, f"the front matter is not valid YAML: {problem}") from None


def skill_from(file: SkillFile, data: Any) -> Skill:
    """The skill a front matter read as ``data`` describes.

    Raises:
        SkillProblem: ``name`` or ``description`` missing or invalid, a name unlike the
            folder's, a field of the wrong kind.
    """
    path, folder = file.path, file.folder
    lines = ["---", *file.front.split("\n")]
    end = len(lines)
    if not isinstance(data, dict):
        raise SkillProblem(path, 2, "the front matter must be a mapping with 'name' and 'description'")

    def line_of(key: str) -> int:
        pattern = re.compile(rf"^{re.escape(key)}\s*:")
        return next((index + 1 for index in range(1, end) if pattern.match(lines[index])), 2)

    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise SkillProblem(path, line_of("name"), "needs 'name': the skill's name, e.g. name: pdf-forms")
    if len(name) > NAME_MAX or not NAME_PATTERN.fullmatch(name):
        raise SkillProblem(
            path,
            line_of("name"),
            f"name {name!r} is not valid: use 1 to {NAME_MAX} lowercase letters, digits and single hyphens, "
            "not at either end",
        )
    if name != folder.name:
        raise SkillProblem(path, line_of("name"), f"name {name!r} differs from its folder's name {folder.name!r}")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillProblem(path, line_of("description"), "needs 'description': what the skill does and when to use it")
    if len(description) > DESCRIPTION_MAX:
        raise SkillProblem(
            path, line_of("description"), f"description has {len(description)} characters; at most {DESCRIPTION_MAX}"
        )
    options: dict[str, Any] = {}
    for key in ("license", "compatibility"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise SkillProblem(path, line_of(key), f"{key} must be text")
        options[key] = value
    if options["compatibility"] is not None and len(options["compatibility"]) > COMPATIBILITY_MAX:
        raise SkillProblem(
            path, line_of("compatibility"), f"compatibility has more than {COMPATIBILITY_MAX} characters"
        )
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise SkillProblem(path, line_of("metadata"), "metadata must map text keys to text values")
    allowed = data.get("allowed-tools") or ""
    if not isinstance(allowed, str):
        raise SkillProblem(path, line_of("allowed-tools"), "allowed-tools must be text: tool names separated by spaces")
    return Skill(
        name=name,
        description=" ".join(description.split()),
        body=file.body,
        folder=folder,
        metadata=dict(metadata),
        allowed_tools=tuple(allowed.split()),
        **options,
    )
