"""How agent messages look in Discord: speaker first, Discord markdown, 2,000-char parts."""

from __future__ import annotations

from bot.core.messages import Outbound, Target
from channels.discord.format import LIMIT, render, to_discord_markdown
from tests.kits.discord_kit import is_balanced

HOME = Target("discord", "1")


def test_the_speaker_leads_and_a_question_says_so() -> None:
    assert render(Outbound("coordinator", HOME, "Hello")) == ["**Coordinator:** Hello"]
    question = Outbound("Alice", HOME, "Which region?", kind="question")
    assert render(question, "Reply in this thread to answer Alice.") == [
        "**Alice asks:** Which region?\n-# Reply in this thread to answer Alice."
    ]


def test_a_reply_that_opens_with_a_block_starts_on_its_own_line() -> None:
    [part] = render(Outbound("Bob", HOME, "```sh\nls\n```"))
    assert part == "**Bob:**\n```sh\nls\n```"


def test_deep_headings_become_bold_and_tables_aligned_code_blocks() -> None:
    text = "# Title\n#### Small heading ####\n| a | **bb** |\n|---|--:|\n| 100 | 2 |\nafter"
    assert to_discord_markdown(text) == (
        "# Title\n**Small heading**\n```\na   | bb\n----+---\n100 |  2\n```\nafter"
    )


def test_code_blocks_pass_through_untouched() -> None:
    text = "```md\n#### not a heading\n| not | a table |\n|--|--|\n```"
    assert to_discord_markdown(text) == text


def test_long_text_is_cut_into_parts_within_the_limit_keeping_fences_whole() -> None:
    body = "intro\n```python\n" + "\n".join(f"x = {i}" for i in range(600)) + "\n```\nend"
    parts = render(Outbound("coordinator", HOME, body))
    assert len(parts) >= 3
    assert all(len(p) <= LIMIT and is_balanced(p) for p in parts)
    assert all(p.startswith("```python") for p in parts[1:-1])
