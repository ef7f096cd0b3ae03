"""Markdown to Slack mrkdwn (channels/slack/format.py): tables, which mrkdwn lacks, reach
Slack as aligned code blocks, escaped like any code (model review R10)."""

from __future__ import annotations

from bot.core.messages import Outbound, Target
from channels.slack.format import render, to_mrkdwn


def test_a_table_reads_as_an_aligned_code_block_not_raw_pipes() -> None:
    text = "## Vendors\n\n| vendor | days |\n|---|---|\n| A | 5 |\n| **B & C** | `7` |"
    assert to_mrkdwn(text) == (
        "*Vendors*\n\n```\nvendor | days\n-------+-----\nA      | 5\nB &amp; C  | 7\n```"
    )


def test_pipes_in_code_and_in_plain_text_are_left_alone() -> None:
    assert to_mrkdwn("```\n| a | b |\n|---|---|\n```") == "```\n| a | b |\n|---|---|\n```"
    assert to_mrkdwn("cat x | grep y") == "cat x | grep y"


def test_a_reply_that_is_a_table_starts_below_the_speaker() -> None:
    msg = Outbound("coordinator", Target("slack", "C1"), "| a | b |\n|---|---|\n| 1 | 2 |")
    assert render(msg, custom_username=False) == ["*coordinator:*\n```\na | b\n--+--\n1 | 2\n```"]


MARKDOWN = [
    "# Deploy\n\n**api** is *green*; see [the log](https://ci.example/1) and `make ship`.",
    "- one\n- two\n  - nested **bold**\n    - deeper\n\n1. first\n2. second\n\n> quoted",
    "## A heading left open?\n\n~~struck~~ <b>tag</b> & more\n\n```py\nif a < b:\n    pass\n```",
    "ok",
    "1. a\n   - b\n     1. c\n\nplain after a list\n\n### last heading",
    "text with the sentinel \x02 in it\n\n---\n\n* star list\n+ plus list",
]


def test_the_held_parser_converts_as_the_library_does_call_after_call() -> None:
    """One parser serves every answer (built once, not per call): each text, in any
    order and after a conversion that failed, converts exactly as slackify-markdown's
    own function, which builds a parser per call."""
    from slackify_markdown import slackify_markdown

    from channels.slack import format as fmt

    fmt.to_mrkdwn("warm")
    held = fmt._held.parser
    texts = MARKDOWN + MARKDOWN[::-1]
    for text in texts:
        assert fmt._converter().render(text.replace("\x02", "")) == slackify_markdown(text)
    assert fmt._held.parser is held  # one parser served them all

    class Broken:
        def render(self, text: str) -> str:
            raise RuntimeError("a converter bug")

    fmt._held.parser = Broken()
    assert fmt.to_mrkdwn("**a** <b>") == "**a** &lt;b&gt;"  # escaped plain text, not lost
    assert fmt.to_mrkdwn("**a** <b>") == "*a* &lt;b&gt;"  # a fresh parser after the failure
    for text in texts:
        assert fmt._converter().render(text.replace("\x02", "")) == slackify_markdown(text)
