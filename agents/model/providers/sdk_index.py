"""The anthropic SDK's package indexes, read name by name (issue 33, lean at rest).

`import anthropic` runs `anthropic/types/__init__.py`, `anthropic/types/beta/__init__.py`,
`anthropic/resources/__init__.py` ...: files that only re-export every class of their
submodules (`from .beta_message import BetaMessage as BetaMessage`). One import of one
beta error class (`anthropic._error_classes`), or of `resources.beta` (the Vertex
client's), runs such a file and with it every submodule it names: ~3,200 modules,
~41 MB resident, most of them the beta and organization APIs a Messages call never
uses. Installed (`install()`, before anything imports the SDK), a package whose
`__init__.py` is only such re-exports becomes an index: each name is imported from its
submodule at its first read, then kept as an attribute, the same object the eager file
would have bound (`__file__`, `__path__`, `__spec__` and `__all__` as before). A package
whose `__init__` does anything else loads as usual. tests/model/test_sdk_index.py checks,
against the installed SDK, that every name resolves to the object the eager import
gives, and fails when the SDK's layout changes under it.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: the packages (and every package under them) read as indexes
ROOTS = ("anthropic.types", "anthropic.resources")
#: name -> (submodule, its name there), per package made an index
INDEXES: dict[str, dict[str, tuple[str, str]]] = {}
_lock = threading.Lock()


@dataclass(slots=True)
class Index:
    """What a package's `__init__.py` binds: names from its submodules, `__all__`, and
    the `__future__` features it imports (bound as the file binds them)."""

    names: dict[str, tuple[str, str]] = field(default_factory=dict)
    every: list[str] | None = None
    futures: list[tuple[str, str]] = field(default_factory=list)  # (bound as, feature)


def index(source: str) -> Index | None:
    """What an `__init__.py` binds; None when it does anything else than a docstring,
    `from __future__ import ...`, `from .sub import Name [as Name]` and a literal
    `__all__`."""
    found = Index()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            found.futures += [(alias.asname or alias.name, alias.name) for alias in node.names]
            continue
        if isinstance(node, ast.Assign) and _targets(node) == ["__all__"]:
            found.every = list(ast.literal_eval(node.value))
            continue
        if not (isinstance(node, ast.ImportFrom) and node.level == 1 and node.module):
            return None
        for alias in node.names:
            if alias.name == "*":
                return None
            found.names[alias.asname or alias.name] = (node.module, alias.name)
    return found


def _targets(node: ast.Assign) -> list[str | None]:
    return [getattr(target, "id", None) for target in node.targets]


class IndexModule(types.ModuleType):
    """A package whose names load from their submodules at their first read."""

    def __getattr__(self, attr: str) -> Any:
        names = INDEXES.get(self.__name__, {})
        where = names.get(attr)
        if where is not None:
            value = getattr(importlib.import_module(f"{self.__name__}.{where[0]}"), where[1])
        elif any(module.split(".")[0] == attr for module, _ in names.values()):
            value = importlib.import_module(f"{self.__name__}.{attr}")  # bound as the file did
        else:
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")
        setattr(self, attr, value)
        return value

    def __dir__(self) -> list[str]:
        names = INDEXES.get(self.__name__, {})
        subs = {module.split(".")[0] for module, _ in names.values()}
        return sorted(set(super().__dir__()) | set(names) | subs)


class IndexLoader(importlib.machinery.SourceFileLoader):
    """The package's own loader (its file, its resources), but its body not run."""

    def __init__(self, fullname: str, path: str, found: Index) -> None:
        super().__init__(fullname, path)
        self.found = found

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return IndexModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        if self.found.every is not None:
            setattr(module, "__all__", list(self.found.every))  # noqa: B010
        for bound, feature in self.found.futures:
            setattr(module, bound, getattr(__future__, feature))


class IndexFinder(importlib.abc.MetaPathFinder):
    """Finds the packages under ROOTS as the path finder does, then makes an index of
    each whose `__init__.py` only re-exports."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not any(fullname == root or fullname.startswith(f"{root}.") for root in ROOTS):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        origin = spec.origin if spec is not None else None
        if spec is None or not spec.submodule_search_locations or not origin:
            return spec
        if not origin.endswith("__init__.py"):
            return spec
        with open(origin, encoding="utf-8") as source:
            found = index(source.read())
        if found is None:
            return spec
        INDEXES[fullname] = found.names
        spec.loader = IndexLoader(fullname, origin, found)
        return spec


def install() -> None:
    """Before the SDK's first import; once (later calls do nothing). An SDK imported
    already stays as it is."""
    with _lock:
        if not any(isinstance(finder, IndexFinder) for finder in sys.meta_path):
            sys.meta_path.insert(0, IndexFinder())
