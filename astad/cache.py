"""Caches of generated derivatives: in memory (per process) and on disk.

The disk cache lets a fresh process skip the transformation.  An entry is
found by a hash of astad's version and its own source code, the function's file, name and source, and
the abstract argument signature; it records every global the transformation
read (the functions it inlined, by a hash of their source; arrays, by
their abstract type; numbers, by type and value; numpy objects, by name) and is used only if all of them
still match.  Entries are written atomically; anything unreadable, stale or
unwritable is ignored and the derivative is recomputed — never a crash.

An entry's generated code is compiled only if the entry is sealed with this
user's secret key, in a directory only this user can write (the trust model
is in :mod:`astad.cachefiles`).  Everything else in an entry is JSON data:
nothing read from the cache is ``eval``'d.  Entries live in the subdirectory
``astad-derivatives`` of the cache directory; the least recently used ones
are deleted beyond ``config.disk_cache_max_entries`` entries or
``config.disk_cache_max_bytes`` bytes, and ``astad.clear_caches()`` deletes
them all (and nothing else).

Environment: ``ASTAD_CACHE_DIR`` sets the directory (default: the user's
cache directory, e.g. ``~/.cache/astad``); ``ASTAD_DISK_CACHE=0`` turns the
disk cache off (as does ``astad.config.disk_cache = False``).
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import sys
import types
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from . import backends, cachefiles, calling, fresh, ir, outputs
from .frontend import Parsed, abstract
from .pipeline import Derivative, compile_source
from .source import reversed_function


class Config:
    """Switches; ``astad.config.disk_cache = False`` turns the disk cache off;
    ``memory_cache_size`` is how many derivatives each in-memory cache keeps (the
    least recently used are forgotten first)."""

    disk_cache: bool = True
    memory_cache_size: int = 128
    #: the disk cache keeps the most recently used entries within these bounds
    disk_cache_max_entries: int = 2000
    disk_cache_max_bytes: int = 256 * 2**20

    def __setattr__(self, name: str, value: Any) -> None:
        """A switch of a name astad knows, of its kind: a bool, or a count (an int, 0 or more); anything
        else is astad's error now, not a failure (or a switch silently not set) at the next call."""
        from .errors import AstadTypeError

        known = {k: v for k, v in vars(Config).items() if not k.startswith("_")}
        if name not in known:
            raise AstadTypeError(f"astad.config has no setting {name!r}",
                                 hint=f"one of {', '.join(sorted(known))}")
        if isinstance(known[name], bool):
            if not isinstance(value, (bool, np.bool_)):
                raise AstadTypeError(f"astad.config.{name} is True or False, got {value!r}",
                                     hint=f"astad.config.{name} = False")
            value = bool(value)
        elif not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)) or value < 0:
            raise AstadTypeError(f"astad.config.{name} is a count (an int, 0 or more), got {value!r}",
                                 hint=f"astad.config.{name} = {known[name]}")
        else:
            value = int(value)
        object.__setattr__(self, name, value)


config = Config()

FORMAT = 4  # 3: entries hold the output's lists (out_lists); 4: the constants their residuals hold (held)


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
    inner = reversed_function(obj) or obj  # (asked of the type: an object's __getattr__ answers any name)
    if isinstance(inner, types.FunctionType):
        try:
            src = inspect.getsource(inner)
        except (OSError, TypeError):
            src = repr(inner.__code__.co_code)
        text = (f"{src}{inner.__defaults__!r}{inner.__kwdefaults__!r}"  # a default is read when transforming
                f"{inner.__code__.co_filename}:{inner.__code__.co_firstlineno}")
        # the code too: the text is the file's now, which may not be the code Python runs (edited since import)
        return "fn:" + hashlib.sha256(text.encode() + _code_digest(inner.__code__)).hexdigest()
    if isinstance(obj, types.ModuleType):
        return "module:" + obj.__name__
    if isinstance(obj, (bool, int, float, np.ndarray, np.generic)):
        try:
            t = abstract(obj, "constant")
        except Exception:
            return "other:" + type(obj).__qualname__
        if isinstance(obj, (bool, int, float)):  # (a float too: `ord=P` reads its value when transforming)
            return f"const:{t}:{obj!r}"
        return f"const:{t}"
    # a called function's __code__ and __defaults__ as the transformation read them (the function's own
    # fingerprint is taken when the entry is written, and another thread may have assigned them since)
    if type(obj) is types.CodeType:
        return "code:" + _code_digest(obj).hex()
    if type(obj) is tuple:
        return "tuple:(" + ",".join(map(fingerprint, obj)) + ")"
    if type(obj) is str:
        return "str:" + repr(obj)
    try:  # (an object's own __getattr__ may answer, or raise anything)
        return "obj:" + str(getattr(obj, "__module__", "")) + "." + str(getattr(obj, "__qualname__",
                                                                                type(obj).__qualname__))
    except Exception:
        return "other:" + type(obj).__qualname__


def _code_digest(code: types.CodeType) -> bytes:
    """What a function's code does, the same in every process for the same code: its instructions,
    names and constants (nested code recursively; a frozenset's items sorted, as hashing orders them)."""
    h = hashlib.sha256(code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, code.co_flags,
                   code.co_argcount, code.co_kwonlyargcount, code.co_posonlyargcount)).encode())
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            h.update(b"code:" + _code_digest(c))
        elif isinstance(c, frozenset):
            h.update(repr(sorted(map(repr, c))).encode())
        else:
            h.update(f"{type(c).__name__}:{c!r}\0".encode())
    return h.digest()


def resolve(root: Any, path: Sequence[str]) -> Any:
    """The object a path of names leads to from ``root``: each name read as the
    function it is in reads it (a captured variable, a global, a builtin; a
    method's ``self``; an attribute of an object: see :func:`astad.calling.read`)."""
    obj: Any = root
    for name in path:
        obj = calling.read(reversed_function(obj) or obj, name)  # (not getattr: a __getattr__ answers any name)
    return obj


_SELF: list[str] = []


def astad_fingerprint() -> str:
    """A hash of astad's own modules: an edited (e.g. editable-installed) astad
    never reads entries an older one wrote under the same version number."""
    if not _SELF:
        h = hashlib.sha256()
        root = Path(__file__).parent
        for f in sorted(root.rglob("*.py")):  # the subpackages' modules too (frontend/, ad/)
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
        _SELF.append(h.hexdigest())
    return _SELF[0]


def entry_key(parsed: Parsed, arg_types: Sequence[ir.Type], wrt: frozenset[int] | None) -> str:
    from .version import __version__

    # numpy's version and Python's too: the types (and so the code) follow numpy's promotion rules, and one
    # cache directory may serve environments with other numpys (an entry of another one is not read)
    runtime = f"numpy {np.__version__}, {sys.implementation.name} {sys.version_info[0]}.{sys.version_info[1]}"
    text = "\n".join([str(FORMAT), __version__, astad_fingerprint(), runtime, parsed.file, str(parsed.funcdef_line),
                      parsed.name, parsed.source,
                      repr(tuple(arg_types)),
                      repr(sorted(wrt) if wrt is not None else None)]
                    + ([] if backends.current() == backends.NUMPY else [backends.current()]))
    return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------- types as JSON data (never eval'd)


def type_data(t: ir.Type) -> Any:
    """``t`` as JSON data; ValueError for a type an entry does not hold."""
    if isinstance(t, ir.Num) and (t.value is None or type(t.value) in (bool, int, float, str)):
        return ["num", list(t.shape), t.dtype, t.py, t.value]
    if isinstance(t, ir.TupleT):
        return ["tuple", [type_data(i) for i in t.items]]
    if isinstance(t, ir.NoneT):
        return ["none"]
    if isinstance(t, ir.ListT):
        return ["list", None if t.elem is None else type_data(t.elem), t.length]
    raise ValueError(f"a cache entry does not hold the type {t}")


def _dim(d: Any) -> int | None:
    if d is None or type(d) is int:
        return d
    raise ValueError(f"bad dimension {d!r}")


def type_from_data(data: Any) -> ir.Type:
    """The type :func:`type_data` wrote; ValueError for anything else."""
    tag, *rest = data
    if tag == "num" and len(rest) == 4 and type(rest[1]) is str and type(rest[2]) is bool:
        shape, dtype, py, value = rest
        if value is not None and type(value) not in (bool, int, float, str):
            raise ValueError(f"bad value {value!r}")
        return ir.Num(tuple(_dim(d) for d in shape), np.dtype(dtype).name, py, value)
    if tag == "tuple" and len(rest) == 1:
        return ir.TupleT(tuple(type_from_data(i) for i in rest[0]))
    if tag == "none" and not rest:
        return ir.NoneT()
    if tag == "list" and len(rest) == 2:
        return ir.ListT(None if rest[0] is None else type_from_data(rest[0]), _dim(rest[1]))
    raise ValueError(f"not a type: {data!r}")


def _path_data(p: Any) -> tuple[str, ...]:
    if not isinstance(p, list) or not all(type(n) is str for n in p):
        raise ValueError(f"not a path of names: {p!r}")
    return tuple(p)


# --------------------------------------------------------------------------- load and store


def load(parsed: Parsed, arg_types: Sequence[ir.Type], wrt: frozenset[int] | None = None) -> Derivative | None:
    """The derivative this user's disk cache holds for ``arg_types``, or None.
    Nothing is compiled unless the entry's HMAC matches (see cachefiles)."""
    base = cache_dir()
    if base is None:
        return None
    key = entry_key(parsed, arg_types, wrt)
    try:
        with cachefiles.private_dir(base, create=False) as dfd:
            secret = None if dfd is None else cachefiles.key(dfd, create=False)
            payload = None if secret is None else cachefiles.read(dfd, secret, cachefiles.entry_name(parsed.name, key))
        if payload is None:
            return None
        return _derivative(parsed, arg_types, wrt, key, json.loads(payload))
    except Exception:
        return None  # missing, corrupted, stale, or our own entry we cannot use: recompute


def _derivative(parsed: Parsed, arg_types: Sequence[ir.Type], wrt: frozenset[int] | None, key: str,
                entry: dict) -> Derivative | None:
    """The derivative an authenticated entry describes, if it is still valid."""
    if entry["format"] != FORMAT or entry["key"] != key or type(entry["source"]) is not str:
        return None
    deps = [(_path_data(p), fp) for p, fp in entry["deps"]]
    # each path read once: the objects whose fingerprints are checked are those the derivative reads and
    # records (another thread may rebind a global meanwhile: then the next call's checks fail)
    read: dict[tuple[str, ...], Any] = {}

    def at(p: tuple[str, ...]) -> Any:
        if p not in read:
            read[p] = resolve(parsed.fn, p) if len(p) < 2 else resolve(at(p[:-1]), p[-1:])
        return read[p]

    if any(fingerprint(at(p)) != fp for p, fp in deps):
        return None
    constants = {name: _path_data(p) for name, p in entry["constants"].items()}
    out_type = type_from_data(entry["out_type"])
    values = {name: at(p) for name, p in constants.items()}
    held = tuple(entry["held"])  # (an entry without them: KeyError, recomputed)
    forward, backward = compile_source(parsed.name, entry["source"], values, held)
    lists = outputs.checked(entry["out_lists"])  # (an entry without them: KeyError, recomputed)
    return Derivative(parsed.name, entry["source"], forward, backward, out_type, tuple(arg_types), wrt,
                      [(p, at(p)) for p, _ in deps], constants, None, lists, held,
                      fresh.arrays_of(values))


def store(parsed: Parsed, arg_types: Sequence[ir.Type], d: Derivative) -> None:
    """Write ``d`` to this user's disk cache (nothing when it is off or not private)."""
    base = cache_dir()
    if base is None:
        return
    key = entry_key(parsed, arg_types, d.wrt)
    try:
        entry = {
            "format": FORMAT,
            "key": key,
            "source": d.source,
            "out_type": type_data(d.out_type),
            "out_lists": d.out_lists,
            "constants": {name: list(p) for name, p in d.constants.items()},
            "held": list(d.held),
            "deps": [[list(p), fingerprint(obj)] for p, obj in d.deps],
        }
        payload = json.dumps(entry, allow_nan=False).encode()
    except (ValueError, TypeError):
        return  # a type or value an entry does not hold: not cached
    try:
        with cachefiles.private_dir(base, create=True) as dfd:
            secret = None if dfd is None else cachefiles.key(dfd, create=True)
            if secret is not None:
                cachefiles.write(dfd, secret, cachefiles.entry_name(parsed.name, key), payload)
                cachefiles.evict(dfd, config.disk_cache_max_entries, config.disk_cache_max_bytes)
    except OSError:
        pass  # read-only or full: the cache is an optimisation only


def clear_disk() -> None:
    """Delete the entries astad wrote in the cache directory (nothing else)."""
    base = cache_dir()
    if base is None:
        return
    with contextlib.suppress(OSError), cachefiles.private_dir(base, create=False) as dfd:
        if dfd is not None:
            cachefiles.clear(dfd)
