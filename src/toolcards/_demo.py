"""The demo: a team of three shares a board, a graph and a workspace, and ships a small task.

A lead plans and delegates; two builders pick up their tasks, write files, run them in the
sandbox, record what they learned and complete their tasks, handing work over by message.
With a real model (``--model`` or ``OPENAI_API_KEY``) an LLM drives every member; without,
scripted pydantic-ai ``FunctionModel``s drive exactly the same tools, and the demo says so.

This module is an application of toolcards, like user code: it composes the domain cards
through config (``RoleProfile.cards``) and the team runtime. State persists under the
workspaces root, so a second run shows the board surviving.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from toolcards.core._events import ToolExecutionRecord

__all__ = ["DEFAULT_REAL_MODEL", "TEAM_ID", "run_demo"]

TEAM_ID = "demo"
DEFAULT_REAL_MODEL = "openai:gpt-4o-mini"

SLUGIFY = '''"""Turn titles into URL slugs."""

import re
import unicodedata


def slugify(text: str) -> str:
    """Lowercase ASCII words joined by hyphens: "Hello, World!" -> "hello-world"."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
'''

TEST_SLUGIFY = """from slugify import slugify


def test_words_are_joined_by_hyphens():
    assert slugify("Hello, World!") == "hello-world"


def test_accents_are_folded():
    assert slugify("Crème brûlée") == "creme-brulee"


def test_nothing_left_gives_empty():
    assert slugify("!!!") == ""


if __name__ == "__main__":  # runs without pytest, which a user's install does not have
    tests = [test for name, test in sorted(globals().items()) if name.startswith("test_")]
    for test in tests:
        test()
    print(f"{len(tests)} tests pass")
"""

LEAD_INSTRUCTIONS = (
    "You lead a team of two builders, Builder-1 (code) and Builder-2 (tests). For a request: create one "
    "task per builder with update_planning (owners @Builder-1 and @Builder-2), then send_message to "
    "Builder-1 with its task. Builder-1 hands over to Builder-2 when done."
)
BUILDER_INSTRUCTIONS = (
    "You are a builder. When told about a task: mark your task started with update_planning, read then "
    "write the files in the workspace, run them with exec_command, record what you learned with "
    "update_graph, mark the task completed with a short output, and send_message to whoever is next."
)


# -- the scripted stand-ins for LLMs --------------------------------------------------------------


def _script(steps: Callable[[str, str, list[Any]], list[tuple[str, dict[str, Any]]]]) -> Any:
    """A FunctionModel body running ``steps(prompt, plan, returns)`` one tool call per request.

    A step counts as done once its tool answered; a read of a missing file counts too, and a
    refused ``update_graph`` create is retried as an update (the second run finds the
    entities there).
    """
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models.function import AgentInfo

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompted = [
            i
            for i, m in enumerate(messages)
            if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)
        ]
        # The run's first request carries its id; a teammate's message steered into the run
        # later is a user prompt too, but not the one the run is about.
        run_ids = [m.run_id for m in messages if m.run_id]
        start = next((i for i in prompted if run_ids and messages[i].run_id == run_ids[-1]), prompted[-1])
        prompt = next(str(p.content) for p in messages[start].parts if isinstance(p, UserPromptPart))
        returns = [p for m in messages[start + 1 :] for p in m.parts if isinstance(p, ToolReturnPart)]
        plan = info.instructions or ""
        todo = steps(prompt, plan, returns)
        done = [r for r in returns if r.outcome != "retried" or r.tool_name == "workspace_read"]
        last = returns[-1] if returns else None
        if last is not None and last.outcome == "retried" and last.tool_name == "update_graph":
            _, args = todo[len(done)]
            return ModelResponse(parts=[ToolCallPart("update_graph", _as_graph_update(args))])
        if len(done) < len(todo):
            name, args = todo[len(done)]
            return ModelResponse(parts=[ToolCallPart(name, args)])
        return ModelResponse(parts=[TextPart("Done." if todo else "Noted.")])

    return respond


def _as_graph_update(create: dict[str, Any]) -> dict[str, Any]:
    entities = create.get("create_entities", [])
    return {
        "update_entities": [
            {"name": entity["name"], "add_observations": entity["observations"]}
            for entity in entities
            if entity.get("observations")
        ]
    }


def _task_id(plan: str, words: str) -> int:
    ids = [int(m) for m in re.findall(rf"#(\d+) \[\w+\] {re.escape(words)}", plan)]
    return max(ids) if ids else 0


def _lead_steps(prompt: str, plan: str, returns: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    if not prompt.startswith("Message from user"):
        return []
    return [
        (
            "update_planning",
            {
                "create_tasks": [
                    {"description": "Write slugify() in slugify.py", "owner": "@Builder-1"},
                    {"description": "Test slugify() in test_slugify.py", "owner": "@Builder-2"},
                ]
            },
        ),
        ("send_message", {"to": "Builder-1", "text": "Please write slugify() in slugify.py, then hand over."}),
    ]


def _builder_steps(prompt: str, plan: str, returns: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    if prompt.startswith("Message from @Lead"):
        task = _task_id(plan, "Write slugify()")
        runs = [str(r.content) for r in returns if r.tool_name == "exec_command"]
        works = bool(runs) and "hello-world" in runs[-1]
        return [
            ("update_planning", {"update_tasks": [{"id": task, "status": "in_progress"}]}),
            ("workspace_read", {"path": "slugify.py"}),
            ("workspace_write", {"path": "slugify.py", "content": SLUGIFY}),
            ("exec_command", {"cmd": "python -c 'from slugify import slugify; print(slugify(\"Hello, World!\"))'"}),
            (
                "update_graph",
                {
                    "create_entities": [
                        {
                            "name": "slugify.py",
                            "entity_type": "module",
                            "description": "Turns titles into URL slugs",
                            "observations": ["NFKD-folds accents before lowercasing"],
                            "is_root": True,
                        }
                    ]
                },
            ),
            (
                "update_planning",
                {
                    "update_tasks": [
                        {
                            "id": task,
                            "status": "completed",
                            "output": "slugify.py works" if works else "smoke run failed",
                        }
                    ]
                },
            ),
            ("send_message", {"to": "Builder-2", "text": "slugify.py is ready: please write and run its tests."}),
        ]
    if prompt.startswith("Message from @Builder-1"):
        task = _task_id(plan, "Test slugify()")
        # Report what the sandbox said, not what was hoped for.
        runs = [str(r.content) for r in returns if r.tool_name == "exec_command"]
        passed = bool(runs) and "exit code: 0" in runs[-1]
        verdict = "3 tests pass" if passed else "tests fail: see the sandbox output"
        return [
            ("update_planning", {"update_tasks": [{"id": task, "status": "in_progress"}]}),
            ("workspace_read", {"path": "test_slugify.py"}),
            ("workspace_write", {"path": "test_slugify.py", "content": TEST_SLUGIFY}),
            ("exec_command", {"cmd": "python test_slugify.py"}),
            (
                "update_graph",
                {
                    "create_entities": [
                        {
                            "name": "test_slugify.py",
                            "entity_type": "test",
                            "observations": [f"{verdict} (sandbox run)"],
                        }
                    ],
                    "create_relations": [
                        {"from_entity": "test_slugify.py", "to_entity": "slugify.py", "relation_type": "tests"}
                    ],
                },
            ),
            (
                "update_planning",
                {"update_tasks": [{"id": task, "status": "completed" if passed else "in_progress", "output": verdict}]},
            ),
            ("send_message", {"to": "Lead", "text": f"slugify() tests: {verdict}."}),
        ]
    return []


# -- the run ----------------------------------------------------------------------------------------


def _cards(*kinds: str) -> list[dict[str, Any]]:
    config: dict[str, dict[str, Any]] = {
        "planning": {"kind": "planning"},
        "knowledge_graph": {"kind": "knowledge_graph"},
        "workspace": {"kind": "workspace"},
        "exec": {"kind": "exec", "mode": "auto", "timeout_s": 60},
        "messaging": {"kind": "messaging"},
    }
    return [config[kind] for kind in kinds]


class _Printer:
    """Prints the team's events as they happen (called on the orchestrator's thread)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.lock = threading.Lock()

    def __call__(self, seq: int, event: Any) -> None:
        from toolcards.team import TeamMessage

        line = None
        if isinstance(event, ToolExecutionRecord) and event.channel == "tool_call":
            status = "ok" if event.success else f"refused: {(event.error or '').splitlines()[0][:90]}"
            line = f"  {event.agent or '?':<11} {event.tool:<17} {status}"
        elif isinstance(event, TeamMessage):
            line = f"  {event.sender:<11} → {event.recipient}: {event.text}"
        if line is not None:
            with self.lock:
                print(line, file=self.out, flush=True)


def run_demo(model: str | None = None, *, out: TextIO | None = None, timeout_s: float = 180.0) -> int:
    """Run the demo team once; returns a process exit code (0 when the team finished).

    Args:
        model: A pydantic-ai model string for every member. ``None`` uses
            ``DEFAULT_REAL_MODEL`` when ``OPENAI_API_KEY`` is set, scripted models otherwise.
        out: Where to print (default stdout).
        timeout_s: How long to wait for the team to finish.
    """
    from pydantic_ai.models.function import FunctionModel

    from toolcards.actors import ActorSystem
    from toolcards.fs._locations import workspace_dir
    from toolcards.store._journal import store_journals
    from toolcards.team import RoleProfile, TeamRuntime
    from toolcards.workspace import stop_workspace_actors

    stream = out or sys.stdout
    if model is None and os.environ.get("OPENAI_API_KEY"):
        model = DEFAULT_REAL_MODEL
    scripted = model is None
    if scripted:
        print("No model given and OPENAI_API_KEY is not set: scripted models (pydantic-ai FunctionModel)", file=stream)
        print("drive the same tools an LLM would. Pass --model or set OPENAI_API_KEY for a real one.\n", file=stream)
    else:
        print(f"Every member runs {model}.\n", file=stream)
    models = {
        "scripted-lead": lambda profile: FunctionModel(_script(_lead_steps)),
        "scripted-builder": lambda profile: FunctionModel(_script(_builder_steps)),
    }
    with ActorSystem(journal=store_journals()) as system:
        team = TeamRuntime(system.team(TEAM_ID), models=models)
        team.register_profile(
            RoleProfile(
                role="lead",
                description="Plans the work and delegates it.",
                model="scripted-lead" if scripted else str(model),
                instructions=LEAD_INSTRUCTIONS,
                cards=_cards("planning", "knowledge_graph", "messaging"),
                hireable=False,
            )
        )
        team.register_profile(
            RoleProfile(
                role="builder",
                description="Writes code and tests.",
                model="scripted-builder" if scripted else str(model),
                instructions=BUILDER_INSTRUCTIONS,
                cards=_cards("planning", "knowledge_graph", "workspace", "exec", "messaging"),
            )
        )
        unsubscribe = team.team.subscribe(_Printer(stream))
        for role, name in (("lead", "Lead"), ("builder", "Builder-1"), ("builder", "Builder-2")):
            team.hire(role, name)
        print(f"Team {TEAM_ID!r}: {', '.join(m.handle for m in team.roster())}\n", file=stream)
        try:
            print(f"  Lead        answered: {team.ask('Lead', 'Ship a slugify() function with tests.')}", file=stream)
            team.wait_idle(timeout=timeout_s)
        except TimeoutError:
            print(f"The team did not finish within {timeout_s:g} s.", file=stream)
            return 1
        finally:
            unsubscribe()
        lead = team.commands("Lead")
        print("\n" + lead.dispatch("/get_planning"), file=stream)
        print("\nWhat the finished tasks report:\n" + lead.dispatch("/search_planning status=completed"), file=stream)
        print("\n" + lead.dispatch("/get_graph"), file=stream)
        tree = workspace_dir(TEAM_ID)
        files: Sequence[Path] = sorted(p for p in tree.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        print(f"\nFiles in {tree}:", file=stream)
        for path in files:
            print(f"  {path.relative_to(tree)} ({path.stat().st_size} bytes)", file=stream)
        team.stop()
    stop_workspace_actors()
    print("\nState persists: run the demo again and the board keeps these tasks.", file=stream)
    return 0
