"""The face of the core that channel adapters see: everything `channels/` takes from
`bot/` comes through here, so a channel is written against this one list.

- messages and targets: what comes in, what goes out, who speaks;
- the channel interface (`BaseChannel`), the store a channel keeps its own rows in, and
  the delivery errors that tell the outbox whether to try again;
- the channel context: what the runtime hands a channel when it starts (people, the
  event log, watermarks, files, reading a channel's history, approvals by code);
- the outbox's attempts (what was sent, what answered) and its pacing;
- `Bounded`, the one bounded map a channel keeps its caches in (issue 33).

The layering test holds `channels/` to this module and `config`.
"""

from __future__ import annotations

from bot.approvals.desk import APPROVAL_CODE, code
from bot.channel_context import ChannelContext
from bot.core.bounded import Bounded
from bot.core.channel import (
    AttemptRow,
    BaseChannel,
    ChannelStore,
    DeliveryError,
    PermanentDeliveryError,
    TransientDeliveryError,
)
from bot.core.events import EventLog
from bot.core.html_text import html_to_text
from bot.core.lazy import lazy
from bot.core.messages import (
    COORDINATOR,
    HUMAN,
    RECEIPT,
    UNVERIFIED,
    Attachment,
    DeliveryReceipt,
    Inbound,
    Outbound,
    Sender,
    Target,
)
from bot.core.notices import SYSTEM_SPEAKER
from bot.core.readout import ago
from bot.core.tasks import cancel_all
from bot.inbox.files import guess_type, human_size, safe_name
from bot.inbox.intake import FetchError, FileTooLarge
from bot.inbox.people import People
from bot.inbox.reading import Line, Page, ReadRefused
from bot.inbox.watermarks import UNKNOWN, Watermarks
from bot.ledger.personal import Mine
from bot.outbox.attempts import Answer, Attempts
from bot.outbox.sender import Pacer, backoff

__all__ = [
    "APPROVAL_CODE",
    "COORDINATOR",
    "HUMAN",
    "RECEIPT",
    "SYSTEM_SPEAKER",
    "UNKNOWN",
    "UNVERIFIED",
    "Answer",
    "Attachment",
    "AttemptRow",
    "Attempts",
    "BaseChannel",
    "Bounded",
    "ChannelContext",
    "ChannelStore",
    "DeliveryError",
    "DeliveryReceipt",
    "EventLog",
    "FetchError",
    "FileTooLarge",
    "Inbound",
    "Line",
    "Mine",
    "Outbound",
    "Pacer",
    "Page",
    "People",
    "PermanentDeliveryError",
    "ReadRefused",
    "Sender",
    "Target",
    "TransientDeliveryError",
    "Watermarks",
    "ago",
    "backoff",
    "cancel_all",
    "code",
    "guess_type",
    "html_to_text",
    "human_size",
    "lazy",
    "safe_name",
]
