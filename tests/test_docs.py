"""The README and the docs site say what the code does.

* Every ```python block of ``README.md`` and ``docs/**/*.md`` runs alone, in a fresh
  interpreter and scratch directory, offline (``scripts/run_doc_blocks.py``); a block that
  cannot run here is marked ``<!-- no-run: why -->`` and reported as skipped.
* Every ``toolcards <command> --option`` the pages show exists.
* The configuration reference the site generates (``scripts/config_reference.py``) covers
  every card kind, field and tool, and every setting it lists has a description.
* The README stays short and lists every extra ``pyproject.toml`` defines.

The site itself is built by ``make test`` (``mkdocs build --strict``).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import tomllib
import typing
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel

from toolcards import BaseToolParam
from toolcards.cli import build_parser
from toolcards.core._registry import card_class

REPO = Path(__file__).resolve().parents[1]
README_MAX_LINES = 400


def _script(name: str) -> ModuleType:
    """A module of ``scripts/``, loaded once per process (the packaging tests load it too)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


doc_blocks = _script("run_doc_blocks")
reference = _script("config_reference")
BLOCKS = doc_blocks.all_blocks()
NO_RUN_MAX = 3
"""Blocks marked no-run stay rare: a page whose samples cannot run is a page nobody checks."""


# -- the python blocks --------------------------------------------------------------------------


def test_the_pages_have_blocks_and_few_are_marked_no_run() -> None:
    pages = {block.page for block in BLOCKS}
    assert "README.md" in pages and len(pages) >= 10
    assert len(BLOCKS) >= 20
    marked = [block for block in BLOCKS if block.no_run is not None]
    assert len(marked) <= NO_RUN_MAX, [block.where for block in marked]
    assert all(block.no_run for block in marked), "a no-run marker must say why"


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[block.where for block in BLOCKS])
def test_python_block_runs_alone(block: object) -> None:
    assert isinstance(block, doc_blocks.Block)
    if block.no_run is not None:
        pytest.skip(f"marked no-run: {block.no_run}")
    result = doc_blocks.run(block)
    assert result.returncode == 0, doc_blocks.failure_report(block, result)


def test_a_failing_block_is_reported_with_its_page_line_and_output() -> None:
    [block] = doc_blocks.blocks_of("text\n\n```python\nprint('before')\nraise SystemExit('boom')\n```\n", "page.md")
    result = doc_blocks.run(block)
    report = doc_blocks.failure_report(block, result)
    assert report.startswith("page.md:3: the block exited 1\n")
    assert "before" in report and "boom" in report


def test_a_block_runs_in_its_own_scratch_directory_without_api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-samples")
    code = (
        "import os, pathlib\n"
        "root = pathlib.Path(os.environ['TOOLCARDS_WORKSPACES_ROOT'])\n"
        "assert 'OPENAI_API_KEY' not in os.environ\n"
        "assert root.parent == pathlib.Path.cwd().parent, (root, pathlib.Path.cwd())\n"
        "assert pathlib.Path(os.environ['TOOLCARDS_STORE']).parent == root.parent\n"
        "assert not (pathlib.Path.cwd() / 'marker').exists()\n"
        "(pathlib.Path.cwd() / 'marker').touch()\n"
    )
    [block] = doc_blocks.blocks_of(f"```python\n{code}```\n", "page.md")
    for _ in range(2):  # the second run does not see the first one's file
        result = doc_blocks.run(block)
        assert result.returncode == 0, doc_blocks.failure_report(block, result)


# -- the shell commands -------------------------------------------------------------------------

# `toolcards <command> ...` in a shell block or a code span, up to a comment or the span's end.
COMMAND_LINE = re.compile(r"\btoolcards ([a-z][a-z-]*)([^`#\n|]*)")
SHELL_BLOCK = re.compile(r"^```(?:bash|sh|shell)\n(.*?)^```", flags=re.S | re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _command_lines() -> list[tuple[str, str, str]]:
    """``(page, command, rest of the line)`` for every toolcards command the pages show."""
    found = []
    for path in doc_blocks.pages():
        page = str(path.relative_to(REPO))
        text = path.read_text(encoding="utf-8")
        snippets = [line for block in SHELL_BLOCK.findall(text) for line in block.splitlines()]
        snippets += [span for span in CODE_SPAN.findall(text) if span.startswith("toolcards ")]
        for snippet in snippets:
            found += [(page, match[1], match[2]) for match in COMMAND_LINE.finditer(snippet.split(" # ")[0])]
    return found


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_toolcards_command_the_pages_show_exists_with_its_options() -> None:
    commands = _subcommands()
    shown = _command_lines()
    assert len(shown) >= 20
    problems = []
    for page, command, rest in shown:
        if command not in commands:
            problems.append(f"{page}: toolcards {command} is not a command ({', '.join(commands)})")
            continue
        options = {option for action in commands[command]._actions for option in action.option_strings}
        problems += [
            f"{page}: toolcards {command} has no option {option}"
            for option in re.findall(r"(?<![\w-])--[a-z][a-z-]*", rest)
            if option not in options
        ]
    assert not problems, "\n".join(problems)


def test_the_command_line_page_introduces_every_command() -> None:
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    table = page.split("\n\n")[2]  # the table under the first sentence
    missing = [name for name in _subcommands() if f"| `toolcards {name}` |" not in table]
    assert not missing, f"add a row for each to the table at the top of docs/cli.md: {missing}"


# -- the generated reference ----------------------------------------------------------------------


def _capability_fields(cls: type[BaseModel]) -> set[str]:
    return {
        name
        for name, info in cls.model_fields.items()
        if any(isinstance(arg, type) and issubclass(arg, BaseToolParam) for arg in typing.get_args(info.annotation))
    }


def test_the_reference_covers_every_card_kind_field_and_tool() -> None:
    cards = reference.section("cards")
    for kind in reference.published_kinds():
        cls = card_class(kind)
        assert f"### `{kind}`: {cls.__name__}" in cards
        part = cards.split(f"### `{kind}`: ", 1)[1].split("\n### ", 1)[0]
        for name in cls.model_fields:
            assert f"`{name}`" in part or name in _capability_fields(cls), f"{kind}: field {name}"
        for capability in cls().capabilities():
            assert f"| `{capability.name}` |" in part, f"{kind}: tool {capability.name}"
        assert f"- kind: {kind}\n" in part  # its YAML
    for name in BaseToolParam.model_fields:
        assert f"| `{name}` |" in reference.section("capability-options")


def test_the_reference_covers_the_serve_config_tasks_and_the_command_line() -> None:
    from toolcards.planning._models import Task, TaskStatus
    from toolcards.server._config import ServeConfig

    for name in ServeConfig.model_fields:
        assert f"| `{name}` |" in reference.section("serve-config")
    tasks = reference.section("tasks")
    assert all(f"| `{name}` |" in tasks for name in Task.model_fields)
    assert all(f"`{status}`" in tasks for status in typing.get_args(TaskStatus))
    cli = reference.section("cli")
    for command, parser in _subcommands().items():
        assert f"### `toolcards {command}`" in cli
        options = [o for a in parser._actions if not isinstance(a, argparse._HelpAction) for o in a.option_strings]
        assert all(f"`{option}`" in cli for option in options), command


def _documented_models() -> list[type[BaseModel]]:
    from toolcards.planning._models import Task
    from toolcards.server._config import ServeConfig

    models: list[type[BaseModel]] = [card_class(kind) for kind in reference.published_kinds()]
    models += [BaseToolParam, ServeConfig, Task, *reference.nested_models()]
    for cls in [card_class(kind) for kind in reference.published_kinds()]:
        for field in _capability_fields(cls):
            models += [
                arg
                for arg in typing.get_args(cls.model_fields[field].annotation)
                if isinstance(arg, type) and issubclass(arg, BaseToolParam)
            ]
    return list(dict.fromkeys(models))


def test_every_setting_the_reference_lists_has_a_description() -> None:
    models = _documented_models()
    assert len(models) >= 20
    cards = {card_class(kind) for kind in reference.published_kinds()}
    missing = []
    for model in models:
        docs = reference.field_docs(model)
        skip = _capability_fields(model) if model in cards else set()
        if issubclass(model, BaseToolParam) and model is not BaseToolParam:
            skip |= set(BaseToolParam.model_fields)  # documented once, on BaseToolParam
        missing += [f"{model.__qualname__}.{name}" for name, text in docs.items() if name not in skip and not text]
    assert not missing, f"give these fields a docstring (the reference prints it): {missing}"


def test_the_reference_section_names_are_checked() -> None:
    with pytest.raises(KeyError, match="no reference section 'nope'"):
        reference.section("nope")
    markers = {
        match
        for path in doc_blocks.pages()
        for match in re.findall(r"^<!-- reference: ([a-z-]+) -->$", path.read_text(encoding="utf-8"), flags=re.M)
    }
    assert markers == set(reference.SECTIONS)  # every section is published, every marker known


# -- the README -----------------------------------------------------------------------------------


def test_the_readme_is_read_in_ten_minutes() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move details to docs/"


def test_the_readme_lists_every_extra() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([a-z]+)` \|", readme.split("## Install", 1)[1], flags=re.M))
    assert set(extras) <= listed, f"extras missing from the README's table: {set(extras) - listed}"
