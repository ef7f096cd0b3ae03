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
