"""The ledger: what the bot did and spent, read back. The audit log, LLM usage and cost,
the daily budget, and the `switchboard status` report built from the store."""
