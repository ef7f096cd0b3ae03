"""The operator surface of a running Switchboard: `/healthz`, `/metrics`, the dashboard and
its actions (the figures come from `bot.ledger`). Part of the composition root (it reads the
app's agents and channels); `bot.app` builds one `Operator` per app.
"""
