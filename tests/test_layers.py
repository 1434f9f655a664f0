"""Layering, tested: prose does not go red when someone adds an import.

* ``import toolcards`` loads no domain, no adapter and no heavy dependency; not even
  pydantic or pykka, which load when a name that needs them is first used (``python -m
  bench import`` measures the cost);
* ``from toolcards import ToolCard, ToolFactory`` loads pydantic and the core, but no pykka,
  no domain and no adapter;
* importing one domain package loads no other domain;
* an ``ast`` sweep over every module: no domain imports another domain, the core and
  actor layers import no domain and no adapter, and adapters import no domain (cards reach
  them as configuration, through the core's registry).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "toolcards"
DOMAINS = sorted(
    p.name for p in SRC.iterdir() if p.is_dir() and (p / "_tool.py").exists() and p.name not in {"core", "actors"}
)
ADAPTERS = {"pydantic_ai", "server", "cli", "dashboard"}
HEAVY = {
    "pydantic_ai",
    "mcp",
    "numpy",
    "openai",
    "markitdown",
    "PIL",
    "tavily",
    "onnxruntime",
    "fastmcp",
    "opentelemetry",
    "starlette",
    "uvicorn",
}


def imported_modules(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}; import sys; print(*sys.modules)"], capture_output=True, text=True, check=True
    )
    return set(out.stdout.split())


def test_the_sweep_sees_the_tree() -> None:
    assert DOMAINS, "no domain packages found: the layer tests would pass vacuously"
    assert {"core", "actors", "fs"} <= {p.name for p in SRC.iterdir() if p.is_dir()}


def test_import_toolcards_is_light() -> None:
    loaded = imported_modules("import toolcards")
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}
    assert not {m for m in loaded if m.startswith("toolcards.") and m.split(".")[1] in set(DOMAINS) | ADAPTERS}


def test_import_toolcards_defers_every_dependency() -> None:
    loaded = imported_modules("import toolcards") - imported_modules("pass")
    assert not {m for m in loaded if m.split(".")[0] in {"pydantic", "pydantic_core", "pykka", "annotated_types"}}
    assert "importlib.metadata" not in loaded  # __version__ is read when asked
    assert {m for m in loaded if m.startswith("toolcards.")} == {"toolcards.errors", "toolcards._lazy_names"}


def test_the_first_card_loads_the_core_only() -> None:
    loaded = imported_modules("from toolcards import ToolCard, ToolFactory")
    assert {"pydantic", "toolcards.core._card", "toolcards.core._factory"} <= loaded
    assert not {m for m in loaded if m.split(".")[0] in HEAVY | {"pykka"}}
    assert not {
        m for m in loaded if m.startswith("toolcards.") and m.split(".")[1] not in {"core", "errors", "_lazy_names"}
    }


def test_lazy_names_resolve_in_a_fresh_interpreter() -> None:
    code = (
        "import toolcards, toolcards.core, toolcards.actors\n"
        "for module in (toolcards, toolcards.core, toolcards.actors):\n"
        "    assert set(module.__all__) <= set(dir(module)), module\n"
        "    for name in module.__all__:\n"
        "        getattr(module, name)\n"
        "assert toolcards.__version__\n"
        "assert toolcards.ToolCard is toolcards.core._card.ToolCard"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_domain_loads_no_other_domain(domain: str) -> None:
    loaded = imported_modules(f"import toolcards.{domain}")
    others = {f"toolcards.{other}" for other in DOMAINS if other != domain}
    assert not others & loaded
    assert not {f"toolcards.{adapter}" for adapter in ADAPTERS} & loaded


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _package_of(path: Path) -> str:
    return path.relative_to(SRC).parts[0] if len(path.relative_to(SRC).parts) > 1 else ""


SHARED_INFRA = {"store", "vector"}

# Every import against the layer picture, with where its reason is written down
# (docs/architecture.md, "Decisions"). Nothing else may point up.
EXCEPTIONS = {
    ("core/_factory.py", "toolcards.pydantic_ai._toolset"): "ToolFactory.toolset(): a lazy convenience import",
}


def test_ast_sweep_over_every_module() -> None:
    modules = list(SRC.rglob("*.py"))
    assert len(modules) > 20
    problems = []
    for path in modules:
        package = _package_of(path)
        where = str(path.relative_to(SRC))
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] != "toolcards" or len(parts) < 2 or (where, name) in EXCEPTIONS:
                continue
            target = parts[1]
            if package in DOMAINS and target in DOMAINS and target != package:
                problems.append(f"{where} imports domain {target}")
            if package in {"core", "actors"} and target in {*DOMAINS, *ADAPTERS, *SHARED_INFRA}:
                problems.append(f"{where} imports {name}")
            if package in SHARED_INFRA and target in {*DOMAINS, *ADAPTERS}:
                problems.append(f"{where}: shared infrastructure imports {name}")
            if package == "vector" and target == "store":
                problems.append(f"{where}: vectors sit below the store, which keeps them")
            if package in ADAPTERS and target in DOMAINS:
                problems.append(f"{where}: an adapter imports domain {target}")
            if package == "actors" and target == "core":
                problems.append(f"{where}: the actor runtime sits below core")
            if package in {"core", "actors"} and target == "fs":
                problems.append(f"{where}: the file-system room sits beside the core, not below it")
            if package == "fs" and target not in {"fs", "errors", "core"}:
                problems.append(f"{where}: the file-system room imports {name}")
    assert not problems, problems


def test_every_exception_is_still_needed_and_written_down() -> None:
    architecture = (SRC.parents[1] / "docs" / "architecture.md").read_text()
    decisions = architecture[architecture.index("## Decisions") :]
    for where, name in EXCEPTIONS:
        assert name in _imports(SRC / where), f"{where} no longer imports {name}: drop the exception"
        assert f"`{name}`" in decisions, f"{where} imports {name} against the layers without a decision"
