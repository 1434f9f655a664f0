"""SKILL.md parsing: the front matter's rules, each refusal naming the file and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.skills.conftest import DATA, NAMES
from toolcards.skills import DESCRIPTION_MAX, SkillProblem, parse_skill


def parse(text: str, folder: str = "my-skill") -> object:
    path = Path("/skills") / folder / "SKILL.md"
    return parse_skill(path, text, folder=path.parent)


@pytest.mark.parametrize("name", NAMES)
def test_the_test_skills_parse(name: str) -> None:
    path = DATA / name / "SKILL.md"
    skill = parse_skill(path, path.read_text(), folder=path.parent)
    assert skill.name == name
    assert skill.description and "\n" not in skill.description
    assert skill.body.startswith("# ")


def test_optional_fields_are_read() -> None:
    path = DATA / "csv-cleanup" / "SKILL.md"
    skill = parse_skill(path, path.read_text(), folder=path.parent)
    assert skill.compatibility == "Python 3.11 or later, standard library only"
    assert skill.allowed_tools == ("exec_command", "workspace_read")
    release = DATA / "release-notes" / "SKILL.md"
    notes = parse_skill(release, release.read_text(), folder=release.parent)
    assert notes.license == "MIT" and notes.metadata == {"audience": "users"}


def test_a_folded_description_becomes_one_line() -> None:
    path = DATA / "api-deprecation" / "SKILL.md"
    skill = parse_skill(path, path.read_text(), folder=path.parent)
    assert skill.description.startswith("Plan the deprecation of a public API endpoint: announce it,")


def test_unknown_keys_are_left_alone() -> None:
    skill = parse("---\nname: my-skill\ndescription: Does things.\nversion: 2\n---\nBody\n")
    assert skill.name == "my-skill"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("name: my-skill\n", 1, "does not start with '---'"),
        ("---\nname: my-skill\ndescription: x\n", 1, "no closing '---'"),
        ("---\nname: my-skill\ndescription: [unclosed\n---\n", 3, "not valid YAML"),
        ("---\nname: my-skill\ndescription: a: b\n---\n", 3, "not valid YAML"),
        ("---\n- a list\n---\n", 2, "must be a mapping"),
        ("---\ndescription: Does things.\n---\n", 2, "needs 'name'"),
        ("---\ndescription: Does things.\nname: My_Skill\n---\n", 3, "name 'My_Skill' is not valid"),
        ("---\nname: my--skill\ndescription: x\n---\n", 2, "is not valid"),
        ("---\nname: other-skill\ndescription: x\n---\n", 2, "differs from its folder's name 'my-skill'"),
        ("---\nname: my-skill\n---\n", 2, "needs 'description'"),
        ("---\nname: my-skill\ndescription: '  '\n---\n", 3, "needs 'description'"),
        (f"---\nname: my-skill\ndescription: {'x' * (DESCRIPTION_MAX + 1)}\n---\n", 3, "at most 1024"),
        ("---\nname: my-skill\ndescription: x\nmetadata: {a: 1}\n---\n", 4, "metadata must map text"),
        ("---\nname: my-skill\ndescription: x\nlicense: [MIT]\n---\n", 4, "license must be text"),
        ("---\nname: my-skill\ndescription: x\nallowed-tools: [a]\n---\n", 4, "allowed-tools must be text"),
    ],
)
def test_a_bad_front_matter_names_the_file_and_the_line(text: str, line: int, words: str) -> None:
    with pytest.raises(SkillProblem) as caught:
        parse(text)
    assert str(caught.value).startswith(f"/skills/my-skill/SKILL.md:{line}: ")
    assert words in str(caught.value)
    assert caught.value.line == line
