"""The outbox: every message to a person is stored, then delivered once (attempt records
across crashes), paced to each platform's limits."""
