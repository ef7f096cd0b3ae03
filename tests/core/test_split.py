"""Splitting long markdown at a platform limit keeps code blocks whole per chunk."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from channels.split import split_message


def test_short_text_is_one_chunk() -> None:
    assert split_message("hello", 100) == ["hello"]


def test_prefers_paragraph_boundaries() -> None:
    text = "a" * 50 + "\n\n" + "b" * 50
    assert split_message(text, 80) == ["a" * 50, "b" * 50]


def test_code_block_is_closed_and_reopened() -> None:
    code = "\n".join(f"line {i}" for i in range(40))
    text = f"Here:\n```python\n{code}\n```\nDone."
    chunks = split_message(text, 120)
    assert all(len(c) <= 120 for c in chunks)
    for chunk in chunks:
        assert chunk.count("```") % 2 == 0, chunk
    assert chunks[1].startswith("```python\n")
    joined = "\n".join(chunks)
    assert all(f"line {i}" in joined for i in range(40))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["word", "\n```\n", "\n```js\n", "\n", "\n\n", " ", "x" * 30]), max_size=200
    ),
    st.integers(min_value=20, max_value=300),
)
def test_chunks_respect_the_limit(parts: list[str], limit: int) -> None:
    text = "".join(parts)
    chunks = split_message(text, limit)
    assert all(len(c) <= limit for c in chunks)

    def content(s: str) -> str:
        return "".join(re.sub(r"```\w*", "", s).split())

    assert content("\n".join(chunks)) == content(text)
