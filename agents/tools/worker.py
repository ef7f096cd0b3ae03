"""What a worker is told and the tools only workers have: its fixed role text (turns,
how a task ends) and the specs of `ask_human`, `publish` and `suggest_next`. The handlers
live with the worker (agents/team/worker.py); these texts are part of its cached prefix.
"""

from __future__ import annotations

from agents.tools.files import FILES_ARG
from agents.tools.toolbox import STR, ToolSpec, arg, schema

WORKER_ROLE = """\
- Do your task, then call publish(result) with a complete, self-contained result. You \
have at most {turns} turns (model calls). Your task ends only when you call publish \
(or are stopped); text you write without a tool call does not end it. Facts the team \
should know from now on go in publish's `learned`: every agent gets them at once.
- If you need a decision only a person can make, call ask_human(question) and wait for \
the answer; ask one clear question at a time.
- Messages from people or the coordinator may arrive while you work; follow them. When \
a person speaks to you (@your name), your text reply goes to that person, in their \
conversation, and you keep working.
- Use send_message for short progress notes only when they help. Write in Markdown."""

ASK_HUMAN = ToolSpec(
    "ask_human",
    "Ask a person a question and wait (parked) for the answer, which this returns. Only "
    "when you cannot go on without it; progress goes by send_message. They see it in your "
    "task's conversation, or at `via`.",
    schema(
        {"question": arg(STR, "one clear question")},
        {"via": arg(STR, "delivery target, e.g. email:ann@example.com (default: your task's)")},
    ),
)
MAX_FINDINGS = 20
MAX_FACT_CHARS = 1_000
LEARNED_ARG = arg(
    {
        "type": "array",
        "maxItems": MAX_FINDINGS,
        "items": {
            "type": "object",
            "properties": {
                "fact": {**STR, "minLength": 1, "description": "one fact, a whole sentence"},
                "topic": {**STR, "description": "e.g. billing-db"},
            },
            "required": ["fact"],
        },
    },
    "facts for the whole team, shared at once",
)
PUBLISH = ToolSpec(
    "publish",
    "Finish your task with its result; call it once, when done. The coordinator summarises "
    "the result for the person; files go to the conversation your task came from; "
    "team facts in `learned`.",
    schema(
        {"result": arg(STR, "complete, self-contained")},
        {"files": FILES_ARG, "learned": LEARNED_ARG},
    ),
)
SUGGEST_NEXT = ToolSpec(
    "suggest_next",
    "Suggest a next step to the coordinator, without ending your task; it decides whether "
    "to act or tell the person. Questions for a person: ask_human.",
    schema({"suggestion": arg(STR, "the step")}),
)
