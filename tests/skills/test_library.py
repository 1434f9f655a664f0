"""Where skills come from (paths, installed packages) and how edits reach a running card."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.skills.conftest import NAMES, rescued, write_skill
from toolcards import ToolFactory, WiringError
from toolcards.skills import SkillLibrary, SkillSource, SkillsTool
from toolcards.skills._library import forget_installed_skills


def library(*paths: Path) -> SkillLibrary:
    return SkillLibrary([SkillSource(path=path, origin=f"paths[{i}]") for i, path in enumerate(paths)])


def touch_later(path: Path, text: str) -> None:
    """Rewrite ``path`` so its stamp surely changes (same-size edits within a clock tick too)."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


def test_a_folder_of_skills_loads_sorted(skills_dir: Path) -> None:
    assert [skill.name for skill in library(skills_dir).load()] == NAMES


def test_a_path_may_be_one_skill_folder(skills_dir: Path) -> None:
    assert [skill.name for skill in library(skills_dir / "csv-cleanup").load()] == ["csv-cleanup"]


def test_hidden_folders_and_folders_without_skill_md_are_skipped(skills_dir: Path) -> None:
    (skills_dir / ".git").mkdir()
    (skills_dir / "drafts").mkdir()
    (skills_dir / "README.md").write_text("not a skill")
    assert [skill.name for skill in library(skills_dir).load()] == NAMES


def test_every_bad_skill_is_listed_in_one_error_with_its_file_and_line(tmp_path: Path) -> None:
    write_skill(tmp_path, "good-one", "Fine.")
    write_skill(tmp_path, "no-description", "", front="name: no-description")
    write_skill(tmp_path, "bad-yaml", "", front="name: bad-yaml\ndescription: [oops")
    with pytest.raises(WiringError) as caught:
        library(tmp_path).load()
    message = str(caught.value)
    assert f"{tmp_path / 'no-description' / 'SKILL.md'}:2: needs 'description'" in message
    assert f"{tmp_path / 'bad-yaml' / 'SKILL.md'}:3: the front matter is not valid YAML" in message
    assert "good-one" not in message


def test_a_card_with_a_bad_skill_fails_at_bind(tmp_path: Path) -> None:
    write_skill(tmp_path, "broken", "", front="name: Broken\ndescription: x")
    with pytest.raises(WiringError, match=r"broken/SKILL.md:2: name 'Broken' is not valid"):
        ToolFactory([SkillsTool(paths=[str(tmp_path)], installed=False)])


def test_two_skills_of_one_name_are_refused(tmp_path: Path) -> None:
    write_skill(tmp_path / "a", "same-name", "One.")
    write_skill(tmp_path / "b", "same-name", "Two.")
    with pytest.raises(WiringError, match="two skills are called 'same-name'"):
        library(tmp_path / "a", tmp_path / "b").load()


def test_a_path_that_is_not_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WiringError, match=r"paths\[0\]: .*missing is not a folder"):
        library(tmp_path / "missing").load()


def test_a_huge_or_binary_skill_md_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big-one"
    big.mkdir()
    (big / "SKILL.md").write_bytes(b"---\nname: big-one\ndescription: x\n---\n" + b"x" * (1024 * 1024 + 1))
    latin = tmp_path / "latin-one"
    latin.mkdir()
    (latin / "SKILL.md").write_bytes(b"---\nname: latin-one\ndescription: caf\xe9\n---\n")
    with pytest.raises(WiringError) as caught:
        library(tmp_path).load()
    assert f"big-one/SKILL.md:1: has {(big / 'SKILL.md').stat().st_size:,} bytes" in str(caught.value)
    assert "latin-one/SKILL.md:3: is not UTF-8 text" in str(caught.value)


def test_a_skill_md_that_is_a_named_pipe_fails_the_bind_without_blocking(skills_dir: Path) -> None:
    (skills_dir / "evil").mkdir()
    os.mkfifo(skills_dir / "evil" / "SKILL.md")
    with rescued(skills_dir / "evil" / "SKILL.md") as rescues, pytest.raises(WiringError) as caught:
        ToolFactory([SkillsTool(paths=[str(skills_dir)], installed=False)])
    assert rescues == []
    assert f"{skills_dir / 'evil' / 'SKILL.md'}:1: is a named pipe; a SKILL.md must be a regular file" in str(
        caught.value
    )


def test_a_source_whose_skill_md_is_a_named_pipe_is_refused_by_name(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "SKILL.md")
    with rescued(tmp_path / "SKILL.md") as rescues, pytest.raises(WiringError, match="is a named pipe"):
        library(tmp_path).load()
    assert rescues == []


def not_a_regular_file(path: Path, kind: str, elsewhere: Path) -> Path:
    """Make ``path`` a ``kind`` of file that is not a regular one; the named pipe to watch."""
    if kind == "fifo":
        os.mkfifo(path)
        return path
    if kind == "symlink-to-fifo":
        os.mkfifo(elsewhere)
        path.symlink_to(elsewhere)
        return elsewhere
    if kind == "symlink-to-device":
        path.symlink_to("/dev/null")
    else:
        path.mkdir()
    return path


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("fifo", "a named pipe"),
        ("symlink-to-fifo", "a named pipe"),
        ("symlink-to-device", "a device"),
        ("folder", "a folder"),
    ],
)
def test_a_skill_md_that_is_not_a_regular_file_is_left_out_without_blocking(
    skills_dir: Path, tmp_path: Path, kind: str, words: str
) -> None:
    lib = library(skills_dir)
    lib.load()
    (skills_dir / "evil").mkdir()
    with rescued(not_a_regular_file(skills_dir / "evil" / "SKILL.md", kind, tmp_path / "pipe")) as rescues:
        skills = lib.current()
        assert lib.current() is skills
    assert rescues == []
    assert [skill.name for skill in skills] == NAMES
    [(name, problem)] = lib.left_out()
    assert (name, problem.line, problem.reason) == ("evil", 1, f"is {words}; a SKILL.md must be a regular file")
    shutil.rmtree(skills_dir / "evil")
    write_skill(skills_dir, "evil", "Now a real skill.")
    assert "evil" in [skill.name for skill in lib.current()]
    assert lib.left_out() == ()


def test_the_same_tuple_comes_back_while_nothing_changed(skills_dir: Path) -> None:
    lib = library(skills_dir)
    first = lib.load()
    assert lib.current() is first
    assert lib.current() is first


def test_an_edit_is_seen_at_the_next_use(skills_dir: Path) -> None:
    lib = library(skills_dir)
    first = lib.load()
    path = skills_dir / "incident-review" / "SKILL.md"
    touch_later(path, path.read_text().replace("Write a blameless", "Write a short, blameless"))
    now = lib.current()
    assert now is not first
    assert lib.get("incident-review") is not None
    assert lib.get("incident-review").description.startswith("Write a short, blameless")  # type: ignore[union-attr]


def test_added_and_removed_skills_are_seen(skills_dir: Path) -> None:
    lib = library(skills_dir)
    lib.load()
    write_skill(skills_dir, "onboarding", "Welcome a new teammate.")
    assert "onboarding" in [skill.name for skill in lib.current()]
    (skills_dir / "release-notes" / "SKILL.md").unlink()
    assert "release-notes" not in [skill.name for skill in lib.current()]


def test_a_skill_md_added_to_an_existing_folder_is_seen(skills_dir: Path) -> None:
    (skills_dir / "later").mkdir()
    lib = library(skills_dir)
    lib.load()
    write_skill(skills_dir, "later", "Appears later.")
    assert "later" in [skill.name for skill in lib.current()]


def test_an_edit_that_breaks_a_skill_keeps_its_last_valid_version(
    skills_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lib = library(skills_dir)
    lib.load()
    path = skills_dir / "csv-cleanup" / "SKILL.md"
    touch_later(path, "---\nname: csv-cleanup\n---\nno description\n")
    with caplog.at_level(logging.WARNING, logger="toolcards.skills"):
        skills = lib.current()
        lib.current()
    assert "csv-cleanup" in [skill.name for skill in skills]
    warnings = [r for r in caplog.records if "csv-cleanup" in r.getMessage()]
    assert len(warnings) == 1 and "last valid version stays in use" in warnings[0].getMessage()


def test_a_check_costs_a_few_stats(skills_dir: Path) -> None:
    for index in range(100):
        write_skill(skills_dir, f"skill-{index:03d}", f"Skill number {index}.")
    lib = library(skills_dir)
    lib.load()
    start = time.perf_counter()
    for _ in range(20):
        lib.current()
    assert (time.perf_counter() - start) / 20 < 0.02


# -- installed packages --------------------------------------------------------------------------


@pytest.fixture
def installed(tmp_path: Path, skills_dir: Path) -> Iterator[Path]:
    """A package on ``sys.path`` offering skill folders under ``toolcards.skills``, found by
    ``importlib.metadata`` as an installed distribution is."""
    site = tmp_path / "site"
    package = site / "acme_skills"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    write_skill(package, "acme-review", "Review a change the Acme way.")
    extra = tmp_path / "extra"
    write_skill(extra, "acme-extra", "An extra skill.")
    (package / "paths.py").write_text(f"EXTRA = {str(extra)!r}\n")
    info = site / "acme_skills-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-skills\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[toolcards.skills]\nacme = acme_skills\nacme-extra = acme_skills.paths:EXTRA\n"
    )
    sys.path.insert(0, str(site))
    forget_installed_skills()
    yield site
    sys.path.remove(str(site))
    sys.modules.pop("acme_skills", None)
    sys.modules.pop("acme_skills.paths", None)
    forget_installed_skills()


def test_installed_packages_offer_skills(installed: Path, skills_dir: Path) -> None:
    card = SkillsTool(paths=[str(skills_dir)])
    ToolFactory([card])
    assert {"acme-review", "acme-extra", "csv-cleanup"} <= {skill.name for skill in card.skills()}
    assert not [
        skill.name
        for skill in SkillsTool(installed=False, paths=[str(skills_dir)]).library.load()
        if skill.name.startswith("acme")
    ]


def test_a_broken_entry_point_is_a_wiring_error(installed: Path) -> None:
    info = installed / "acme_skills-1.0.dist-info" / "entry_points.txt"
    info.write_text("[toolcards.skills]\nacme = acme_skills.nowhere\n")
    forget_installed_skills()
    with pytest.raises(WiringError, match=r"entry point acme \(acme-skills\) = 'acme_skills.nowhere': no such module"):
        ToolFactory([SkillsTool()])
