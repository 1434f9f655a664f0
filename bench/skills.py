"""Benchmark of the skills card: what its menu costs a model, and what binding and rendering cost.

``run()`` writes 100 skills in the Agent Skills layout into a temporary folder (descriptions of
110 to 220 characters, written as skill authors write them: what it does, then when to use
it), and measures:

* **menu tokens**: the ``skill_menu`` section a model reads before every request, in o200k
  tokens (needs the ``dev`` extra; skipped without it). Target: 1,500 for 100 skills.
* **bind**: a new ``SkillsTool`` bound by a ``ToolFactory``, every ``SKILL.md`` parsed (the
  process's parse cache emptied first, as at a process's first bind). Target: 20 ms.
* **bind again**: the same with the files already parsed once in the process (a server binds
  fresh cards for each session).
* **menu render**: one render with nothing changed: a ``stat`` per skill and the cached text.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from pathlib import Path

from bench.timing import Case, measure
from toolcards import ToolFactory
from toolcards.skills import SkillsTool
from toolcards.skills import _library as skill_library

__all__ = ["SKILLS", "run", "write_skills"]

SKILLS = 100
_TASKS = (
    ("Draft", "release notes from merged changes", "a release is being prepared"),
    ("Review", "a pull request for security and style problems", "a change is ready for review"),
    ("Clean", "a CSV export: headers, dates, empty rows", "a spreadsheet export must be analysed"),
    ("Write", "a blameless incident review with a timeline and actions", "an outage or near miss is over"),
    ("Plan", "the deprecation of an API endpoint", "an endpoint must be removed or renamed"),
    ("Summarise", "a long document into key decisions and open questions", "asked for a brief"),
    ("Prepare", "a customer onboarding checklist", "a new customer signs"),
    ("Estimate", "the effort of a feature from its description", "a roadmap is being planned"),
    ("Translate", "user-facing strings and keep placeholders intact", "a release ships in another language"),
    ("Triage", "new bug reports by severity and component", "the bug queue has grown"),
)


def write_skills(root: Path, count: int = SKILLS) -> None:
    """``count`` skill folders in ``root``."""
    for index in range(count):
        verb, what, when = _TASKS[index % len(_TASKS)]
        name = f"{verb.lower()}-{index:03d}"
        description = f"{verb} {what}, following the team's conventions for area {index}. Use when {when}" + (
            ", or when a teammate asks for help with it." if index % 2 else "."
        )
        folder = root / name
        folder.mkdir()
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {json.dumps(description)}\nlicense: MIT\n---\n# {verb}\n\n"
            + "\n".join(f"{step}. Step {step} of the procedure, with its checks." for step in range(1, 21))
            + "\n"
        )
        (folder / "reference.md").write_text("Details.\n")


def run() -> list[Case]:
    """Measure the menu's size and the bind and render times; takes a few seconds."""
    rows: list[Case] = []
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        write_skills(root)

        def bind() -> SkillsTool:
            card = SkillsTool(paths=[str(root)], installed=False)
            ToolFactory([card])
            return card

        def cold_bind() -> None:
            skill_library._parsed.clear()
            bind()

        card = bind()
        menu = card.show_menu() or ""
        if importlib.util.find_spec("tiktoken") and importlib.util.find_spec("bpe_openai"):
            from bench.tokens import count_tokens

            tokens = count_tokens(menu)
            rows.append(
                Case(
                    f"menu of {SKILLS} skills",
                    float(tokens),
                    f"o200k; {tokens / SKILLS:.1f} a skill; {len(menu):,} characters; target: 1,500",
                    unit="tokens",
                    target=1500.0,
                )
            )
        else:
            rows.append(Case.skipped(f"menu of {SKILLS} skills", "the o200k encoding needs the dev extra"))
        rows.append(
            Case.timed(
                f"bind a SkillsTool of {SKILLS} skills",
                measure(cold_bind, repeat=30, warmup=3),
                "every SKILL.md read and parsed",
                target=20.0,
            )
        )
        rows.append(
            Case.timed(
                f"bind again, {SKILLS} skills already parsed", measure(bind, repeat=30, warmup=3), "a stat per skill"
            )
        )
        rows.append(
            Case.timed(
                "menu render, nothing changed",
                measure(card.show_menu, repeat=200, warmup=10),
                f"{SKILLS} stats and the cached text",
            )
        )
    return rows


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("skills", case) for case in run()), end="")
