"""The terminal's live progress: a status line while an agent works, and the
coordinator's text printed as the model writes it.

The delivered message (the outbox row) is still the truth: when it arrives, only
what was not yet printed is written; a row whose text does not continue what was
printed (the stream was cut and retried) is printed whole on a line of its own.
Status lines show only at a terminal (a script's output stays the answers alone).
"""

from __future__ import annotations

from typing import TextIO

from bot.seam import COORDINATOR, Inbound, Outbound, Target

SPINNER = "⋯"


class TerminalProgress:
    refresh_seconds = 3600.0  # a printed line does not fade

    def __init__(self, stdout: TextIO, show_status: bool) -> None:
        self.stdout = stdout
        self.show_status = show_status
        self.shown = ""  # the coordinator text printed ahead of its delivery
        self.open = False  # a streamed line is under way (no newline yet)

    async def working(self, target: Target, status: str, recipient: str | None) -> None:
        """A status line; one with no subject (Slack puts the app's name before it) is the
        coordinator's."""
        if self.show_status and not self.open:
            said = f"{COORDINATOR} {status}" if status.startswith("is ") else status
            self._write(f"{SPINNER} {said}\n")

    async def received(self, msg: Inbound, react: bool) -> None:
        """No reactions in a terminal."""

    async def finished(self, target: Target, msg: Inbound | None) -> None:
        self._close()

    def feed(self, target: Target, recipient: str | None, delta: str) -> None:
        if not self.open:
            if not delta.strip():
                return
            self._write(f"[{COORDINATOR}] ")
            delta = delta.lstrip()
            self.open = True
        self.shown += delta
        self._write(delta)

    def restart(self, target: Target) -> None:
        self._close()
        self.shown = ""

    async def abandon(self, target: Target) -> None:
        self.restart(target)

    def printed(self, msg: Outbound) -> str | None:
        """What of `msg` is still to print, if the stream printed its beginning (None:
        print it as usual). Text the stream printed beyond `msg` stays for the next."""
        if msg.agent != COORDINATOR or msg.kind != "reply" or not self.shown.strip():
            return None
        text, shown = msg.text.strip(), self.shown.strip()
        if shown.startswith(text):  # printed whole; what follows belongs to the next row
            self.shown = shown[len(text) :].lstrip()
            rest = ""
        elif text.startswith(shown):
            self.shown, rest = "", text[len(shown) :]
        else:
            self.restart(Target("terminal"))
            return None
        if not self.shown:
            rest += "\n"
            self.open = False
        return rest

    def _close(self) -> None:
        if self.open:
            self._write("\n")
            self.open = False

    def _write(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()
