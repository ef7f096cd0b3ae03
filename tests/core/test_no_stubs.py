"""No product code stands in for a missing part by raising `NotImplementedError`: a
loop is handed its role (agents/loop/role.py), a channel's live messages subclass an
abstract base (channels/live_messages.py), so what is missing fails when it is made
(or in mypy), never in the middle of a person's turn."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _raises_not_implemented(node: ast.AST) -> bool:
    if not isinstance(node, ast.Raise) or node.exc is None:
        return False
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def test_no_product_code_raises_not_implemented() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for top in ("bot", "agents", "channels", "config")
        for path in sorted((ROOT / top).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if _raises_not_implemented(node)
    ]
    assert found == []
