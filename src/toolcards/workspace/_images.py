"""Images sized for a model: :func:`load_image`.

:func:`image_for_model` takes an image's bytes (the workspace card reads them through its
:class:`~toolcards.workspace._tree.Tree`, at most :data:`MAX_IMAGE_BYTES`); :func:`load_image`
reads a host file first. PNG, JPEG, GIF, WebP and BMP are read with Pillow (the ``vision``
extra, imported on first use). An image within ``max_dimension`` is returned as it is, except
BMP, which model APIs refuse; a larger one is scaled down (LANCZOS, JPEG decoded at a reduced
scale first with ``draft()``), turned upright from its EXIF orientation, and encoded as PNG
when it has transparency or a palette (sharp edges and alpha kept), else as JPEG (quality 85).
An animated GIF keeps its first frame. Scaled copies are cached under ``cache_dir/images/``,
keyed by the source bytes' hash and ``max_dimension``, so a changed image is never served
stale. Blocks on disk I/O and Pillow's work.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from toolcards.errors import RetriableError, ToolFailed
from toolcards.fs._atomic_write import atomic_write
from toolcards.workspace._files import read_bytes
from toolcards.workspace._tree import format_size

if TYPE_CHECKING:
    from PIL import Image as PILImage

__all__ = [
    "IMAGE_SUFFIXES",
    "MAX_IMAGE_BYTES",
    "MEDIA_TYPES",
    "image_for_model",
    "is_image",
    "load_image",
    "require_image",
]

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp"})
"""File suffixes (lower case) that :func:`load_image` accepts."""

MEDIA_TYPES = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "GIF": "image/gif",
    "WEBP": "image/webp",
    "BMP": "image/bmp",
}
"""Pillow format name → media type, for every format :func:`load_image` reads."""

MAX_IMAGE_BYTES = 32 * 1024 * 1024
"""Larger image files are not read (a model API would refuse them anyway)."""

TOO_LARGE_HINT = f"Images up to {format_size(MAX_IMAGE_BYTES)} can be viewed; scale it down with a command first."
"""What a refusal of a larger image suggests."""

_JPEG_QUALITY = 85
_CACHE_VERSION = "1"


def is_image(path: PurePath) -> bool:
    """Whether ``path`` has the suffix of an image :func:`load_image` reads (case-insensitive)."""
    return path.suffix.lower() in IMAGE_SUFFIXES


def require_image(path: PurePath, *, shown_as: str) -> None:
    """Refuse ``path`` unless its suffix is one of :data:`IMAGE_SUFFIXES`.

    Raises:
        RetriableError: naming ``shown_as`` and the supported suffixes.
    """
    if not is_image(path):
        kinds = ", ".join(sorted(IMAGE_SUFFIXES))
        raise RetriableError(f"{shown_as!r} is not an image this tool can show (supported: {kinds}).")


def load_image(
    path: Path, cache_dir: Path, max_dimension: int = 1568, *, shown_as: str | None = None
) -> tuple[bytes, str]:
    """:func:`image_for_model` of the image file at ``path`` (a file of the host).

    Raises:
        RetriableError: the file is missing, a directory or not a regular file, larger than
            :data:`MAX_IMAGE_BYTES`, or as :func:`image_for_model`.
        ToolFailed: as :func:`image_for_model`.
    """
    if max_dimension < 1:
        raise ValueError(f"max_dimension must be at least 1, got {max_dimension}")
    name = shown_as or path.name
    require_image(path, shown_as=name)
    return image_for_model(
        read_bytes(path, max_bytes=MAX_IMAGE_BYTES, too_large=TOO_LARGE_HINT), cache_dir, max_dimension, shown_as=name
    )


def image_for_model(data: bytes, cache_dir: Path, max_dimension: int = 1568, *, shown_as: str) -> tuple[bytes, str]:
    """The image ``data`` (of the file ``shown_as``), no larger than ``max_dimension`` on its
    longest side.

    Returns:
        ``(data, media_type)``: the original bytes when the image is small enough (and
        not BMP), else the scaled copy as PNG or JPEG (see the module docstring).

    Raises:
        RetriableError: the content is not a readable image of the supported formats (or is
            too large to decode safely).
        ToolFailed: Pillow is not installed (the message gives the install command).
        ValueError: ``max_dimension`` < 1 (a configuration mistake).
    """
    if max_dimension < 1:
        raise ValueError(f"max_dimension must be at least 1, got {max_dimension}")
    name = shown_as
    key = hashlib.sha256(f"{_CACHE_VERSION}:{max_dimension}:".encode() + data).hexdigest()
    for suffix, media_type in ((".png", "image/png"), (".jpg", "image/jpeg")):
        try:
            return (cache_dir / "images" / f"{key}{suffix}").read_bytes(), media_type
        except OSError:
            pass
    try:
        from PIL import Image
    except ImportError as exc:
        raise ToolFailed(
            "Showing images needs Pillow, which is not installed: pip install 'toolcards[vision]'."
        ) from exc
    try:
        image = Image.open(io.BytesIO(data))
        image_format = image.format or ""
        if image_format not in MEDIA_TYPES:
            raise RetriableError(
                f"{name!r} is a {image_format or 'unknown'} image; supported are PNG, JPEG, GIF, WebP and BMP."
            )
        if max(image.size) <= max_dimension and image_format != "BMP":
            return data, MEDIA_TYPES[image_format]
        out, media_type = _scaled(image, max_dimension)
    except RetriableError:
        raise
    except (Image.DecompressionBombError, MemoryError) as exc:
        raise RetriableError(f"{name!r} is too large to decode safely ({exc}).") from exc
    except (OSError, ValueError, SyntaxError) as exc:
        # Pillow reports unreadable or truncated data as UnidentifiedImageError (an
        # OSError), OSError, ValueError or SyntaxError depending on the plugin.
        raise RetriableError(
            f"{name!r} is not a readable image ({exc}). Read it as text if it is not an image."
        ) from exc
    suffix = ".png" if media_type == "image/png" else ".jpg"
    # A cache that cannot be written only costs a rescale next time.
    with contextlib.suppress(OSError):
        atomic_write(cache_dir / "images" / f"{key}{suffix}", out)
    return out, media_type


def _scaled(image: PILImage.Image, max_dimension: int) -> tuple[bytes, str]:
    """Upright, scaled (never enlarged) and re-encoded copy of ``image``: (bytes, media type)."""
    from PIL import Image, ImageOps

    width, height = image.size
    scale = min(1.0, max_dimension / max(width, height))
    stored_target = (max(1, round(width * scale)), max(1, round(height * scale)))
    if scale < 1 and image.format == "JPEG":
        # Lets the decoder skip detail: it returns the image at the smallest power-of-two
        # reduction that is still at least the target size.
        image.draft(None, stored_target)
    rotated = image.getexif().get(0x0112, 1) in (5, 6, 7, 8)
    transparent = image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info
    as_png = transparent or image.mode in ("P", "1")
    if transparent:
        image = image.convert("LA" if image.mode in ("LA", "La") else "RGBA")
    elif image.mode == "P":
        image = image.convert("RGB")
    elif image.mode == "1":
        image = image.convert("L")
    elif image.mode not in ("RGB", "L"):
        image = image.convert("RGB")
    image = ImageOps.exif_transpose(image)
    target = stored_target[::-1] if rotated else stored_target
    if image.size != target:
        image = image.resize(target, Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    if as_png:
        image.save(buffer, "PNG")
        return buffer.getvalue(), "image/png"
    image.save(buffer, "JPEG", quality=_JPEG_QUALITY)
    return buffer.getvalue(), "image/jpeg"
