"""Imports point down the layers of DESIGN.md §1, never up; the core imports no optional extra.

Also: no module reaches into the private names of the session layer's objects from another module (`Turn` and
the agent write through `Session.writer`, STYLE.md Part 3).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import stellate

SRC = Path(stellate.__file__).resolve().parent
SHARED = {"errors", "_version", "observability"}
ALLOWED: dict[str, set[str]] = {
    "log": set(),
    "store": {"log"},
    "llm": {"log"},
    "session": {"log", "store", "llm"},
    "engine": {"log", "store", "llm", "session"},
    "agent": {"log", "store", "llm", "session", "engine"},
    "testing": {"log", "store", "llm"},
    "sync": {"log", "store", "llm", "session", "engine", "agent"},
    "server": {"log", "store", "llm", "session", "engine", "agent"},
    "client": {"log", "store", "llm", "session", "engine", "agent", "sync"},
    "cli": {"log", "store", "llm", "session", "engine", "agent", "sync", "server"},
}


def stellate_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "stellate" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_every_layer_imports_only_layers_below_it() -> None:
    violations = []
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC)
        layer = relative.parts[0].removesuffix(".py")
        if layer in SHARED or layer == "__init__":
            continue
        assert layer in ALLOWED, f"{relative} is in no known layer"
        for imported in stellate_imports(path) - SHARED - {layer}:
            if imported not in ALLOWED[layer]:
                violations.append(f"{relative} imports stellate.{imported}")
    assert violations == []


def private_names_defined(path: Path) -> set[str]:
    """Private methods and ``self._x`` attributes a module defines."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("_"):
            found.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr.startswith("_"):
            found.add(node.attr)
    return {name for name in found if not name.startswith("__")}


def private_names_used_on_others(path: Path) -> set[str]:
    """Private attributes a module reads on objects other than ``self`` and ``cls``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.add(node.attr)
    return found


def test_no_module_reaches_into_the_private_names_of_another_session_module() -> None:
    writers = ("session.py", "writer.py", "estimates.py", "lease.py")
    defined = {SRC / "session" / name: private_names_defined(SRC / "session" / name) for name in writers}
    violations = []
    for path in SRC.rglob("*.py"):
        used = private_names_used_on_others(path)
        for owner, names in defined.items():
            if owner != path and used & names:
                reached = ", ".join(sorted(used & names))
                violations.append(f"{path.relative_to(SRC)} uses {reached} of {owner.relative_to(SRC)}")
    assert violations == []


def test_core_import_loads_no_optional_extra() -> None:
    code = (
        "import sys, stellate, stellate.sync, stellate.store, stellate.llm;"
        "extras = ('httpx', 'psycopg', 'psycopg_pool', 'tiktoken', 'llama_cpp', 'rich', 'opentelemetry', 'mcp',"
        " 'fastapi', 'uvicorn', 'aiohttp');"
        "print(sorted(m for m in extras if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_top_level_exports_only_the_facade() -> None:
    assert sorted(stellate.__all__) == sorted(
        [
            "Agent",
            "Approval",
            "ArchivedError",
            "ConflictError",
            "ForkError",
            "ForkOptions",
            "ForkProfile",
            "FormatError",
            "InvariantError",
            "LLMError",
            "NotFoundError",
            "ProviderError",
            "Reflector",
            "SchemaError",
            "SessionConfig",
            "SessionDigest",
            "SplitGuard",
            "StellateError",
            "StoreError",
            "ToolContext",
            "ToolResult",
            "TopologyNode",
            "UsageError",
            "__version__",
            "load_skills",
            "tool",
        ]
    )
    for name in stellate.__all__:
        assert getattr(stellate, name) is not None
