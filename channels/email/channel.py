"""The email channel: dispatch between mail and the core (its channel context).

Inbound: every new mail from the IMAP watcher is parsed in a worker thread (the
event loop never waits on a stranger's MIME or HTML), filtered (an unclear From,
machine mail, the allow-list, a From domain the mail server did not verify, loops)
and either refused (logged, an event; no model sees it, nobody is answered) or
turned into an `Inbound` whose conversation is its thread (`email:<root Message-ID>`)
and journaled by `ctx.accept` — all before the watcher marks it \\Seen. Mail nobody
verified, taken under EMAIL_UNVERIFIED=accept, comes from `unverified:<address>` and is
marked so (`UNVERIFIED`): the core takes it as an unlisted sender's, deciding nothing.
A mail that fails past the filters is set aside once: its sender is told, nothing
retries it. The thread's subject and References chain are kept in the store
(`email:thread:<conversation>`)
so answers thread correctly. Outbound: `deliver` composes the mail for the
conversation's thread (or a new mail: a worker's question, a notice) and sends it
over SMTP; the receipt's `platform_id` is the Message-ID, which the human node
records on a worker's open question so the person's reply finds that worker.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import asdict
from email.message import EmailMessage

from bot.core.channel import BaseChannel, PermanentDeliveryError
from bot.core.messages import (
    UNVERIFIED,
    Attachment,
    DeliveryReceipt,
    Inbound,
    Outbound,
    Sender,
    Target,
)
from bot.core.tasks import cancel_all
from bot.inbox.channel_context import ChannelContext
from bot.inbox.files import guess_type, human_size, safe_name
from bot.inbox.reading import Line, Page, ReadRefused
from channels.email.compose import Thread, compose, reply_subject
from channels.email.imap import ImapWatcher
from channels.email.parse import ParsedMail, parse_mail
from channels.email.safety import UNVERIFIED_ID, Policy, RateGuard, check
from channels.email.smtp import SmtpSender
from config.settings import Settings

log = logging.getLogger(__name__)

KIND = "email"
THREAD_KEY = "email:thread:"
READ_SCAN = 5_000  # newest journaled mails searched for one address
PARSE_SECONDS = 30.0  # one mail's parsing, in a worker thread, at the most


TAKEN_UNVERIFIED = (
    "EMAIL_UNVERIFIED=accept: mail whose sender the mail server did not verify is taken "
    "as from an unlisted sender (it decides no approval and answers no question; anyone "
    "can write as any allowed address). Set EMAIL_AUTHSERV_ID and remove EMAIL_UNVERIFIED "
    "to verify senders."
)
SET_ASIDE = (
    "Your mail could not be processed and was set aside; nobody has read it. "
    "Please send it again without attachments, or with shorter file names."
)


def conversation_of(mail: ParsedMail) -> str:
    return f"{KIND}:{mail.root}"


class EmailChannel(BaseChannel):
    kind = KIND
    pace_seconds = 0.0

    def __init__(self, settings: Settings, ctx: ChannelContext) -> None:
        assert settings.email_address is not None
        self.settings = settings
        self.ctx = ctx
        self.store = ctx.store
        self.address = settings.email_address.lower()
        self.guard = RateGuard(settings.email_max_per_sender_per_hour)
        hops = settings.email_authserv_hops
        self.policy = Policy(
            self.address, settings.email_allowed_senders, settings.email_authserv_id,
            None if hops == "any" else hops, settings.email_unverified == "accept",
        )  # fmt: skip
        self.smtp = SmtpSender(settings)
        self.watcher = ImapWatcher(settings, self.store, ctx.events, self.handle, self._health)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self.policy.accept_unverified:
            log.warning(TAKEN_UNVERIFIED)
        self._health(*self.watcher.state)
        self._task = asyncio.create_task(self.watcher.run(), name="email-imap")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:  # asked again until it ends: aioimaplib's wait_for can swallow one
            await cancel_all([task])
        self._health("stopped", "")

    async def probe(self) -> tuple[str, str] | None:
        """The IMAP connection's own state (bot/ops/probe.py); None once stopped."""
        if self._task is None or self._task.done():
            return None
        return await self.watcher.probe()

    def _health(self, state: str, detail: str) -> None:
        self.store.set_health(KIND, state, detail)

    # -- inbound -----------------------------------------------------------------------
    async def handle(self, raw: bytes, size: int) -> None:
        """Journal or refuse one mail; returns only once that is durable."""
        mail = await self._parse(raw, size)
        if mail is None:
            return
        verdict = check(mail, self.policy, self.guard)
        if verdict.refused is not None:
            self._refuse(mail, verdict.refused)
            return
        try:
            self._accept(mail, verdict.unverified, cut=size > len(raw))
        except Exception as exc:  # one bad mail never stops the channel: answer once
            self._set_aside(mail, exc)

    async def _parse(self, raw: bytes, size: int) -> ParsedMail | None:
        """The mail parsed in a worker thread; None (refused) past PARSE_SECONDS."""
        parsing = asyncio.to_thread(parse_mail, raw, self.settings.email_max_chars, size)
        try:
            return await asyncio.wait_for(parsing, PARSE_SECONDS)
        except TimeoutError:  # every part is bounded; this bounds their sum
            log.error("a mail of %d bytes was not parsed in %g s; set aside", size, PARSE_SECONDS)
            self.ctx.refuse(KIND, f"not parsed in {PARSE_SECONDS:g} s", size=size)
            return None

    def _accept(self, mail: ParsedMail, unverified: str | None, cut: bool) -> None:
        inbound = self._inbound(mail, unverified)
        inbound.attachments = self._save_files(mail, cut)
        with self.store.tx():
            self._remember(inbound.conversation, mail)
            self.ctx.accept(inbound)

    def _refuse(self, mail: ParsedMail, reason: str) -> None:
        log.warning("email %s from %r refused: %s", mail.message_id, mail.sender, reason)
        self.ctx.refuse(
            KIND, reason, sender=mail.sender or None, subject=mail.subject[:200],
            id=mail.message_id,
        )  # fmt: skip

    def _set_aside(self, mail: ParsedMail, exc: Exception) -> None:
        """The sender passed every check: tell them once; the watcher marks it \\Seen."""
        error = f"{type(exc).__name__}: {exc}"
        log.error("email %s could not be processed, set aside: %s", mail.message_id, error)
        self.ctx.refuse(KIND, f"could not be processed: {error}", sender=mail.sender,
                        subject=mail.subject[:200], id=mail.message_id)  # fmt: skip
        self.ctx.notify(
            Outbound("switchboard", Target(KIND, mail.sender), SET_ASIDE, kind="notice",
                     meta={"subject": reply_subject(mail.subject)})
        )  # fmt: skip

    def _inbound(self, mail: ParsedMail, unverified: str | None) -> Inbound:
        sender = Sender(mail.sender, mail.sender_name or mail.sender)
        meta: dict[str, object] = {"subject": mail.subject, "cut": mail.cut}
        if unverified is not None:  # nobody vouched for the address: not its owner's id
            sender = Sender(UNVERIFIED_ID + mail.sender, mail.sender_name or mail.sender)
            meta[UNVERIFIED] = unverified
        return Inbound(
            channel=KIND,
            message_id=mail.message_id,
            conversation=conversation_of(mail),
            sender=sender,
            text=self._text(mail),
            reply_to=Target(KIND, mail.sender),
            thread_refs=mail.thread_refs,
            meta=meta,
        )

    def _save_files(self, mail: ParsedMail, cut: bool) -> list[Attachment]:
        """The mail's attachments saved in the data dir (they came with the mail: nothing
        to fetch later). The last one of a mail cut at EMAIL_MAX_BYTES is incomplete."""
        intake = self.ctx.intake
        if intake is None:
            return []
        saved = []
        for index, part in enumerate(mail.attachments):
            att = Attachment(safe_name(part.name), part.content_type, part.size)
            if cut and index == len(mail.attachments) - 1:
                att.note = "not saved: the mail is over EMAIL_MAX_BYTES, so it arrived cut"
            else:
                try:
                    intake.files.save(att, part.data)
                except OSError as exc:  # the disk refused it: the mail itself still counts
                    log.error("email %s: %s not saved: %s", mail.message_id, att.name, exc)
                    att.note = f"not saved: the disk refused it ({exc.strerror or exc})"
            saved.append(att)
        return saved

    def _text(self, mail: ParsedMail) -> str:
        """What the agents read: the new text, then what they should know about the mail.
        The body comes first so `@Name` at its start still addresses a worker."""
        parts = [mail.text.strip()]
        if not mail.thread_refs and mail.subject:
            parts.append(f"[Subject: {mail.subject}]")
        if mail.attachments and self.ctx.intake is None:
            names = ", ".join(a.describe() for a in mail.attachments)
            parts.append(f"[Attachments, not opened: {names}]")
        if mail.cut:
            parts.append(
                f"[This mail was cut: only its first {self.settings.email_max_chars} "
                "characters were read.]"
            )
        text = "\n\n".join(p for p in parts if p)
        return text or "(an empty mail)"

    def _remember(self, conversation: str, mail: ParsedMail) -> None:
        thread = self.thread(conversation) or Thread(mail.subject)
        thread.subject = thread.subject or mail.subject
        for ref in [*mail.references, *mail.in_reply_to, mail.message_id]:
            thread.add(ref)
        thread.cut = thread.cut or mail.cut
        self._save(conversation, thread)

    # -- threads -----------------------------------------------------------------------
    def thread(self, conversation: str | None) -> Thread | None:
        if not conversation:
            return None
        raw = self.store.get_kv(THREAD_KEY + conversation)
        if raw is None:
            return None
        try:
            return Thread(**json.loads(raw))
        except (ValueError, TypeError):
            log.error("email thread state of %s is corrupt; answering in a new mail", conversation)
            return None

    def _save(self, conversation: str, thread: Thread) -> None:
        self.store.set_kv(THREAD_KEY + conversation, json.dumps(asdict(thread)))

    # -- reading (read_channel) --------------------------------------------------------
    async def read_history(self, target: Target, since: float | None, limit: int) -> Page:
        """The mail between `target`'s address and the bot (the newest `limit`, oldest
        first): what that person wrote, from the journal, and what the bot answered,
        from the outbox's sent records. Email has no channel to read; this is its record."""
        if target.kind != KIND:
            raise ReadRefused(f"{target} is not an email address")
        address = target.address.lower()
        start = since or 0.0
        window = self.store.recent_inbound(KIND, start, time.time() + 1, READ_SCAN)
        lines = [
            Line(m.received_at, m.sender.display, m.text, [a.name for a in m.attachments])
            for m in window
            if m.sender.id.lower() == address
        ][: limit + 1]
        wanted = sorted({str(target.in_thread(None)), f"{KIND}:{address}"})
        lines += [
            Line(at, f"{self.address} (this bot)", m.text, [a.name for a in m.attachments])
            for at, m in self.store.sent_to(wanted, start, limit + 1)
        ]
        lines.sort(key=lambda line: line.at, reverse=True)
        return Page(lines[:limit], cut=len(lines) > limit)

    # -- outbound ----------------------------------------------------------------------
    def _attach(self, mail: EmailMessage, atts: list[Attachment]) -> None:
        """The files as MIME attachments, within EMAIL_MAX_BYTES for the whole mail (what
        this bot takes in, and below the 25 MB most servers take)."""
        total = 0
        for att in atts:
            try:
                data = (self.settings.data_dir / att.path).read_bytes()
            except OSError as exc:
                raise PermanentDeliveryError(f"cannot attach {att.name}: {exc.strerror}") from exc
            total += len(data)
            if total > self.settings.email_max_bytes:
                raise PermanentDeliveryError(
                    f"cannot attach {att.name}: the mail would be over "
                    f"{human_size(self.settings.email_max_bytes)} (EMAIL_MAX_BYTES)"
                )
            maintype, _, subtype = guess_type(att.name).partition("/")
            mail.add_attachment(data, maintype=maintype, subtype=subtype, filename=att.name)

    async def deliver(self, msg: Outbound) -> DeliveryReceipt:
        thread = self.thread(msg.conversation)
        footer = ""
        if thread is not None and thread.cut:
            footer = (
                f"(Note: your last mail was longer than I read; I read only its first "
                f"{self.settings.email_max_chars} characters.)"
            )
        mail = compose(msg, self.address, msg.target.address, thread, footer)
        if msg.attachments:
            await asyncio.to_thread(self._attach, mail, msg.attachments)
        await self.smtp.send(mail, self.address, [msg.target.address])
        message_id = str(mail["Message-ID"])
        if thread is not None and msg.conversation:
            thread.add(message_id)
            thread.cut = False
            self._save(msg.conversation, thread)
        return DeliveryReceipt(platform_id=message_id)
