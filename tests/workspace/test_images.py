"""Images scaled for a model, and the cache of scaled copies."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace import _images as images
from toolcards.workspace._images import is_image, load_image

Image = pytest.importorskip("PIL.Image")


def decoded(data: bytes) -> tuple[str, tuple[int, int], str]:
    with Image.open(io.BytesIO(data)) as image:
        return image.format, image.size, image.mode


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def test_a_large_image_with_alpha_becomes_a_scaled_png(tmp_path: Path, cache: Path) -> None:
    Image.new("RGBA", (3000, 1000), (255, 0, 0, 128)).save(tmp_path / "wide.png")
    data, media_type = load_image(tmp_path / "wide.png", cache)
    assert media_type == "image/png"
    image_format, size, mode = decoded(data)
    assert (image_format, size, mode) == ("PNG", (1568, 523), "RGBA")


def test_a_large_photo_becomes_a_scaled_jpeg(tmp_path: Path, cache: Path) -> None:
    Image.new("RGB", (2000, 3000), (10, 120, 30)).save(tmp_path / "tall.jpg", quality=95)
    data, media_type = load_image(tmp_path / "tall.jpg", cache)
    assert media_type == "image/jpeg"
    assert decoded(data)[:2] == ("JPEG", (1045, 1568))


def test_a_palette_gif_becomes_png(tmp_path: Path, cache: Path) -> None:
    Image.new("P", (2000, 100), 3).save(tmp_path / "banner.gif")
    data, media_type = load_image(tmp_path / "banner.gif", cache)
    assert media_type == "image/png"
    assert decoded(data)[1] == (1568, 78)


def test_max_dimension_is_respected(tmp_path: Path, cache: Path) -> None:
    Image.new("RGB", (800, 600)).save(tmp_path / "a.webp")
    data, media_type = load_image(tmp_path / "a.webp", cache, max_dimension=400)
    assert (media_type, decoded(data)[1]) == ("image/jpeg", (400, 300))


def test_a_small_image_is_returned_unchanged(tmp_path: Path, cache: Path) -> None:
    Image.new("RGB", (640, 480), (1, 2, 3)).save(tmp_path / "small.webp")
    original = (tmp_path / "small.webp").read_bytes()
    assert load_image(tmp_path / "small.webp", cache) == (original, "image/webp")
    assert not cache.exists()


def test_media_type_follows_the_content_not_the_suffix(tmp_path: Path, cache: Path) -> None:
    Image.new("RGB", (10, 10)).save(tmp_path / "really_png.jpg", format="PNG")
    assert load_image(tmp_path / "really_png.jpg", cache)[1] == "image/png"


def test_bmp_is_always_reencoded(tmp_path: Path, cache: Path) -> None:
    Image.new("RGB", (50, 40), (9, 9, 9)).save(tmp_path / "icon.bmp")
    data, media_type = load_image(tmp_path / "icon.bmp", cache)
    assert media_type == "image/jpeg"
    assert decoded(data)[1] == (50, 40)


def test_exif_orientation_is_applied_when_scaling(tmp_path: Path, cache: Path) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # stored landscape, displayed rotated 90 degrees
    Image.new("RGB", (3000, 2000)).save(tmp_path / "phone.jpg", exif=exif)
    data, _ = load_image(tmp_path / "phone.jpg", cache)
    assert decoded(data)[1] == (1045, 1568)


def test_the_scaled_copy_is_cached_by_content(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "photo.png"
    Image.new("RGB", (2000, 1000), (200, 0, 0)).save(path)
    first = load_image(path, cache)
    assert len(list((cache / "images").iterdir())) == 1

    def no_scaling(image: object, max_dimension: int) -> tuple[bytes, str]:
        raise AssertionError("scaled again")

    monkeypatch.setattr(images, "_scaled", no_scaling)
    assert load_image(path, cache) == first
    monkeypatch.undo()

    # The same path with new content must not be served from the cache.
    Image.new("RGB", (4000, 1000), (0, 0, 200)).save(path)
    second, _ = load_image(path, cache)
    assert decoded(second)[1] == (1568, 392)
    assert len(list((cache / "images").iterdir())) == 2
    # Another size limit is another cache entry.
    assert decoded(load_image(path, cache, max_dimension=100)[0])[1] == (100, 25)


def test_not_an_image_is_retriable(tmp_path: Path, cache: Path) -> None:
    (tmp_path / "fake.png").write_text("just text")
    with pytest.raises(RetriableError, match=r"'fake\.png' is not a readable image"):
        load_image(tmp_path / "fake.png", cache, shown_as="fake.png")
    (tmp_path / "scan.tiff").write_bytes(b"II*\x00")
    assert not is_image(tmp_path / "scan.tiff")
    with pytest.raises(RetriableError, match="not an image"):
        load_image(tmp_path / "scan.tiff", cache)
    with pytest.raises(RetriableError, match="workspace_glob"):
        load_image(tmp_path / "gone.png", cache)


def test_an_unsupported_format_under_an_image_suffix_is_retriable(tmp_path: Path, cache: Path) -> None:
    Image.new("RGB", (10, 10)).save(tmp_path / "x.png", format="TIFF")
    with pytest.raises(RetriableError, match="TIFF"):
        load_image(tmp_path / "x.png", cache)


def test_without_pillow_the_install_command_is_given(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Image.new("RGB", (3000, 10)).save(tmp_path / "a.png")
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ToolFailed, match=r"pip install 'toolcards\[vision\]'"):
        load_image(tmp_path / "a.png", cache)


def test_max_dimension_must_be_positive(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(ValueError):
        load_image(tmp_path / "a.png", cache, max_dimension=0)
