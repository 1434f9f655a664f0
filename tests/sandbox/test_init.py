"""The package's public door: a sorted ``__all__`` of names that exist; models free of pykka."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from toolcards import sandbox
from toolcards.sandbox import _models as models


def test_all_is_sorted_and_complete() -> None:
    names = list(sandbox.__all__)
    assert names == sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    for name in sandbox.__all__:
        assert getattr(sandbox, name) is not None


def test_models_do_not_import_pykka() -> None:
    tree = ast.parse(Path(models.__file__).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported, "the sweep found no imports at all"
    assert not any(name.split(".")[0] == "pykka" for name in imported)


def test_importing_the_sandbox_loads_no_other_domain_and_no_heavy_dependency() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import sys, toolcards.sandbox; print(*sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = set(out.stdout.split())
    domains = {"knowledge_graph", "mcp", "planning", "search", "team", "vector", "workspace"}
    assert not {f"toolcards.{domain}" for domain in domains} & loaded
    assert not {"numpy", "onnxruntime", "markitdown", "pydantic_ai"} & loaded
