"""The SQL of each schema version, frozen once shipped (bot/store/migrations.py runs them).

`V1` is the schema the main of a5b872b created (the last version before numbered
versions); every statement is idempotent (`IF NOT EXISTS`), so a data dir written
without a version number, by that main or a later one, runs them all safely. A change
to the schema is a new constant here and a new entry in `bot/store/migrations.py`, never an
edit of a shipped one.
"""

V1_TABLES = """
CREATE TABLE IF NOT EXISTS inbound (
    id INTEGER PRIMARY KEY, channel TEXT NOT NULL, message_id TEXT NOT NULL,
    conversation TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending',
    received_at REAL NOT NULL, UNIQUE (channel, message_id));
CREATE INDEX IF NOT EXISTS inbound_status ON inbound (status);
CREATE TABLE IF NOT EXISTS mail (
    id INTEGER PRIMARY KEY, recipient TEXT NOT NULL, payload TEXT NOT NULL,
    created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS mail_recipient ON mail (recipient);
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, target TEXT NOT NULL,
    payload TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL, created_at REAL NOT NULL, sent_at REAL, error TEXT, receipt TEXT);
DROP INDEX IF EXISTS outbox_pending;
CREATE INDEX IF NOT EXISTS outbox_target ON outbox (target, status, seq);
CREATE TABLE IF NOT EXISTS conversations (
    agent TEXT NOT NULL, key TEXT NOT NULL, target TEXT, messages TEXT NOT NULL,
    updated_at REAL NOT NULL, PRIMARY KEY (agent, key));
CREATE TABLE IF NOT EXISTS workers (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, task TEXT NOT NULL, status TEXT NOT NULL,
    origin_conversation TEXT, origin_target TEXT, turns INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT '{}', error TEXT, created_at REAL NOT NULL,
    updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS questions (
    id TEXT PRIMARY KEY, worker TEXT NOT NULL, question TEXT NOT NULL, target TEXT NOT NULL,
    conversation TEXT, refs TEXT NOT NULL DEFAULT '[]', status TEXT NOT NULL DEFAULT 'open',
    asked_at REAL NOT NULL, answered_at REAL, answer TEXT);
CREATE INDEX IF NOT EXISTS questions_open ON questions (status);
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS quarantine (
    id INTEGER PRIMARY KEY, source TEXT NOT NULL, row_key TEXT NOT NULL, payload TEXT,
    error TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS attempts (
    outbox_id TEXT NOT NULL, part TEXT NOT NULL, state TEXT NOT NULL, detail TEXT NOT NULL,
    at REAL NOT NULL, PRIMARY KEY (outbox_id, part));
CREATE TABLE IF NOT EXISTS health (
    channel TEXT PRIMARY KEY, state TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '',
    updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS triggers (
    id TEXT PRIMARY KEY, type TEXT NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL,
    source TEXT NOT NULL, created_by TEXT NOT NULL, conversation TEXT, origin_target TEXT,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, last_fired_at REAL,
    state TEXT NOT NULL DEFAULT '{}');
CREATE INDEX IF NOT EXISTS triggers_status ON triggers (status);
CREATE TABLE IF NOT EXISTS trigger_runs (
    trigger_id TEXT NOT NULL, fire_key TEXT NOT NULL, outcome TEXT NOT NULL,
    at REAL NOT NULL, detail TEXT, PRIMARY KEY (trigger_id, fire_key));
CREATE TABLE IF NOT EXISTS llm_usage (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, agent TEXT NOT NULL, kind TEXT NOT NULL,
    conversation TEXT, model TEXT NOT NULL, outcome TEXT NOT NULL,
    input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL, cache_write_tokens INTEGER NOT NULL,
    cost_usd REAL, seconds REAL NOT NULL);
CREATE INDEX IF NOT EXISTS llm_usage_at ON llm_usage (at);
CREATE INDEX IF NOT EXISTS outbox_status ON outbox (status, created_at);
CREATE INDEX IF NOT EXISTS workers_updated ON workers (updated_at);
CREATE INDEX IF NOT EXISTS conversations_updated ON conversations (updated_at);
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY, agent TEXT NOT NULL, conversation TEXT NOT NULL,
    speaker TEXT NOT NULL, tool TEXT NOT NULL, args TEXT NOT NULL, tool_use_id TEXT NOT NULL,
    target TEXT NOT NULL, refs TEXT NOT NULL DEFAULT '[]', status TEXT NOT NULL,
    settled INTEGER NOT NULL DEFAULT 0, requested_at REAL NOT NULL, deadline REAL,
    decided_by TEXT, reason TEXT, decided_at REAL, held TEXT NOT NULL DEFAULT '{}');
CREATE INDEX IF NOT EXISTS approvals_open ON approvals (settled, status);
"""
#: v2: who asked for an approval and how it was decided (the audit log's people)
V2_APPROVAL_COLUMNS = (
    ("requester", "TEXT"), ("requester_id", "TEXT"), ("decider_id", "TEXT"), ("how", "TEXT"),
)  # fmt: skip
#: v3: the append-only audit log (bot/store/audit.py)
V3_AUDIT = """
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY, at REAL NOT NULL, type TEXT NOT NULL, agent TEXT NOT NULL,
    conversation TEXT, person TEXT, person_id TEXT, tool TEXT, args_digest TEXT,
    resource TEXT, action TEXT, approval_id TEXT, decider TEXT, decider_id TEXT, how TEXT,
    outcome TEXT);
CREATE INDEX IF NOT EXISTS audit_at ON audit (at);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
"""
#: v4: the journal read by time (the dashboard's message views)
V4_INBOUND_RECEIVED = (
    "CREATE INDEX IF NOT EXISTS inbound_received ON inbound (received_at, channel);"
)

#: v5: indexes every journaled message no longer writes: the inbound status index holds
#: only the rows still to route, and the mail index no query used is gone
V5_LEANER_INDEXES = """
DROP INDEX IF EXISTS inbound_status;
CREATE INDEX IF NOT EXISTS inbound_open ON inbound (status) WHERE status <> 'routed';
DROP INDEX IF EXISTS mail_recipient;
"""

#: v6: retention (bot/store/prune.py): usage detail rolled up into daily sums, and the
#: audit log deletable only below its horizon, which only the pruner moves (by age)
V6_RETENTION = """
CREATE TABLE IF NOT EXISTS usage_daily (
    day TEXT NOT NULL, agent TEXT NOT NULL, kind TEXT NOT NULL, model TEXT NOT NULL,
    outcome TEXT NOT NULL, calls INTEGER NOT NULL, input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL, cache_read_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL, unpriced INTEGER NOT NULL,
    seconds REAL NOT NULL, PRIMARY KEY (day, agent, kind, model, outcome));
CREATE TABLE IF NOT EXISTS audit_horizon (id INTEGER PRIMARY KEY CHECK (id = 1),
    before REAL NOT NULL);
INSERT INTO audit_horizon (id, before) VALUES (1, 0) ON CONFLICT DO NOTHING;
CREATE INDEX IF NOT EXISTS trigger_runs_at ON trigger_runs (at);
DROP TRIGGER IF EXISTS audit_no_delete;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
    WHEN OLD.at >= (SELECT before FROM audit_horizon WHERE id = 1)
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
"""

#: v7: what was delivered, by when: `catchup` reads the newest deliveries since a time
#: backwards from the newest and stops at its bound (no scan of the outbox, no sort)
V7_OUTBOX_SENT = "CREATE INDEX IF NOT EXISTS outbox_sent ON outbox (status, sent_at);"

#: v8: a conversation's messages one row each: a checkpoint writes the messages that are
#: new or changed since the last, not the whole transcript again (bot/store/agents.py);
#: `digest` says which stored row a new save can keep ('' for the rows moved here: the
#: first save after the move writes its conversation once more). A conversation's rows
#: go with it (the pruning deletes the conversation).
V8_CONVERSATION_MESSAGES = """
CREATE TABLE IF NOT EXISTS conversation_messages (
    agent TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, digest TEXT NOT NULL,
    message TEXT NOT NULL, PRIMARY KEY (agent, key, seq));
INSERT INTO conversation_messages (agent, key, seq, digest, message)
    SELECT c.agent, c.key, m.key, '', m.value FROM conversations c, json_each(CASE
        WHEN json_valid(c.messages) AND json_type(c.messages) = 'array' THEN c.messages
        ELSE '[]' END) m
    WHERE m.type = 'object'
    ON CONFLICT DO NOTHING;
ALTER TABLE conversations DROP COLUMN messages;
CREATE TRIGGER IF NOT EXISTS conversation_gone AFTER DELETE ON conversations
    BEGIN DELETE FROM conversation_messages WHERE agent = OLD.agent AND key = OLD.key; END;
"""

#: v9: the outbox's indexes written once per message where they can be: a row's status
#: changes once (queued -> sent), so an index that holds the status moved its entry then.
#: Now each index holds only the rows of one state (a new entry at the sending, not a move)
#: or no status at all: `outbox_by_target` (what was said to a target), `outbox_waiting`
#: (the rows still to deliver), `outbox_delivered` (the catch-up's and the pruning's
#: deliveries by time), `outbox_given_up` (failed or quarantined, rare).
V9_OUTBOX_PARTIAL = """
DROP INDEX IF EXISTS outbox_status;
DROP INDEX IF EXISTS outbox_sent;
DROP INDEX IF EXISTS outbox_target;
CREATE INDEX IF NOT EXISTS outbox_by_target ON outbox (target, seq);
CREATE INDEX IF NOT EXISTS outbox_waiting ON outbox (target, seq) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS outbox_delivered ON outbox (sent_at) WHERE status = 'sent';
CREATE INDEX IF NOT EXISTS outbox_given_up ON outbox (created_at)
    WHERE status IN ('failed', 'corrupt');
"""
