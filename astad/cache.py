"""Caches of generated derivatives: in memory (per process) and on disk.

The disk cache lets a fresh process skip the transformation.  An entry is
found by a hash of astad's version and its own source code, the function's file, name and source, and
the abstract argument signature; it records every global the transformation
read (the functions it inlined, by a hash of their source; constants, by
their abstract type; numpy objects, by name) and is used only if all of them
still match.  Entries are written atomically; anything unreadable, stale or
unwritable is ignored and the derivative is recomputed — never a crash.

Environment: ``ASTAD_CACHE_DIR`` sets the directory (default: the user's
cache directory, e.g. ``~/.cache/astad``); ``ASTAD_DISK_CACHE=0`` turns the
disk cache off (as does ``astad.config.disk_cache = False``).
"""

from __future__ import annotations

import builtins
import hashlib
import inspect
import json
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from . import ir
from .frontend import Parsed, abstract
from .pipeline import Derivative, compile_source


class Config:
    """Switches; ``astad.config.disk_cache = False`` turns the disk cache off;
    ``memory_cache_size`` is how many derivatives each in-memory cache keeps (the
    least recently used are forgotten first)."""

    disk_cache: bool = True
    memory_cache_size: int = 128


config = Config()

FORMAT = 1


def cache_dir() -> Path | None:
    """Where derivatives are cached on disk, or None when the disk cache is off."""
    if not config.disk_cache or os.environ.get("ASTAD_DISK_CACHE", "1").lower() in ("0", "false", "no", "off"):
        return None
    if os.environ.get("ASTAD_CACHE_DIR"):
        return Path(os.environ["ASTAD_CACHE_DIR"])
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "astad"


def fingerprint(obj: Any) -> str:
    """What must not change for a cached derivative to stay valid."""
    inner = getattr(obj, "__astad_function__", obj)
    if isinstance(inner, types.FunctionType):
        try:
            src = inspect.getsource(inner)
        except (OSError, TypeError):
            src = repr(inner.__code__.co_code)
        text = f"{src}{inner.__defaults__!r}{inner.__code__.co_filename}:{inner.__code__.co_firstlineno}"
        return "fn:" + hashlib.sha256(text.encode()).hexdigest()
    if isinstance(obj, types.ModuleType):
        return "module:" + obj.__name__
    if isinstance(obj, (bool, int, float, np.ndarray, np.generic)):
        try:
            t = abstract(obj, "constant")
        except Exception:
            return "other:" + type(obj).__qualname__
        if isinstance(obj, (bool, int)):
            return f"const:{t}:{obj!r}"
        return f"const:{t}"
    return "obj:" + getattr(obj, "__module__", "") + "." + getattr(obj, "__qualname__", type(obj).__qualname__)


def resolve(root: Any, path: Sequence[str]) -> Any:
    """The object a path of global names leads to, from ``root``'s globals."""
    obj: Any = root
    for name in path:
        fn = getattr(obj, "__astad_function__", obj)
        g = fn.__globals__
        if name in g:
            obj = g[name]
        else:
            obj = getattr(builtins, name)
    return obj


_SELF: list[str] = []


def astad_fingerprint() -> str:
    """A hash of astad's own modules: an edited (e.g. editable-installed) astad
    never reads entries an older one wrote under the same version number."""
    if not _SELF:
        h = hashlib.sha256()
        for f in sorted(Path(__file__).parent.glob("*.py")):
            h.update(f.name.encode() + b"\0" + f.read_bytes())
        _SELF.append(h.hexdigest())
    return _SELF[0]


def entry_key(parsed: Parsed, arg_types: Sequence[ir.Type], wrt: frozenset[int] | None) -> str:
    from . import __version__

    text = "\n".join([str(FORMAT), __version__, astad_fingerprint(), parsed.file, str(parsed.funcdef_line), parsed.name, parsed.source,
                      repr(tuple(arg_types)),
                      repr(sorted(wrt) if wrt is not None else None)])
    return hashlib.sha256(text.encode()).hexdigest()


def _path(parsed: Parsed, arg_types: Sequence[ir.Type], wrt: frozenset[int] | None) -> Path | None:
    d = cache_dir()
    if d is None:
        return None
    return d / f"{parsed.name}-{entry_key(parsed, arg_types, wrt)[:32]}.json"


_TYPE_NAMES = {"Num": ir.Num, "TupleT": ir.TupleT, "NoneT": ir.NoneT, "ListT": ir.ListT}


def load(parsed: Parsed, arg_types: Sequence[ir.Type], wrt: frozenset[int] | None = None) -> Derivative | None:
    path = _path(parsed, arg_types, wrt)
    if path is None:
        return None
    try:
        entry = json.loads(path.read_text())
        if entry["key"] != entry_key(parsed, arg_types, wrt) or entry["format"] != FORMAT:
            return None
        for dep_path, fp in entry["deps"]:
            if fingerprint(resolve(parsed.fn, dep_path)) != fp:
                return None
        constants = {name: tuple(p) for name, p in entry["constants"].items()}
        values = {name: resolve(parsed.fn, p) for name, p in constants.items()}
        forward, backward = compile_source(parsed.name, entry["source"], values)
        out_type = eval(entry["out_type"], {"__builtins__": {}}, dict(_TYPE_NAMES))  # noqa: S307 - our own repr
        deps = [(tuple(p), resolve(parsed.fn, p)) for p, _ in entry["deps"]]
        return Derivative(parsed.name, entry["source"], forward, backward, out_type, tuple(arg_types), wrt, deps,
                          constants)
    except Exception:
        return None  # missing, corrupted, truncated or stale: recompute


def store(parsed: Parsed, arg_types: Sequence[ir.Type], d: Derivative) -> None:
    path = _path(parsed, arg_types, d.wrt)
    if path is None:
        return
    entry = {
        "format": FORMAT,
        "key": entry_key(parsed, arg_types, d.wrt),
        "source": d.source,
        "out_type": repr(d.out_type),
        "constants": {name: list(p) for name, p in d.constants.items()},
        "deps": [[list(p), fingerprint(obj)] for p, obj in d.deps],
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(entry, f)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        pass  # read-only or full: the cache is an optimisation only


def clear_disk() -> None:
    d = cache_dir()
    if d is None or not d.is_dir():
        return
    for f in d.glob("*.json"):
        try:
            f.unlink()
        except OSError:
            pass
