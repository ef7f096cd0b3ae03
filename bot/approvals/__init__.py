"""Approvals: gated tool calls waiting for a person's decision (the desk), and what a
request and its decision say to people."""
