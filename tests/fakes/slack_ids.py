"""The fake Slack workspace's fixed ids (the bot, its team and app)."""

BOT_USER = "UBOT"
BOT_ID = "BBOT"
TEAM = "T0FAKE"
APP_ID = "A0FAKE"
