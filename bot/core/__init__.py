"""The core's shared vocabulary: message types, the message bus, the event log, the clock,
the channel seam, what the runtime tells people, and small bounded helpers (lazy imports,
log redaction, HTML to text, image sizes, live progress). Imports only `config` and the
store."""
