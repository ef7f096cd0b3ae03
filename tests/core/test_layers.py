"""The import floors of ARCHITECTURE.md, read from the source: `config` imports none of
the project; the bot core (every room of `bot/` but the composition root) imports only
`config` and itself; `agents` and `channels` stand side by side, never importing each
other; only the composition root (`bot/app.py`, `bot/cli.py`, `bot/settle.py`...)
imports everything. Inside the core, each room imports only the rooms below it (ROOMS),
the face sits on them and the operator surface (`bot/ops/`) on the face; a channel takes
from `bot/` only its face, `bot.seam`."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPOSITION = (
    "bot.app",
    "bot.parts",
    "bot.operating",
    "bot.cli",
    "bot.settle",
    "bot.leadership",
    "bot.__main__",
    "bot.evaluation",
    "bot.setup",  # switchboard init and doctor
)
#: who may import whom, by floor
ALLOWED = {
    "config": {"config"},
    "bot": {"config", "bot"},
    "agents": {"config", "bot", "agents"},
    "channels": {"config", "bot", "channels"},
}


def floor(module: str) -> str:
    if any(module == top or module.startswith(top + ".") for top in COMPOSITION):
        return "composition"
    return module.split(".")[0]


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def modules() -> list[tuple[str, Path]]:
    found = []
    for package in ALLOWED:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found.append((name, path))
    return found


@pytest.mark.parametrize(("name", "path"), modules(), ids=lambda v: str(v))
def test_a_module_imports_only_its_floor_and_those_below(name: str, path: Path) -> None:
    mine = floor(name)
    if mine == "composition":
        return
    wrong = sorted(
        m for m in imports(path) if m.split(".")[0] in ALLOWED and floor(m) not in ALLOWED[mine]
    )
    assert not wrong, f"{name} ({mine}) imports {wrong}"


#: the core's rooms, bottom up: a room imports only itself and the rooms before it; the
#: face (`bot.channel_context`, `bot.seam`: what channels are handed and see) sits on all
#: of them, the operator surface (OPS: it reads the core through the view the root hands
#: it, bot/ops/desk.py) on the face, and only the composition root on the operator surface
ROOMS = ("core", "store", "outbox", "approvals", "inbox", "triggers", "ledger")
FACE = ("bot.__init__", "bot.channel_context", "bot.seam")
OPS = "ops"


def room(module: str) -> int:
    """The floor of a `bot` core module: its room's place in ROOMS, the face above, the
    operator surface above the face."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] == OPS:
        return len(ROOMS) + 1
    return ROOMS.index(parts[1]) if len(parts) > 1 and parts[1] in ROOMS else len(ROOMS)


def room_name(floor: int) -> str:
    return (*ROOMS, "face", OPS)[floor]


@pytest.mark.parametrize(
    ("name", "path"), [m for m in modules() if floor(m[0]) == "bot"], ids=lambda v: str(v)
)
def test_a_core_room_imports_only_the_rooms_below_it(name: str, path: Path) -> None:
    mine = room(name)
    if name not in FACE:
        assert mine != len(ROOMS), f"{name} is in no room of the core: add it to ROOMS or FACE"
    wrong = sorted(
        m for m in imports(path) if floor(m) == "bot" and m.startswith("bot.") and room(m) > mine
    )
    assert not wrong, f"{name} ({room_name(mine)}) imports {wrong}"


@pytest.mark.parametrize(
    ("name", "path"), [m for m in modules() if m[0].startswith("bot.ops.")], ids=str
)
def test_the_operator_surface_imports_nothing_of_the_agents(name: str, path: Path) -> None:
    """`bot/ops/` reads and acts through the view the root hands it (`Acts.stop_worker`),
    never an agent's module."""
    wrong = sorted(m for m in imports(path) if m.split(".")[0] == "agents")
    assert not wrong, f"{name} imports {wrong}"


@pytest.mark.parametrize(
    ("name", "path"), [m for m in modules() if m[0].startswith("bot.ops.")], ids=str
)
def test_the_operator_surface_never_imports_the_app(name: str, path: Path) -> None:
    """`bot/ops/` is handed an `OpsView` (bot/ops/desk.py, built by bot/operating.py): it
    imports neither `bot.app` nor any other module of the composition root, not even for
    a type."""
    wrong = sorted(m for m in imports(path) if floor(m) == "composition")
    assert not wrong, f"{name} imports {wrong}: take what it needs from the OpsView"


@pytest.mark.parametrize(
    ("name", "path"), [m for m in modules() if m[0].startswith("channels.")], ids=str
)
def test_a_channel_sees_the_core_only_through_its_face(name: str, path: Path) -> None:
    """`bot/seam.py` is the one list a channel adapter is written against."""
    wrong = sorted(m for m in imports(path) if m.split(".")[0] == "bot" and m != "bot.seam")
    assert not wrong, f"{name} imports {wrong}; take them from bot.seam"


def _takes_from(path: Path) -> set[str]:
    """What a module imports, `from a import b` also read as `a.b` (b may be a module)."""
    found = imports(path)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


#: the store's owner: it composes the tables, and the package's door names it
STORE_OWNER = ("bot.store.core", "bot.store.__init__")


@pytest.mark.parametrize(
    ("name", "path"),
    [m for m in modules() if m[0].startswith("bot.store.") and m[0] not in STORE_OWNER],
    ids=str,
)
def test_a_part_of_the_store_never_imports_the_store(name: str, path: Path) -> None:
    """A table takes the narrow SQL handle (`bot/store/sql.py`), not the `Store` that
    composes it: the owner imports its parts, never the other way."""
    assert "bot.store.core" not in _takes_from(path), f"{name} imports bot.store.core"


def test_no_module_of_the_project_is_over_400_lines() -> None:
    long = {name: n for name, path in modules() if (n := len(path.read_text().splitlines())) > 400}
    assert not long, long


#: each package's one exception root (`raise ... from exc` at its edges, the CLI catches it)
FAMILIES = {"agents": "AgentError", "channels": "ChannelError", "bot.store": "StoreError"}
#: exception classes that stand outside their package's family, and why
OUTSIDE_THE_FAMILY = {
    "agents.team.stop.TurnStopped": "a signal unwinding a turn a person stopped, no failure",
    "bot.store.migrations.SchemaTooNew": "a settings error: run the newer version",
    "bot.store.migrations.MigrationFailed": "a settings error: the person must act",
    "bot.store.migrations.DatabaseUnreachable": "a settings error: fix the database's URL",
    "bot.store.backup.BackupError": "a settings error: the person must act",
    "bot.store.lease.Lost": "leadership's own signal (bot/leadership.py), caught apart",
}
BUILTIN_ERRORS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def _base_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def classes_of(package: str) -> dict[str, list[str]]:
    """Every class of `package`, by dotted name, with its bases' names."""
    found: dict[str, list[str]] = {}
    for name, path in modules():
        if name == package or name.startswith(package + "."):
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.ClassDef):
                    found[f"{name}.{node.name}"] = [_base_name(b) for b in node.bases]
    return found


def exception_families(package: str, root: str) -> tuple[set[str], set[str]]:
    """(the package's exception classes, those deriving from `root`), by dotted name."""
    classes = classes_of(package)
    errors: set[str] = set()
    family: set[str] = set()
    while True:
        error_names = BUILTIN_ERRORS | {q.rsplit(".", 1)[1] for q in errors}
        family_names = {root} | {q.rsplit(".", 1)[1] for q in family}
        new_errors = {
            q for q, bases in classes.items()
            if q.endswith("." + root) or any(b in error_names or b.endswith("Error") for b in bases)
        }  # fmt: skip
        new_family = {
            q for q in new_errors if q.endswith("." + root) or set(classes[q]) & family_names
        }
        if (new_errors, new_family) == (errors, family):
            return errors, family
        errors, family = new_errors, new_family


@pytest.mark.parametrize(("package", "root"), FAMILIES.items())
def test_every_exception_class_of_a_package_derives_from_its_root(package: str, root: str) -> None:
    errors, family = exception_families(package, root)
    assert any(q.endswith("." + root) for q in family), f"{package} has no {root}"
    stray = sorted(errors - family - set(OUTSIDE_THE_FAMILY))
    assert not stray, f"derive them from {root} or list them in OUTSIDE_THE_FAMILY: {stray}"
