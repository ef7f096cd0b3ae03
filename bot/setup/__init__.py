"""Setting Switchboard up: `switchboard init` (a config, a `.env`, the Slack manifest)
and `switchboard doctor` (every check of a working install, one line each).

Part of the composition root: it may import every floor.
"""
