"""Pixel sizes from image headers: JPEG and WebP as well as PNG and GIF, so an image
the Messages API would refuse (over 8000 px a side) is a note, not a refused request."""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.model.attachments import Expander, blocks
from bot.core.image_size import pixel_size
from bot.core.messages import Attachment
from bot.inbox.files import FileStore, model_note
from tests.kits.image_kit import jpeg, png

# Real 1x1 WebP files (the ones browsers' feature tests decode): lossy VP8, lossless
# VP8L, and extended VP8X with an alpha chunk.
WEBP_LOSSY = base64.b64decode("UklGRiIAAABXRUJQVlA4IBYAAAAwAQCdASoBAAEADsD+JaQAA3AAAAAA")
WEBP_LOSSLESS = base64.b64decode("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==")
WEBP_EXTENDED = base64.b64decode(
    "UklGRkoAAABXRUJQVlA4WAoAAAAQAAAAAAAAAAAAQUxQSAwAAAARBxAR/Q9ERP8DAABWUDggGAAAABQBAJ0BKgEA"
    "AQAAAP4AAA3AAP7mtQAAAA=="
)


def webp_sized(data: bytes, width: int, height: int) -> bytes:
    """The same WebP with its header saying another size, each chunk in its own layout."""
    out = bytearray(data)
    chunk = bytes(out[12:16])
    if chunk == b"VP8 ":
        out[26:30] = struct.pack("<HH", width, height)
    elif chunk == b"VP8L":
        bits = int.from_bytes(out[21:25], "little") & ~((1 << 28) - 1)
        out[21:25] = (bits | (width - 1) | ((height - 1) << 14)).to_bytes(4, "little")
    else:
        out[24:27] = (width - 1).to_bytes(3, "little")
        out[27:30] = (height - 1).to_bytes(3, "little")
    return bytes(out)


@pytest.mark.parametrize(
    ("kind", "data", "size"),
    [
        ("image/png", png(3, 5), (3, 5)),
        ("image/jpeg", jpeg(16, 9), (16, 9)),
        ("image/jpeg", jpeg(33, 7, sof=0xC2, exif=False), (33, 7)),  # progressive
        ("image/webp", WEBP_LOSSY, (1, 1)),
        ("image/webp", WEBP_LOSSLESS, (1, 1)),
        ("image/webp", WEBP_EXTENDED, (1, 1)),
        ("image/webp", webp_sized(WEBP_LOSSY, 8200, 20), (8200, 20)),
        ("image/webp", webp_sized(WEBP_LOSSLESS, 30, 9001), (30, 9001)),
        ("image/webp", webp_sized(WEBP_EXTENDED, 12000, 2), (12000, 2)),
    ],
)
def test_sizes_are_read_from_the_header(kind: str, data: bytes, size: tuple[int, int]) -> None:
    assert pixel_size(kind, data) == size


@pytest.mark.parametrize(
    ("name", "data", "side"),
    [
        ("wide.jpg", jpeg(8008, 8), 8008),
        ("tall.jpeg", jpeg(8, 9000, sof=0xC2), 9000),
        ("wide.webp", webp_sized(WEBP_LOSSY, 8001, 1), 8001),
        ("tall.webp", webp_sized(WEBP_LOSSLESS, 1, 16000), 16000),
        ("big.webp", webp_sized(WEBP_EXTENDED, 9999, 9999), 9999),
    ],
)
def test_a_jpeg_or_webp_over_8000_px_is_a_note_not_an_image_block(
    tmp_path: Path, name: str, data: bytes, side: int
) -> None:
    att = FileStore(tmp_path, 10_000_000).save(Attachment(name), data)
    assert f"{side} pixels a side" in att.note
    assert all(b["type"] != "image" for b in blocks([att], tmp_path))  # named, never sent


@pytest.mark.parametrize(
    ("name", "data"),
    [("ok.jpg", jpeg(8000, 16)), ("ok.webp", WEBP_LOSSY), ("ok2.webp", WEBP_EXTENDED)],
)
def test_a_jpeg_or_webp_within_limits_goes_as_an_image(
    tmp_path: Path, name: str, data: bytes
) -> None:
    att = FileStore(tmp_path, 10_000_000).save(Attachment(name), data)
    assert att.note == ""
    assert [b["type"] for b in blocks([att], tmp_path)].count("image") == 1


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("cut.jpg", jpeg(20, 20)[:60]),  # ends before its frame header
        ("noframe.jpg", b"\xff\xd8\xff\xda\x00\x08" + b"\x00" * 20),  # a scan, no frame
        ("cut.webp", WEBP_LOSSY[:24]),
        ("odd.webp", WEBP_LOSSY[:12] + b"ABCD" + WEBP_LOSSY[16:]),  # unknown first chunk
    ],
)
def test_an_image_whose_size_cannot_be_read_is_not_sent(name: str, data: bytes) -> None:
    att = Attachment(name, "image/jpeg" if name.endswith(".jpg") else "image/webp")
    assert "cannot be read" in (model_note(att, data) or "")


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(["image/png", "image/gif", "image/jpeg", "image/webp"]),
    head=st.sampled_from([b"", b"\xff\xd8", b"RIFF\x00\x00\x00\x00WEBPVP8 ", jpeg(9, 9)[:40]]),
    tail=st.binary(max_size=64),
)
def test_any_bytes_give_a_size_or_none_never_an_error(kind: str, head: bytes, tail: bytes) -> None:
    size = pixel_size(kind, head + tail)
    assert size is None or all(isinstance(n, int) and n >= 0 for n in size)


def _image_turns(tmp_path: Path, images: list[bytes]) -> list[dict[str, Any]]:
    """One user turn per image, each a saved-file reference as the conversation keeps it."""
    files = FileStore(tmp_path, 10_000_000)
    turns = []
    for i, data in enumerate(images):
        att = files.save(Attachment(f"shot-{i}.png"), data)
        turns.append({"role": "user", "content": blocks([att], tmp_path)})
    return turns


def _kinds(messages: list[dict[str, Any]]) -> list[str]:
    return [b["type"] for m in messages for b in m["content"] if b["type"] != "text"]


def test_past_20_images_in_a_request_one_over_2000_px_is_a_note(tmp_path: Path) -> None:
    wide = png(2100, 1)
    twenty = _image_turns(tmp_path, [wide] + [png(2, 2 + i) for i in range(19)])
    assert _kinds(Expander(tmp_path).expand(twenty)) == ["image"] * 20  # 20: all allowed
    more = _image_turns(tmp_path, [wide] + [png(2, 2 + i) for i in range(20)])
    expanded = Expander(tmp_path).expand(more)
    assert _kinds(expanded) == ["image"] * 20
    note = expanded[0]["content"][1]
    assert note["type"] == "text" and "2100 pixels a side, over the 2000" in note["text"]


def test_past_100_images_the_oldest_are_left_out(tmp_path: Path) -> None:
    turns = _image_turns(tmp_path, [png(2, 2 + i) for i in range(102)])
    expanded = Expander(tmp_path).expand(turns)
    assert _kinds(expanded) == ["image"] * 100
    assert all("more than 100 images" in expanded[i]["content"][1]["text"] for i in (0, 1))
    assert expanded[2]["content"][1]["type"] == "image"
    assert turns[0]["content"][1]["source"]["type"] == "saved_file"  # stored turns unchanged
