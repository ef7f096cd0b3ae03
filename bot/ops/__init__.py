"""The operator surface of a running Switchboard: `/healthz`, `/metrics`, the dashboard,
LLM usage and cost, and the daily budget. Part of the composition root (it reads the
app's agents and channels); `bot.app` builds one `Operator` per app.
"""
