"""The routing rules and delivery targets of the contract, table-driven.

`route` is a pure function of the message and the directory (live workers, open
questions); `Target.parse` of the target grammar; `where_to` of the one "where does
this go" rule. Each row is one case a person or a setting can produce.
"""

from __future__ import annotations

import pytest

from bot.core.messages import Inbound, Sender, Target, TargetError
from bot.core.notices import where_to
from bot.inbox.router import Directory, route
from bot.store.core import QuestionRow

ALICE_Q = QuestionRow(
    id="qa",
    worker="alice",
    question="Which region?",
    target="slack:C1/100.1",
    conversation="slack:C1/100.1",
    refs=["<qa@bot>"],
    status="open",
    asked_at=10.0,
)
BOB_Q = QuestionRow(
    id="qb",
    worker="bob",
    question="Budget?",
    target="slack:C1/100.1",
    conversation="slack:C1/100.1",
    refs=["discord:D1/555"],
    status="open",
    asked_at=20.0,
)


def directory(workers: dict[str, str], questions: list[QuestionRow] | None = None) -> Directory:
    d = Directory()
    d.workers.update(workers)
    for q in questions or []:
        d.add_question(q)
    return d


TEAM = {"alice": "Alice", "bob": "Bob"}


def msg(text: str, conversation: str = "terminal", refs: list[str] | None = None) -> Inbound:
    return Inbound(
        channel="terminal",
        message_id="m1",
        conversation=conversation,
        sender=Sender("ann", "Ann"),
        text=text,
        reply_to=Target("terminal"),
        thread_refs=refs or [],
    )


# text, conversation, thread refs, workers, open questions -> recipients, text, question
ROUTES = [
    ("hello", "terminal", [], TEAM, [], ["coordinator"], "hello", None),
    ("  hello  ", "terminal", [], {}, [], ["coordinator"], "hello", None),
    ("@Alice check the logs", "terminal", [], TEAM, [], ["alice"], "check the logs", None),
    ("@alice check", "terminal", [], TEAM, [], ["alice"], "check", None),
    ("@ALICE, check", "terminal", [], TEAM, [], ["alice"], "check", None),
    ("@Alice: check", "terminal", [], TEAM, [], ["alice"], "check", None),
    ("@coordinator status?", "terminal", [], TEAM, [], ["coordinator"], "status?", None),
    ("@all stand up", "terminal", [], TEAM, [], ["coordinator", "alice", "bob"], "stand up", None),
    ("@everyone go", "terminal", [], TEAM, [], ["coordinator", "alice", "bob"], "go", None),
    ("@* go", "terminal", [], TEAM, [], ["coordinator", "alice", "bob"], "go", None),
    ("* go", "terminal", [], TEAM, [], ["coordinator", "alice", "bob"], "go", None),
    ("*", "terminal", [], {}, [], ["coordinator"], "", None),
    ("*bold* text", "terminal", [], TEAM, [], ["coordinator"], "*bold* text", None),
    ("mail me @alice", "terminal", [], TEAM, [], ["coordinator"], "mail me @alice", None),
    # a reply in the thread of an open question goes to the worker that asked
    ("eu-west", "slack:C1/100.1", [], TEAM, [ALICE_Q], ["alice"], "eu-west", "qa"),
    # several questions in one thread: the latest one
    ("10k", "slack:C1/100.1", [], TEAM, [ALICE_Q, BOB_Q], ["bob"], "10k", "qb"),
    # an exact platform reference (email In-Reply-To) wins over the shared thread
    ("eu", "slack:C1/100.1", ["<qa@bot>"], TEAM, [ALICE_Q, BOB_Q], ["alice"], "eu", "qa"),
    # the conversation named in a question's refs (its thread, opened on delivery)
    ("5k", "discord:D1/555", [], TEAM, [BOB_Q], ["bob"], "5k", "qb"),
    # elsewhere: the coordinator, questions or not
    ("hi", "slack:C9", [], TEAM, [ALICE_Q], ["coordinator"], "hi", None),
    # addressing a worker that asked something carries its question along
    ("@bob 5k", "terminal", [], TEAM, [BOB_Q], ["bob"], "5k", "qb"),
    # an explicit @ wins over the question's thread
    ("@coordinator hi", "slack:C1/100.1", [], TEAM, [ALICE_Q], ["coordinator"], "hi", None),
]


@pytest.mark.parametrize(
    ("text", "conversation", "refs", "workers", "questions", "to", "rest", "question"), ROUTES
)
def test_route(
    text: str,
    conversation: str,
    refs: list[str],
    workers: dict[str, str],
    questions: list[QuestionRow],
    to: list[str],
    rest: str,
    question: str | None,
) -> None:
    decision = route(msg(text, conversation, refs), directory(workers, questions))
    assert decision.error is None
    assert decision.recipients == to
    assert decision.text == rest
    assert (decision.question.id if decision.question else None) == question


def test_a_question_is_answered_where_it_was_posted_until_it_closes() -> None:
    """The directory's index follows a question's life: asked in one place, posted
    (a thread, a platform id) in another, answered there, then closed."""
    q = QuestionRow("qc", "alice", "Ship?", "terminal", "terminal", [], "open", 30.0)
    d = directory(TEAM, [q, BOB_Q])
    in_thread = msg("yes", "slack:C9/300.1")
    assert route(in_thread, d).recipients == ["coordinator"]
    d.add_refs("qc", ["slack:C9/300.1", "<qc@bot>"])
    assert route(in_thread, d).question is q
    assert route(msg("yes", "elsewhere", ["<qc@bot>"]), d).question is q
    assert route(msg("@alice yes"), d).question is q
    assert d.pop_question("qc") is q
    assert route(in_thread, d).recipients == ["coordinator"]
    assert route(msg("@alice yes"), d).question is None
    assert route(msg("fine", "discord:D1/555"), d).question is BOB_Q


@pytest.mark.parametrize(
    ("text", "workers", "error"),
    [
        ("@Zed hi", TEAM, "There is no worker called Zed. Workers: Alice, Bob."),
        ("@zed", {}, "There is no worker called zed; no workers are running right now."),
        ("@human hi", {"alice": "Alice"}, "There is no worker called human. Workers: Alice."),
    ],
)
def test_route_to_no_such_worker_is_an_error_naming_the_workers(
    text: str, workers: dict[str, str], error: str
) -> None:
    decision = route(msg(text), directory(workers))
    assert decision.recipients == [] and decision.error == error


@pytest.mark.parametrize(
    ("text", "kind", "address", "thread", "canonical"),
    [
        ("slack:C123", "slack", "C123", None, "slack:C123"),
        ("slack:C123/1700.000100", "slack", "C123", "1700.000100", "slack:C123/1700.000100"),
        ("discord:42", "discord", "42", None, "discord:42"),
        ("discord:42/43", "discord", "42", "43", "discord:42/43"),
        ("email:Ann@Example.COM", "email", "ann@example.com", None, "email:ann@example.com"),
        ("terminal", "terminal", "", None, "terminal"),
        ("  terminal  ", "terminal", "", None, "terminal"),
        ("slack:C1/", "slack", "C1", None, "slack:C1"),
    ],
)
def test_target_parse(
    text: str, kind: str, address: str, thread: str | None, canonical: str
) -> None:
    target = Target.parse(text)
    assert (target.kind, target.address, target.thread) == (kind, address, thread)
    assert str(target) == canonical
    assert Target.parse(str(target)) == target  # stored and read back unchanged


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("irc:#ops", "unknown delivery target"),
        ("", "unknown delivery target"),
        ("Slack:C1", "unknown delivery target"),
        ("slack:", "names no slack"),
        ("discord:", "names no discord"),
        ("email:", "names no email"),
        ("email:ann", "not an email address"),
    ],
)
def test_target_parse_refuses_with_a_sentence_naming_the_grammar(text: str, says: str) -> None:
    with pytest.raises(TargetError, match=says):
        Target.parse(text)


HOME = Target("slack", "CHOME")


@pytest.mark.parametrize(
    ("choices", "home", "expected"),
    [
        (("email:a@b.c", "slack:C1/1.1"), HOME, "email:a@b.c"),  # explicit first
        ((None, "slack:C1/1.1"), HOME, "slack:C1/1.1"),  # then the conversation's
        ((None, None), HOME, "slack:CHOME"),  # then SWITCHBOARD_HOME
        (("", None), None, None),  # nowhere
        (("irc:#x", "discord:9"), HOME, "discord:9"),  # a bad stored target is skipped
        ((Target("terminal"),), HOME, "terminal"),
    ],
)
def test_where_to(
    choices: tuple[str | Target | None, ...], home: Target | None, expected: str | None
) -> None:
    found = where_to(*choices, home=home)
    assert (str(found) if found else None) == expected


@pytest.mark.parametrize(
    ("text", "stop"),
    [
        ("stop", True),
        (" /Stop! ", True),
        ("@Alice stop", True),
        ("@coordinator stop.", True),
        ("@all stop", False),  # a broadcast informs every agent; it stops nothing
        ("* stop", False),
        ("stop the deploy", False),
        ("@Zed stop", False),  # an error, nobody to stop
        ("new", False),
    ],
)
def test_the_router_alone_decides_a_stop(text: str, stop: bool) -> None:
    assert route(msg(text), directory(TEAM)).stop is stop
