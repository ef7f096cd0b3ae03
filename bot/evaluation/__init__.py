"""`switchboard eval`: scripted team tasks run through the real runtime against a local
Slack, scored by what was posted and which tools ran (docs/eval.md).

Part of the composition root (it builds the App). Importing this package is cheap:
the runtime loads only when a run starts (`bot.evaluation.command`).
"""
