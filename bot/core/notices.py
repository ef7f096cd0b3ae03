"""What the runtime itself tells people, and where anything an agent says goes.

The sentences are kept together (as slack_bolt keeps its user-facing texts in
`logger/messages.py`) so they read as one voice and each names what to do. The
channels keep their own platform's sentences (`channels/discord/errors.py`).

`where_to` is the contract's single "where does this go" rule, used for every
message that leaves the runtime: an explicit target first (a trigger's `deliver_to`,
`ask_human`'s `via`), then the conversation's own target (the thread a message came
from, a worker's origin), then SWITCHBOARD_HOME. Imports only message types.
"""

from __future__ import annotations

import logging

from bot.core.messages import Target, TargetError

log = logging.getLogger(__name__)

#: who speaks when the runtime itself speaks
SYSTEM_SPEAKER = "switchboard"
#: a bus message's meta flag: the person of its conversation was already shown this
#: notice, so the agent reading it must not be woken to say it again
SHOWN = "shown"
#: where a person is when nothing else says (the embedded chat)
TERMINAL = Target("terminal")


def where_to(*choices: str | Target | None, home: Target | None) -> Target | None:
    """The first of `choices` that is given (explicit, then the conversation's), else
    `home` (SWITCHBOARD_HOME). A stored choice that does not parse is skipped, logged."""
    for choice in choices:
        if isinstance(choice, Target):
            return choice
        if choice:
            try:
                return Target.parse(choice)
            except TargetError:
                log.warning("bad delivery target %r skipped", choice)
    return home


# -- routing -------------------------------------------------------------------------
def no_such_worker(name: str, workers: list[str]) -> str:
    if not workers:
        return f"There is no worker called {name}; no workers are running right now."
    return f"There is no worker called {name}. Workers: {', '.join(workers)}."


HELP = (
    "Write to me in plain words: the coordinator answers, and starts workers for longer "
    "jobs. @Name ... talks to a worker; a plain reply to a worker's question answers it; "
    "new starts a fresh conversation; stop stops what runs here (@Name stop: that worker); "
    "/help shows this. In the terminal, /status shows what runs and /quit leaves."
)


def not_your_worker(name: str) -> str:
    return (
        f"{name} is not your worker: it works for another conversation, so your message "
        "was not passed on to it."
    )


# -- delivery ------------------------------------------------------------------------
def undeliverable(agent: str, target: Target, error: str) -> str:
    return f"Could not deliver a message from {agent} to {target}: {error}"


# -- the model -----------------------------------------------------------------------
MODEL_UNAVAILABLE = "The model is unavailable right now; I will answer as soon as it is back."


def model_unavailable(why: str = "") -> str:
    """The outage notice, with why in words for people (agents/model/reasons.py)."""
    if not why:
        return MODEL_UNAVAILABLE
    return f"The model is unavailable right now ({why}); I will answer as soon as it is back."


def model_refused(error: object) -> str:
    """The API refused a request the runtime could not repair; that part is left out."""
    return (
        "The model refused this request, so I left that part out of our conversation; "
        f"your next message is answered as usual. ({error})"
    )


def model_declined(explanation: str | None) -> str:
    """The model declined (`stop_reason: refusal`); its turn was taken out."""
    why = f" It said: {explanation.strip()}" if explanation and explanation.strip() else ""
    return (
        f"The model declined to answer that.{why} I took it out of this conversation, so "
        "you can rephrase it or ask something else."
    )


CONTEXT_FULL = (
    "This conversation no longer fits the model's context window, even after summarising "
    "it. Say `new` to start a fresh one (memory stays)."
)


def media_left_out(error: object) -> str:
    return (
        "The model could not take part of this conversation (an image, a PDF or too much "
        f"history), so I left it out and went on: {error}"
    )


def unread_files(problems: list[tuple[str, str]]) -> str | None:
    """What a person is told about files they sent that could not be read in full:
    (name, why) each; None when every file was fine."""
    if not problems:
        return None
    lines = "\n".join(f"- {name}: {why}" for name, why in problems)
    return f"Not every file you sent could be read in full:\n{lines}"


def turn_limit(max_turns: int) -> str:
    return f"I stopped after {max_turns} steps (SWITCHBOARD_MAX_TURNS) without finishing."


SESSION_FAILED = (
    "Something went wrong on my side while answering; the error is in the log. Please try again."
)


# -- workers -------------------------------------------------------------------------
def worker_turn_limit(name: str, max_turns: int) -> str:
    return (
        f"Worker {name} stopped: it reached the limit of {max_turns} turns "
        "(SWITCHBOARD_MAX_TURNS) without publishing."
    )


def worker_failed(name: str, exc: BaseException) -> str:
    return f"Worker {name} failed: {type(exc).__name__}: {exc}"


def worker_recovering(name: str, exc: BaseException, seconds: float, left: int) -> str:
    """A worker's task failed on something that may pass: it goes on by itself."""
    again = f"{left} more tr{'y' if left == 1 else 'ies'} after this one" if left else "last try"
    return (
        f"Worker {name} hit a problem that may pass ({type(exc).__name__}: {exc}); it "
        f"goes on from where it was in {seconds:.0f} s ({again})."
    )


# -- triggers ------------------------------------------------------------------------
def trigger_failed(trigger_id: str, schedule: str, error: str) -> str:
    return f"Trigger {trigger_id} ({schedule}) could not act: {error}"


NO_TRIGGER_TARGET = "no delivery target: give deliver_to or set SWITCHBOARD_HOME"


def budget_spent(limit: float, spent: float, resumes: str) -> str:
    return (
        f"The daily LLM budget of ${limit:.2f} (SWITCHBOARD_DAILY_BUDGET_USD) is spent "
        f"(${spent:.2f} today). New model work waits until {resumes}, or until the budget "
        "is raised (and Switchboard restarted)."
    )


def budget_nearly_spent(limit: float, spent: float, resumes: str, due: list[str]) -> str:
    """The warning before the daily budget is reached, naming what would wait."""
    share = spent / limit if limit else 1.0
    text = (
        f"Today's model spend is ${spent:.2f}, {share:.0%} of the ${limit:.2f} daily budget "
        f"(SWITCHBOARD_DAILY_BUDGET_USD). Once it is reached, new model work waits until "
        f"{resumes}: messages to the agents, workers' next steps"
    )
    if due:
        shown = ", ".join(due[:3]) + (f" and {len(due) - 3} more" if len(due) > 3 else "")
        text += f", and the schedules due before then ({shown})"
    return text + "."


# -- a fresh start (`new`) -------------------------------------------------------------
def fresh_start(archived: bool, parked: list[str]) -> str:
    """The answer to `new`: what was kept, and the workers still waiting here."""
    text = "Started a new conversation."
    if archived:
        text += " The earlier one is archived where I can still look it up; what I remember stays."
    else:
        text += " There was nothing to archive; what I remember stays."
    for name in parked:
        text += (
            f" Worker {name} still waits for an answer to its question and keeps reporting"
            f" here: answer it with @{name} ..."
        )
    return text


# -- operators (the dashboard) ---------------------------------------------------------
def answered_by_operator(operator: str, text: str) -> str:
    """An answer an operator gave on the dashboard (`operator`: who, or just "dashboard"
    when the dashboard knows no name)."""
    who = "An operator" if operator == "dashboard" else operator
    return f"{who} answered from the dashboard: {text}"


def follower_cannot(leader: str | None) -> str:
    """A dashboard action on a node that does not run the agents (several nodes)."""
    where = f"node {leader}" if leader else "the leading node, once one leads"
    return f"This node does not run the agents: do this on the dashboard of {where}."


def unverified_answer(worker: str) -> str:
    return (
        f"Your mail could not be verified (the mail server did not vouch for its sender), "
        f"so it does not answer {worker}'s question; nothing was passed on."
    )


def answer_receipt(worker: str) -> str:
    """An answer by mail reached the worker that asked (email shows no live progress)."""
    return f"{worker} has your answer and is working on it; you will hear back here."


QUESTION_GONE = "That question is no longer open (it was answered or its worker ended)."
QUESTION_TAKEN = "Someone answered that question meanwhile; yours was not sent."
APPROVAL_GONE = "No such approval is waiting."
APPROVAL_TAKEN = "That call was already decided; nothing was changed."
EMPTY_ANSWER = "Write an answer first."
CSRF_REFUSED = "This form is stale or came from another site (CSRF check failed); reload the page."


# -- stalled work (bot/ops/stalled.py) ---------------------------------------------------
def in_words(seconds: float) -> str:
    """`40 s`, `45 min`, `5 h`, `3 days`."""
    if seconds < 60:
        return f"{max(1, int(seconds))} s"
    if seconds < 3600:
        return f"{max(1, int(seconds // 60))} min"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h"
    days = int(seconds // 86400)
    return f"{days} day" + ("s" if days > 1 else "")


def question_reminder(question: str, waited: float) -> str:
    return f"{question}\n(Still waiting for an answer: asked {in_words(waited)} ago.)"


def question_escalation(worker: str, where: str, question: str, waited: float) -> str:
    return (
        f"{worker} has waited {in_words(waited)} for an answer in {where}: {question}\n"
        "(Answer here, in that thread, or from the dashboard.)"
    )


def approval_reminder(tool: str, speaker: str, waited: float) -> str:
    return (
        f"Reminder: {speaker} still waits for approval to run {tool} (asked {in_words(waited)} "
        "ago). Reply `approve` or `deny <reason>` in this thread."
    )


def approval_escalation(tool: str, speaker: str, where: str, waited: float) -> str:
    return (
        f"{speaker} has waited {in_words(waited)} for approval to run {tool} in {where}. "
        "Decide there, or from the dashboard."
    )


def worker_stuck(name: str, idle: float, doing: str) -> str:
    return f"Worker {name} has made no progress for {in_words(idle)}: {doing}."


# -- live progress (bot/core/progress.py): the status line while an agent works -------------
WORKING = "is thinking…"
WAITING_FOR_APPROVAL = "Waiting for approval"
STOPPED = "Stopped."
NOTHING_TO_STOP = "Nothing is running here to stop."
_DOING = {
    "memory_search": "Searching memory",
    "recall": "Reading memory",
    "remember": "Writing memory",
    "reflect": "Writing memory",
    "learn_fact": "Writing memory",
    "web_fetch": "Reading a web page",
    "read_channel": "Reading the channel",
    "read_file": "Reading a file",
    "write_file": "Writing a file",
    "list_workers": "Looking at the workers",
    "schedule": "Scheduling",
    "publish": "Writing up the result",
}


def doing(tool: str, args: object) -> str:
    """The status line for a tool call under way: "Searching memory", "Asking Alice"."""
    args = args if isinstance(args, dict) else {}  # arguments that are not an object
    if tool == "spawn_worker":
        return f"Starting {args.get('name') or 'a worker'}"
    if tool == "send_message" and str(args.get("to", "human")) not in ("human", "*"):
        return f"Asking {args.get('to')}"
    if tool == "ask_human":
        return "Waiting for an answer"
    if tool == "stop_worker":
        return f"Stopping {args.get('name') or 'a worker'}"
    if "__" in tool:  # an MCP server's tool: what it does, in words, without its name
        return f"Using {tool.split('__')[0]}: {tool.split('__')[-1].replace('_', ' ')}"
    return _DOING.get(tool, "Working")


def working_on(agent: str, status: str) -> str:
    """A status line shown in the conversation a worker works for."""
    return f"{agent}: {status}"
