"""The agents' errors: one family, whatever failed below.

Each edge maps what it calls once (`raise ... from exc`): the model providers' SDK errors
become `ModelUnavailable`/`ModelError` (agents/model/providers/), an MCP server's become
`CallFailed` (agents/mcp/client.py). The classes live beside the code that raises them;
each derives from `AgentError`, and tests/core/test_layers.py checks that every exception
class of `agents/` does (or is listed there with its reason). The CLI catches
`AgentError` as it catches settings and store errors.
"""

from __future__ import annotations


class AgentError(Exception):
    """An agent, its model or one of its tools could not do what was asked."""
