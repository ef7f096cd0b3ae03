"""Image pixel sizes read from the header bytes: PNG, GIF, JPEG and WebP.

The Messages API refuses an image over 8000 pixels a side, and a whole request with
it; reading the size here turns that into a note before the request is built. Only
the few header bytes each format puts its size in are read (a JPEG's SOF segment,
a WebP's VP8/VP8L/VP8X chunk): no image library, no decoding. `None` means the
header could not be read, which the caller treats as an image the API would refuse.
"""

from __future__ import annotations

import struct

#: JPEG start-of-frame markers (baseline, progressive, lossless, ...): all of
#: 0xC0-0xCF except DHT (0xC4), JPG (0xC8) and DAC (0xCC), which are not frames.
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
#: Markers that stand alone, without a length: TEM, RST0-7, SOI.
_NO_LENGTH = frozenset({0x01, *range(0xD0, 0xD9)})
_EOI, _SOS = 0xD9, 0xDA


def pixel_size(kind: str, data: bytes) -> tuple[int, int] | None:
    """(width, height) of an image of type `kind`, or None when its header is unreadable."""
    if kind == "image/png" and len(data) >= 24 and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    if kind == "image/gif" and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return width, height
    if kind == "image/jpeg":
        return _jpeg(data)
    if kind == "image/webp":
        return _webp(data)
    return None


def _jpeg(data: bytes) -> tuple[int, int] | None:
    """Walk the segments after SOI to the first frame header (SOFn: length, precision,
    height, width); the scan data starts only after it, so the walk is short."""
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte before a marker
            i += 1
            continue
        if marker in _NO_LENGTH:
            i += 2
            continue
        if marker in (_EOI, _SOS):
            return None  # a frame header must come before the scan
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if marker in _SOF:
            if length < 7 or i + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return width, height
        if length < 2:
            return None
        i += 2 + length
    return None


def _webp(data: bytes) -> tuple[int, int] | None:
    """The first chunk of a RIFF/WEBP file says the size: VP8 (lossy key frame),
    VP8L (lossless, 14-bit sizes minus one) or VP8X (extended, 24-bit minus one)."""
    if len(data) < 30 or data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        return None
    chunk, body = data[12:16], data[20:]
    if chunk == b"VP8 " and body[3:6] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", body[6:10])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and body[0] == 0x2F:
        bits = int.from_bytes(body[1:5], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        width = int.from_bytes(body[4:7], "little") + 1
        height = int.from_bytes(body[7:10], "little") + 1
        return width, height
    return None
