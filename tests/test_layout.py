"""The package's layout: every module imports on its own, astad's modules
import each other without a cycle, every relative import names a module
that exists, and no module grows past ~600 lines (DESIGN.md, "The layout
this grows into")."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "astad"

#: the most lines a module may have (the style rule is ~600)
MAX_LINES = 650

#: modules allowed over the limit while they are being split (none since ir/, optimise/, codegen/ and
#: rules/ landed)
TOO_LONG: set[str] = set()


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: pathlib.Path) -> list[tuple[str, int]]:
    """The astad modules ``name`` imports, with the line of each import: every
    import in the file (in functions and under ``if TYPE_CHECKING`` too), with
    ``from .x import y`` naming the module ``x.y`` when that is one."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "astad"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "astad":
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.append((sub if sub in MODULES else module, node.lineno))
    return found


def _graph() -> dict[str, set[str]]:
    return {name: {m for m, _ in _imports(name, path) if m != name} for name, path in MODULES.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph``, or None (depth-first search, an explicit stack)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path, todo = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                todo.append(iter(sorted(graph[nxt])))
    return None


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_relative_imports_name_modules_that_exist() -> None:
    missing = [f"{MODULES[name].relative_to(ROOT)}:{line}: {m}" for name, path in MODULES.items()
               for m, line in _imports(name, path) if m not in MODULES]
    assert not missing, missing


def test_no_import_cycle_among_astad_modules() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_modules_are_short() -> None:
    long = {name: n for name, path in MODULES.items()
            if (n := len(path.read_text().splitlines())) > MAX_LINES and name not in TOO_LONG}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_every_module_imports_in_a_fresh_interpreter() -> None:
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    done = subprocess.run([sys.executable, "-c", code, *MODULES], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_module_compiles_without_a_warning():
    """No invalid escape sequence (``"\\w"`` in a docstring: a DeprecationWarning at import, a SyntaxWarning from
    Python 3.12, an error later) nor any other compile-time warning in astad's modules."""
    import warnings

    found = []
    for name, path in MODULES.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compile(path.read_text(encoding="utf-8"), str(path), "exec")
        found += [f"{name}:{w.lineno}: {w.message}" for w in caught]
    assert not found, found
