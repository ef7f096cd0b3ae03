"""The pure parts of file handling: names, what the model may be shown, and the
expansion of saved-file references when a request is built."""

from __future__ import annotations

import struct
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.model.attachments import Expander, blocks
from bot.core.messages import Attachment
from bot.inbox.files import FileStore, model_note, safe_name
from tests.kits.image_kit import jpeg, png


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\ann\\report.pdf", "report.pdf"),
        ("", "file"),
        ("...", "file"),
        (".bashrc", "bashrc"),
        ("a\x00b\nc.txt", "a_b_c.txt"),
        ("x" * 300 + ".log", "x" * 116 + ".log"),  # 120 characters, the extension kept
        ("invoice\u202egpj.exe", "invoicegpj.exe"),  # a bidi override shows nothing
        ("a\u2028b\u2029c\x85d.txt", "abc_d.txt"),  # line separators, C1 controls
        ("\u200bname\u2066.pdf", "name.pdf"),  # zero-width, isolates
        ("€" * 200 + ".csv", "€" * 83 + ".csv"),  # 253 bytes of UTF-8, the extension kept
    ],
)
def test_names_from_platforms_are_plain_file_names(raw: str, expected: str) -> None:
    assert safe_name(raw) == expected


@given(st.text(max_size=400))
def test_any_name_fits_a_file_system(raw: str) -> None:
    name = safe_name(raw)
    assert 0 < len(name.encode("utf-8", "surrogatepass")) <= 255 and len(name) <= 120
    assert not any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs") for c in name)
    assert "/" not in name and not name.startswith(".")


def test_images_the_api_would_refuse_are_named_not_sent() -> None:
    big = Attachment("huge.png", "image/png")
    assert "over the model's 5.0 MB" in (model_note(big, png() + b"\x00" * 6_000_000) or "")
    wide = png()[:16] + struct.pack(">II", 9000, 10) + png()[24:]
    assert "9000 pixels" in (model_note(Attachment("wide.png", "image/png"), wide) or "")
    bmp = Attachment("old.bmp", "image/bmp")
    assert "not an image type the model reads" in (model_note(bmp, b"BM....") or "")
    jpeg_named_png = Attachment("photo.png", "image/png")
    assert model_note(jpeg_named_png, jpeg(4, 4)) is None
    assert jpeg_named_png.content_type == "image/jpeg"  # the real type goes to the API
    fake_pdf = Attachment("x.pdf", "application/pdf")
    assert "not a PDF" in (model_note(fake_pdf, b"hello") or "")


def test_the_same_bytes_are_saved_once(tmp_path: Path) -> None:
    files = FileStore(tmp_path, 1000)
    a = files.save(Attachment("a.txt", "text/plain"), b"same")
    b = files.save(Attachment("a.txt", "text/plain"), b"same")
    assert a.path == b.path and len(list((tmp_path / "files").rglob("*.txt"))) == 1
    over = files.save(Attachment("big.txt"), b"x" * 1001)
    assert not over.path and "SWITCHBOARD_FILE_MAX_BYTES" in over.note


def test_a_reference_becomes_base64_only_in_the_request(tmp_path: Path) -> None:
    files = FileStore(tmp_path, 10_000)
    image = files.save(Attachment("p.png", "image/png"), png())
    content = blocks([image], tmp_path)
    assert content[1]["source"] == {
        "type": "saved_file",
        "media_type": "image/png",
        "path": image.path,
    }
    messages = [{"role": "user", "content": content}]
    expanded = Expander(tmp_path).expand(messages)
    assert expanded[0]["content"][1]["source"]["type"] == "base64"
    assert messages[0]["content"][1]["source"]["type"] == "saved_file"  # stored one unchanged
    (tmp_path / image.path).unlink()
    gone = Expander(tmp_path).expand(messages)[0]["content"][1]
    assert gone["type"] == "text" and "no longer" in gone["text"]
    escape = [
        {
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {
                        "type": "saved_file",
                        "media_type": "image/png",
                        "path": "../../etc/passwd",
                    },
                }
            ],
        }
    ]
    assert Expander(tmp_path).expand(escape)[0]["content"][0]["type"] == "text"
