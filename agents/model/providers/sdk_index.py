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

The root package too binds what a Messages call never uses: `anthropic/__init__.py`
imports the cloud clients (AWS, Bedrock, Vertex, Foundry, Google Cloud) and the beta tool
helpers and middleware from `anthropic.lib`, and with them the beta resources and ~1,200
modules, ~15 MB resident, ~1 s of CPU (Foundry's client imports every beta resource).
Those `from .lib... import` lines are left out of the file's run and each name they bind
is imported at its first read (`anthropic.AsyncAnthropicVertex` loads Vertex's client
then); whatever the rest of the file sets on such a name (its `__module__`) is set then.
Everything else in the file runs as it is.
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the packages (and every package under them) read as indexes
ROOTS = ("anthropic.types", "anthropic.resources")
#: name -> (submodule, its name there), per package made an index
INDEXES: dict[str, dict[str, tuple[str, str]]] = {}
#: the root package, and its subpackage whose imports there are deferred
ROOT, LATER = "anthropic", "lib"
#: name -> (submodule, its name there, the attributes the root's file set on it)
DEFERRED: dict[str, tuple[str, str, dict[str, Any]]] = {}
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


def deferred(source: str, directory: Path) -> tuple[ast.Module, dict[str, tuple[str, str]]]:
    """The root's `__init__.py` without its `from .lib... import` lines whose names the
    file never reads, and what those lines bind: name -> (submodule, its name there).
    A `*` import is deferred when its package's `__init__.py` is an index."""
    tree = ast.parse(source)
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    kept, names = [], {}
    for node in tree.body:
        bound = _from_later(node, directory)
        if bound is None or read & bound.keys():
            kept.append(node)
        else:
            names.update(bound)
    tree.body = kept
    return tree, names


def _from_later(node: ast.stmt, directory: Path) -> dict[str, tuple[str, str]] | None:
    if not (isinstance(node, ast.ImportFrom) and node.level == 1 and node.module):
        return None
    module = node.module
    if module.split(".")[0] != LATER:
        return None
    if [alias.name for alias in node.names] == ["*"]:
        star = _star(directory.joinpath(*module.split("."), "__init__.py"))
        return None if star is None else {name: (module, name) for name in star}
    if any(alias.name == "*" for alias in node.names):
        return None
    return {alias.asname or alias.name: (module, alias.name) for alias in node.names}


def _star(init: Path) -> list[str] | None:
    """What `from package import *` binds, read from its `__init__.py` when that is an
    index: its `__all__`, or its public names and submodules."""
    try:
        found = index(init.read_text(encoding="utf-8"))
    except OSError:
        return None
    if found is None:
        return None
    if found.every is not None:
        return found.every
    subs = {module.split(".")[0] for module, _ in found.names.values()}
    return sorted(name for name in found.names.keys() | subs if not name.startswith("_"))


class StandIn:
    """Bound in a deferred name's place while the root's file runs: takes what the file
    sets on the name (its `__module__`), to be set on the real object at its first read."""


class DeferredModule(types.ModuleType):
    """The root package: its deferred names are imported at their first read."""

    def __getattr__(self, attr: str) -> Any:
        where = DEFERRED.get(attr) if self.__name__ == ROOT else None
        if where is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")
        module, name, settings = where
        value = getattr(importlib.import_module(f"{self.__name__}.{module}"), name)
        for key, setting in settings.items():
            with contextlib.suppress(TypeError, AttributeError):  # as the file's own loop
                setattr(value, key, setting)
        setattr(self, attr, value)
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(DEFERRED))


class DeferringLoader(importlib.machinery.SourceFileLoader):
    """The root package's own loader (its file, its resources), its body run without the
    deferred imports (compiled from the tree, never cached)."""

    def __init__(
        self, fullname: str, path: str, tree: ast.Module, names: dict[str, tuple[str, str]]
    ) -> None:
        super().__init__(fullname, path)
        self.tree = tree
        self.names = names

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return DeferredModule(spec.name)

    def get_code(self, fullname: str) -> types.CodeType:
        return compile(self.tree, self.path, "exec", dont_inherit=True)

    def exec_module(self, module: types.ModuleType) -> None:
        stand_ins = {name: StandIn() for name in self.names}
        vars(module).update(stand_ins)
        super().exec_module(module)
        for name, stand_in in stand_ins.items():
            if vars(module).get(name) is stand_in:  # not bound anew by the file
                del vars(module)[name]
                DEFERRED[name] = (*self.names[name], vars(stand_in))


class IndexFinder(importlib.abc.MetaPathFinder):
    """Finds the packages under ROOTS as the path finder does, then makes an index of
    each whose `__init__.py` only re-exports."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == ROOT:
            return _root(path)
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


def _root(path: Sequence[str] | None) -> importlib.machinery.ModuleSpec | None:
    spec = importlib.machinery.PathFinder.find_spec(ROOT, path)
    origin = spec.origin if spec is not None else None
    if spec is None or not origin or not origin.endswith("__init__.py"):
        return spec
    init = Path(origin)
    tree, names = deferred(init.read_text(encoding="utf-8"), init.parent)
    if names:
        spec.loader = DeferringLoader(ROOT, origin, tree, names)
    return spec


def install() -> None:
    """Before the SDK's first import; once (later calls do nothing). An SDK imported
    already stays as it is."""
    with _lock:
        if not any(isinstance(finder, IndexFinder) for finder in sys.meta_path):
            sys.meta_path.insert(0, IndexFinder())
