"""The operator surface of a running Switchboard: `/healthz`, `/metrics`, the dashboard and
its actions, the HTTP API and the hooks (the figures come from `bot.ledger`). It sits on
the core's floors and reads through the view the composition root hands it
(`bot/ops/desk.py`, built in `bot/operating.py`), never the app.
"""
