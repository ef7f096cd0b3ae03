"""Durable state: the one interface the rest of the bot uses (`bot.store.core.Store`), its
tables by part, the row types and their decoders, the schema versions and their
migrations, and backup and restore. No module outside this room speaks SQL to the bot's
database (the scheduler's job store in `bot/triggers/jobstore.py` keeps APScheduler's own)."""
