"""The package's public door."""

from __future__ import annotations

import subprocess
import sys

import toolcards.store


def test_all_is_sorted_and_every_name_resolves() -> None:
    names = toolcards.store.__all__

    assert names == sorted(names, key=lambda name: (not name.isupper(), name))
    assert all(hasattr(toolcards.store, name) for name in names)


def test_importing_the_store_loads_no_domain_and_no_heavy_dependency() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import sys, toolcards.store; print(*sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = set(out.stdout.split())

    domains = {"knowledge_graph", "mcp", "planning", "sandbox", "search", "team", "vector", "workspace"}
    assert not {f"toolcards.{domain}" for domain in domains} & loaded
    assert not {"numpy", "onnxruntime", "markitdown", "mcp"} & loaded
