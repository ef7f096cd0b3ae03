"""Real tiny images built in the test: PNG and baseline JPEG bytes of a given size, so
type sniffing and size checks read real headers."""

from __future__ import annotations

import struct
import zlib


def png(width: int = 2, height: int = 2) -> bytes:
    """A real (tiny) PNG, so the type sniffing and size checks see real bytes."""
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def jpeg(width: int, height: int, sof: int = 0xC0, exif: bool = True) -> bytes:
    """A real baseline grey JPEG of any size, every 8x8 block flat: one DC and one AC
    Huffman code, both '0', so each block is the bits 00 (DC diff 0, EOB) and the scan
    is zero bytes. An EXIF-like APP1 segment first makes the reader walk past it."""

    def segment(marker: int, body: bytes) -> bytes:
        return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body

    blocks_n = -(-width // 8) * -(-height // 8)
    bits = 2 * blocks_n
    scan = bytearray(-(-bits // 8))
    if bits % 8:
        scan[-1] = (1 << (8 - bits % 8)) - 1  # pad the last byte with 1 bits
    one_code = bytes([1] + [0] * 15) + b"\x00"  # one code of length 1, symbol 0
    parts = [
        b"\xff\xd8",
        segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"),
        segment(0xE1, b"Exif\x00\x00" + b"\x00" * 40) if exif else b"",
        segment(0xDB, b"\x00" + b"\x01" * 64),
        segment(sof, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00"),
        segment(0xC4, b"\x00" + one_code),
        segment(0xC4, b"\x10" + one_code),
        segment(0xDA, b"\x01\x01\x00\x00\x3f\x00"),
        bytes(scan),
        b"\xff\xd9",
    ]
    return b"".join(parts)
