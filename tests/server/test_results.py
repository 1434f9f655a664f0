"""Return values as MCP content."""

from __future__ import annotations

import base64

import mcp_types as types
from pydantic import BaseModel
from pydantic_ai import BinaryContent

from toolcards.server._results import error_result, to_call_result

PNG = b"\x89PNG\r\n\x1a\nfake"


class Point(BaseModel):
    x: int
    y: int


def test_text_is_text() -> None:
    result = to_call_result("hello")
    assert result.content == [types.TextContent(text="hello")]
    assert not result.is_error and result.structured_content is None


def test_dicts_and_models_are_json_with_structured_content() -> None:
    assert to_call_result({"a": 1}).structured_content == {"a": 1}
    model = to_call_result(Point(x=1, y=2))
    assert model.content == [types.TextContent(text='{"x": 1, "y": 2}')]
    assert model.structured_content == {"x": 1, "y": 2}


def test_lists_and_scalars_are_json() -> None:
    listed = to_call_result([1, "a"])
    assert listed.content == [types.TextContent(text='[1, "a"]')]
    assert listed.structured_content == {"result": [1, "a"]}
    assert to_call_result(None).content == [types.TextContent(text="null")]
    assert to_call_result(3).content == [types.TextContent(text="3")]


def test_pydantic_ai_binary_content_becomes_image_content() -> None:
    result = to_call_result(BinaryContent(data=PNG, media_type="image/png"))
    assert result.content == [types.ImageContent(data=base64.b64encode(PNG).decode(), mime_type="image/png")]


def test_text_and_images_mix_part_by_part() -> None:
    result = to_call_result(["look:", BinaryContent(data=PNG, media_type="image/jpeg")])
    assert [type(p) for p in result.content] == [types.TextContent, types.ImageContent]
    assert result.structured_content is None


def test_audio_and_other_bytes() -> None:
    audio = to_call_result(BinaryContent(data=b"RIFF", media_type="audio/wav")).content[0]
    assert isinstance(audio, types.AudioContent)
    blob = to_call_result(BinaryContent(data=b"%PDF", media_type="application/pdf"), uri_prefix="toolcards://t/x")
    part = blob.content[0]
    assert isinstance(part, types.EmbeddedResource)
    assert isinstance(part.resource, types.BlobResourceContents)
    assert part.resource.mime_type == "application/pdf" and str(part.resource.uri).startswith("toolcards://t/x/")


def test_errors_are_results() -> None:
    result = error_result("Task 3 does not exist. Call search_planning.")
    assert result.is_error
    assert result.content == [types.TextContent(text="Task 3 does not exist. Call search_planning.")]
