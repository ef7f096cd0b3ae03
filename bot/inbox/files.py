"""Saved files: what people attach, stored in the data dir by content hash.

A file is written once to `<data_dir>/files/<sha256[:16]>/<name>`: the same bytes
sent twice under one name are one file (dedupe), and a name taken from a platform is
sanitised first (no directories, no control, format, line-separator or bidi
characters, no leading dots, at most 255 bytes of UTF-8, never empty). Files over
`max_bytes` (SWITCHBOARD_FILE_MAX_BYTES) are not saved; the attachment carries a
note saying so. Touches only the file system below its root.
"""

from __future__ import annotations

import contextlib
import hashlib
import mimetypes
import os
import re
import tempfile
import unicodedata
from pathlib import Path

from bot.core.image_size import pixel_size
from bot.core.messages import Attachment
from bot.store.prune_files import FILES_LOCK

FILES_DIR = "files"
NAME_MAX = 120
NAME_MAX_BYTES = 255  # what file systems take (ext4, APFS, NTFS in UTF-16 units)
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f/\\:*?\"<>|]+")
#: format (bidi, zero-width), line/paragraph separators, lone surrogates: dropped
_INVISIBLE = frozenset(("Cf", "Zl", "Zp", "Cs"))


def safe_name(raw: str, fallback: str = "file") -> str:
    """A platform's file name as a plain file name: the last path part, without
    control, invisible or reserved characters or leading dots, at most NAME_MAX
    characters and NAME_MAX_BYTES bytes of UTF-8, its extension kept."""
    visible = "".join(c for c in raw if unicodedata.category(c) not in _INVISIBLE)
    base = re.split(r"[/\\]", visible.strip())[-1]
    base = _UNSAFE.sub("_", base).strip().lstrip(".").strip()
    _stem, dot, ext = base.rpartition(".")
    keep = "." + ext if dot and 0 < len(ext) <= 10 else ""
    stem = base[: len(base) - len(keep)]
    while stem and (len(stem) + len(keep) > NAME_MAX or _bytes(stem + keep) > NAME_MAX_BYTES):
        stem = stem[: min(len(stem) - 1, NAME_MAX - len(keep))]
    return (stem.rstrip() + keep if stem.strip() else "") or fallback


def _bytes(name: str) -> int:
    return len(name.encode("utf-8", "surrogatepass"))


def guess_type(name: str, declared: str = "") -> str:
    """The declared content type, else one guessed from the name."""
    declared = declared.split(";")[0].strip().lower()
    if declared and declared != "application/octet-stream":
        return declared
    return mimetypes.guess_type(name)[0] or declared or "application/octet-stream"


def human_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


class FileStore:
    """The saved files of one data dir."""

    def __init__(self, data_dir: Path, max_bytes: int) -> None:
        self.data_dir = data_dir
        self.root = data_dir / FILES_DIR
        self.max_bytes = max_bytes

    def too_large(self, att: Attachment, size: int) -> Attachment:
        att.size = size
        att.note = (
            f"not saved: {human_size(size)} is over the limit of "
            f"{human_size(self.max_bytes)} (SWITCHBOARD_FILE_MAX_BYTES)"
        )
        return att

    def save(self, att: Attachment, data: bytes) -> Attachment:
        """Write `data` for `att` (unless the same bytes are there already) and fill in
        its path, hash, size and type. Over the cap: only a note."""
        if len(data) > self.max_bytes:
            return self.too_large(att, len(data))
        digest = hashlib.sha256(data).hexdigest()
        att.name = safe_name(att.name)
        relative = f"{FILES_DIR}/{digest[:16]}/{att.name}"
        path = self.data_dir / relative
        with FILES_LOCK:  # the pruner removes no folder while one is saved into
            if path.is_file() and path.stat().st_size == len(data):
                os.utime(path)  # sent again: kept for another SWITCHBOARD_RETENTION
            else:
                write_atomic(path, data)
        att.path, att.sha256, att.size = relative, digest, len(data)
        att.content_type = guess_type(att.name, att.content_type)
        att.note = model_note(att, data) or ""
        return att


#: What the Messages API takes as image and document blocks (its documented limits).
IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
IMAGE_MAX_BYTES = 5 * 1024 * 1024
IMAGE_MAX_PIXELS = 8000
PDF_MAX_BYTES = 32 * 1024 * 1024
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff(data: bytes) -> str | None:
    """The image type the bytes really are, whatever the name or platform says."""
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def model_note(att: Attachment, data: bytes) -> str | None:
    """Why a saved image or PDF cannot go to the model as one (it is then named with
    its path instead); fixes a mislabelled image's type. None when all is well."""
    if att.content_type == "application/pdf":
        if not data.startswith(b"%PDF-"):
            return "named .pdf but not a PDF; shown by name only"
        if len(data) > PDF_MAX_BYTES:
            return f"a PDF over the model's {human_size(PDF_MAX_BYTES)}; shown by name only"
        return None
    if not att.content_type.startswith("image/"):
        return None
    real = sniff(data)
    if real is None:
        return (
            f"{att.content_type} is not an image type the model reads (png, jpeg, gif, "
            "webp); shown by name only"
        )
    att.content_type = real
    if len(data) > IMAGE_MAX_BYTES:
        return (
            f"image of {human_size(len(data))} is over the model's "
            f"{human_size(IMAGE_MAX_BYTES)} per image; shown by name only"
        )
    size = pixel_size(real, data)
    if size is None:
        return f"{real} whose size cannot be read (a broken image?); shown by name only"
    side = max(size)
    if side > IMAGE_MAX_PIXELS:
        return f"image of {side} pixels a side is over the model's {IMAGE_MAX_PIXELS}; by name only"
    return None


def write_atomic(path: Path, data: bytes) -> None:
    """Temp file + rename: a crash leaves no half file under the final name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
