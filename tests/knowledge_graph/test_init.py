"""The package's public door, and that keyword-only use needs no embedding client."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import toolcards.knowledge_graph as package
from toolcards.knowledge_graph import _actor as actor
from toolcards.knowledge_graph import _batch as batch
from toolcards.knowledge_graph import _models as models
from toolcards.knowledge_graph import _render as render
from toolcards.knowledge_graph import _search as search


@pytest.mark.parametrize("module", [package, actor, batch, models, render, search])
def test_all_is_sorted_and_every_name_exists(module: object) -> None:
    names = module.__all__  # type: ignore[attr-defined]
    # isort style, as ruff's RUF022 checks it: CONSTANTS, then Classes, then functions.
    assert names == sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    for name in names:
        assert hasattr(module, name), name


def test_package_exports_the_public_models_and_the_proxy() -> None:
    public = {name for name in dir(models) if not name.startswith("_")} & set(models.__all__)
    assert public - {"RelationKey", "SearchMode"} <= set(package.__all__)
    assert "KnowledgeGraphProxy" in package.__all__
    assert "KnowledgeGraphActor" not in package.__all__, "the actor is machinery behind the proxy"


@pytest.mark.slow
def test_keyword_only_use_loads_no_embedding_client() -> None:
    script = textwrap.dedent(
        """
        import sys
        import pykka
        from toolcards.knowledge_graph import EntityCreate
        from toolcards.knowledge_graph._actor import KnowledgeGraphActor
        from toolcards.store import MemoryStore

        kg = KnowledgeGraphActor.start("t", MemoryStore()).proxy()
        kg.update("a", create_entities=[EntityCreate(name="Alice", entity_type="person")]).get()
        result = kg.search("alice", mode="hybrid", find_paths=True, include_neighbors=True).get()
        assert result.mode == "keyword" and result.hits, result
        kg.summary().get()
        pykka.ActorRegistry.stop_all()
        heavy = sorted(m for m in ("openai", "onnxruntime", "tokenizers", "rapidfuzz") if m in sys.modules)
        print(heavy)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
