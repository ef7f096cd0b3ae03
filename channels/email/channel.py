"""The email channel: dispatch between mail and the core (its channel context).

Inbound: every new mail from the IMAP watcher is parsed in a worker thread (the
event loop never waits on a stranger's MIME or HTML), filtered (an unclear From,
machine mail, the allow-list, a From domain the mail server did not verify, loops)
and either refused (logged, an event; no model sees it, nobody is answered) or
turned into an `Inbound` whose conversation is its thread (`threads.py`: a thread
belongs to the people of its first mail; anyone else starts their own) and journaled
by `ctx.accept` — all before the watcher marks it \\Seen. Mail nobody verified, taken
under EMAIL_UNVERIFIED=accept, comes from `unverified:<address>` and is marked so
(`UNVERIFIED`): the core takes it as an unlisted sender's, deciding nothing. A mail that
fails past the filters is set aside once: its sender is told, nothing retries it. The
thread's subject, References chain and people are kept in the store so answers thread
correctly. Outbound: `deliver` composes the mail for the conversation's thread (or a
new mail: a worker's question, a notice, anyone not of the thread) and sends it over
SMTP; the receipt's `platform_id` is the Message-ID, which the human node records on a
worker's open question so the person's reply finds that worker. Email shows nothing of
the work under way, so a verified person's mail is marked `RECEIPT`: when it answers a
worker's question, the core acknowledges it once in its thread. A verified person's
mail with the subject `catchup` is answered by mail with their catchup (no agent reads
it; docs/conversations.md).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from email.message import EmailMessage

from bot.seam import (
    RECEIPT,
    UNVERIFIED,
    Attachment,
    BaseChannel,
    ChannelContext,
    DeliveryReceipt,
    Inbound,
    Line,
    Outbound,
    Page,
    PermanentDeliveryError,
    ReadRefused,
    Sender,
    Target,
    cancel_all,
    guess_type,
    human_size,
    safe_name,
)
from channels.email.compose import Thread, compose, reply_subject
from channels.email.imap import ImapWatcher
from channels.email.inside import answers_inside
from channels.email.oauth_providers import token_source
from channels.email.parse import ParsedMail, parse_mail
from channels.email.safety import UNVERIFIED_ID, Policy, RateGuard, check
from channels.email.smtp import SmtpSender
from channels.email.threads import KIND, Place, Threads
from config.settings import Settings

log = logging.getLogger(__name__)

READ_SCAN = 5_000  # newest journaled mails searched for one address
PARSE_SECONDS = 30.0  # one mail's parsing, in a worker thread, at the most
#: a mail with one of these subjects asks for the sender's catchup
CATCHUP = ("catchup", "catch up")


TAKEN_UNVERIFIED = (
    "EMAIL_UNVERIFIED=accept: mail whose sender the mail server did not verify is taken "
    "as from an unlisted sender (it decides no approval and answers no question; anyone "
    "can write as any allowed address). Set EMAIL_AUTHSERV_ID and remove EMAIL_UNVERIFIED "
    "to verify senders."
)
OWN_THREAD = (
    "[This mail answers an email thread its sender is not part of, so it starts a new "
    "conversation; nothing of that thread is known here.]"
)
SET_ASIDE = (
    "Your mail could not be processed and was set aside; nobody has read it. "
    "Please send it again without attachments, or with shorter file names."
)


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
        self.threads = Threads(ctx.store, ctx.people, self.address)
        tokens = token_source(settings)  # EMAIL_AUTH=oauth2: one token source for both
        self.smtp = SmtpSender(settings, tokens)
        self.watcher = ImapWatcher(settings, self.store, ctx.events, self.handle, self._health,
                                   tokens)  # fmt: skip
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
        if self.smtp.problem is not None:  # mail cannot go out: that is the news
            return ("signin-failed", self.smtp.problem)
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
        if mail.subject.strip().lower() in CATCHUP:
            self._catchup(mail, verdict.unverified)
            return
        try:
            await self._read_inside(mail)
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

    async def _read_inside(self, mail: ParsedMail) -> None:
        """A reply to a worker's question mail: answers typed inside its quote join the
        text (or take the place of the whole mail, handed on when nothing was outside the
        quote)."""
        own = self.threads.quoted_question(mail)
        found = [] if own is None else await asyncio.to_thread(answers_inside, mail.body, own)
        if found:
            whole = mail.text.strip() == mail.body.replace("\r\n", "\n").strip()
            inside = "\n".join(found).strip()
            text = inside if whole else f"{mail.text.strip()}\n\n{inside}"
            mail.text = text[: self.settings.email_max_chars]

    def _accept(self, mail: ParsedMail, unverified: str | None, cut: bool) -> None:
        place = self.threads.place(mail)
        if place.stranger:
            log.warning("email %s from %r answers a thread it is not part of: a new "
                        "conversation", mail.message_id, mail.sender)  # fmt: skip
            self.ctx.events.emit("mail.own_thread", KIND, sender=mail.sender, id=mail.message_id)
        inbound = self._inbound(mail, place, unverified)
        inbound.attachments = self._save_files(mail, cut)
        with self.store.tx():
            self.threads.add(place, mail)
            self.ctx.accept(inbound)

    def _catchup(self, mail: ParsedMail, unverified: str | None) -> None:
        """A mail whose subject is `catchup`: what the agents said to its sender since
        they last spoke, by mail to that (verified) address, through the outbox, once per
        Message-ID (a second copy queues the same row). No agent reads it."""
        if unverified is not None:  # the answer would go to whoever the From names
            self._refuse(mail, f"catchup from a sender nobody verified ({unverified})")
            return
        text = self.ctx.catchup_for(KIND, mail.sender, email=mail.sender)
        key = hashlib.sha256(mail.message_id.encode()).hexdigest()[:32]
        self.ctx.notify(
            Outbound("switchboard", Target(KIND, mail.sender), text, kind="notice",
                     meta={"subject": reply_subject(mail.subject)}, id=f"catchup-{key}")
        )  # fmt: skip

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

    def _inbound(self, mail: ParsedMail, place: Place, unverified: str | None) -> Inbound:
        sender = Sender(mail.sender, mail.sender_name or mail.sender)
        meta: dict[str, object] = {"subject": mail.subject, "cut": mail.cut}
        if unverified is not None:  # nobody vouched for the address: not its owner's id
            sender = Sender(UNVERIFIED_ID + mail.sender, mail.sender_name or mail.sender)
            meta[UNVERIFIED] = unverified
        else:  # a verified person (machine mail was refused): an answer gets a receipt
            meta[RECEIPT] = True
        return Inbound(
            channel=KIND,
            message_id=mail.message_id,
            conversation=place.conversation,
            sender=sender,
            text=self._text(mail, place.stranger and not place.refs),
            reply_to=Target(KIND, mail.sender),
            thread_refs=place.refs,
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

    def _text(self, mail: ParsedMail, stranger: bool = False) -> str:
        """What the agents read: the new text, then what they should know about the mail
        (a `stranger` to the thread it answers is told so; a reply to a request mail is
        left as written, to be read as a decision). The body comes first so `@Name` at
        its start still addresses a worker."""
        parts = [mail.text.strip()]
        if (stranger or not mail.thread_refs) and mail.subject:
            parts.append(f"[Subject: {mail.subject}]")
        if stranger:
            parts.append(OWN_THREAD)
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

    # -- threads -----------------------------------------------------------------------
    def thread(self, conversation: str | None) -> Thread | None:
        return self.threads.get(conversation)

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
            for at, m in self.store.outbox.sent_to(wanted, start, limit + 1)
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
        thread = self.threads.thread_for(msg)
        footer = ""
        if thread is not None and thread.cut:
            footer = (
                f"(Note: your last mail was longer than I read; I read only its first "
                f"{self.settings.email_max_chars} characters.)"
            )
        key = self.threads.message_key()
        mail = compose(msg, self.address, msg.target.address, thread, footer, key=key)
        if msg.attachments:
            await asyncio.to_thread(self._attach, mail, msg.attachments)
        await self.smtp.send(mail, self.address, [msg.target.address])
        message_id = str(mail["Message-ID"])
        self.threads.sent(msg, thread, message_id)
        return DeliveryReceipt(platform_id=message_id)
