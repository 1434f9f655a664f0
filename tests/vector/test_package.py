"""The package's public door: its exports, and that importing it loads no heavy dependency."""

from __future__ import annotations

import subprocess
import sys

import toolcards.vector


def test_exports_are_sorted_and_complete() -> None:
    exported = toolcards.vector.__all__
    assert exported == sorted(exported)
    assert set(exported) == {
        "EmbeddingKeeper",
        "EmbeddingParam",
        "EmbeddingService",
        "EmbeddingUnavailable",
        "GraceElapsed",
        "TextVector",
        "TextVectors",
        "TextsEmbedded",
        "VectorIndex",
        "get_embedding_service",
    }


def test_import_loads_no_numpy_onnxruntime_or_openai() -> None:
    code = "import sys, toolcards.vector; print(*sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(result.stdout.split())
    assert not {"numpy", "onnxruntime", "openai", "tokenizers"} & loaded
