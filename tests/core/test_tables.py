"""Markdown tables as aligned code blocks for Slack and Discord (model review R10):
what counts as a table, how columns line up, what is left alone."""

from __future__ import annotations

import pytest

from channels.tables import plain, tables_as_code, width

VENDORS = "| vendor | days |\n|---|---|\n| A | 5 |\n| Bravo | 12 |"


def test_a_table_becomes_a_code_block_with_aligned_columns() -> None:
    assert tables_as_code(f"## Vendors\n\n{VENDORS}\n\nafter") == (
        "## Vendors\n\n```\nvendor | days\n-------+-----\nA      | 5\nBravo  | 12\n```\n\nafter"
    )


def test_alignment_colons_outer_pipes_optional_and_ragged_rows() -> None:
    text = "name | n | note\n:-- | --: | :-:\nab | 1 | x\nc | 100\nd | 2 | y | extra"
    assert tables_as_code(text).split("\n") == [
        "```",
        "name |   n | note",
        "-----+-----+-----",
        "ab   |   1 |  x",
        "c    | 100 |",
        "d    |   2 |  y",
        "```",
    ]


def test_wide_characters_take_two_columns() -> None:
    text = "| city | n |\n|---|---|\n| 東京 | 1 |\n| Paris | 2 |"
    assert tables_as_code(text).split("\n")[1:-1] == [
        "city  | n",
        "------+--",
        "東京  | 1",
        "Paris | 2",
    ]
    assert width("東京") == 4 and width("e\N{COMBINING ACUTE ACCENT}") == 1


@pytest.mark.parametrize(
    ("cell", "text"),
    [
        ("**bold** and __strong__", "bold and strong"),
        ("*it* _it_ snake_case_name", "it it snake_case_name"),
        ("~~old~~ `co*de*`", "old co*de*"),
        ("**`both`**", "both"),
        (
            "[site](https://b.example) <https://c.example>",
            "site (https://b.example) https://c.example",
        ),
        ("[https://x.example](https://x.example)", "https://x.example"),
        ("![logo](l.png) a<br>b", "logo a b"),
        ("\\*not\\* a \\| pipe", "*not* a | pipe"),
    ],
)
def test_inline_markdown_in_a_cell_is_reduced_to_its_text(cell: str, text: str) -> None:
    assert plain(cell) == text


def test_an_escaped_pipe_stays_in_its_cell() -> None:
    assert "a|b | 1" in tables_as_code("| x | y |\n|---|---|\n| `a\\|b` | 1 |")


@pytest.mark.parametrize(
    "text",
    [
        "```md\n| not | a table |\n|---|---|\n```",
        "~~~\n| a | b |\n|---|---|\n~~~",
        "a | b\nno delimiter row",
        "Title\n---\ntext",  # a heading's underline, no pipe
        "| a | b |\n|---|",  # the delimiter row must match the header's cells
        "    | indented | code |\n    |---|---|",
        "plain text, a | pipe",
    ],
)
def test_code_blocks_and_what_is_no_table_are_left_alone(text: str) -> None:
    assert tables_as_code(text) == text


def test_a_table_ends_at_a_blank_line_or_a_line_without_a_pipe() -> None:
    out = tables_as_code(f"{VENDORS}\nnot a row\n\n| x |\n|---|\n| 1 |")
    assert out.count("```") == 4 and "```\nnot a row\n" in out
    assert out.endswith("```\nx\n-\n1\n```")
