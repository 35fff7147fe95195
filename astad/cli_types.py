"""Types described on the command line (``astad show-derivative --arg``).

The grammar (one ``--arg``, optionally ``NAME=`` first)::

    type   := scalar | array | dict | tuple | list
    scalar := float | int | bool                  Python scalars
            | f64 | f32 | float64 | float32 | int64 | int32 | i64 | i32   numpy scalars
    array  := dtype "[" [dim ("," dim)*] "]"      f64[256,64], f32[n,3], int[5], f64[] (0-d)
    dim    := NUMBER | LETTER(S) | "?" | "_"       a letter: a size known at run time
    dict   := "{" key ":" type ("," key ":" type)* "}"       key: a name, 'quoted' or a number
    tuple  := "(" type "," ... ")" | "tuple(" type, ... ")"  [ "*" NUMBER ]
    list   := "[" type, ... "]"    | "list(" type, ... ")"   [ "*" NUMBER ]   [f64[3]]*5: five of them

A size named by a letter (``n``) is a run-time value: the generated code is
shape-polymorphic in it (as in the IR, where an unknown size is ``None``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .ir import BOOL, FLOAT, INT, Num, StructT, Type

#: dtype names on the command line (``float`` and ``int`` alone are Python scalars, in brackets numpy dtypes)
DTYPES = {"f64": "float64", "float64": "float64", "f32": "float32", "float32": "float32", "float": "float64",
          "i64": "int64", "int64": "int64", "i32": "int32", "int32": "int32", "int": "int64", "bool": "bool"}
PYTHON = {"float": FLOAT, "int": INT, "bool": BOOL}  # Python scalars (numpy's "weak" types)

_TOKEN = re.compile(r"\s*(?:(?P<num>\d+)|(?P<name>[A-Za-z_]\w*)|(?P<str>'[^']*'|\"[^\"]*\")|(?P<op>[\[\]{}(),:*?]))")
_NAMED = re.compile(r"^\s*([A-Za-z_]\w*)\s*=(?!=)(.*)$", re.S)

EXAMPLES = "float, int, f64[256,64], f64[n,64], {W: f64[3,4], b: f64[4]}, (f64, f64[3]), [f64[3]]*5"


class CliError(Exception):
    """A usage error of the command line (exit status 2): a bad target, ``--arg`` or annotation."""


@dataclass
class Described:
    """A type read from the command line or an annotation, with the run-time
    sizes it names (``n`` -> where it appears, e.g. ``["x.shape[0]"]``)."""

    type: Type
    sizes: dict[str, list[str]] = field(default_factory=dict)


def split_named(spec: str) -> tuple[str | None, str]:
    """``'x=f64[3]'`` -> ``('x', 'f64[3]')``; ``'f64[3]'`` -> ``(None, 'f64[3]')``."""
    m = _NAMED.match(spec)
    return (m.group(1), m.group(2)) if m else (None, spec)


def arg_type(spec: str) -> Type:
    """The type a spec names (no array is made): ``float``, ``f64[3,4]``, ``{w: f64[3], b: float}``, ..."""
    return read_type(spec).type


def read_type(spec: str, where: str = "") -> Described:
    """The type a spec names, with its run-time sizes (``where``: the parameter, for the sizes' places)."""
    reader = _Reader(spec)
    t = reader.type(where)
    if reader.peek() is not None:
        reader.fail("expected the end of the type")
    return Described(t, reader.sizes)


def dims_of(words: list[str], what: str, where: str, sizes: dict[str, list[str]]) -> tuple[int | None, ...]:
    """Sizes from words: a number is a size, a name a run-time size (recorded in ``sizes``), ``?``/``_`` one too."""
    shape: list[int | None] = []
    for i, w in enumerate(words):
        if w.isdigit():
            shape.append(int(w))
            continue
        if w not in ("?", "_") and not w.startswith("_"):
            sizes.setdefault(w, []).append(f"{where}.shape[{i}]" if where else f"dimension {i}")
        shape.append(None)
    return tuple(shape)


class _Reader:
    """A recursive-descent reader of one spec (tokens: numbers, names, strings, punctuation)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []  # (kind, text, column)
        pos, end = 0, len(text.rstrip())
        while pos < end:
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                col = len(text) - len(text[pos:].lstrip()) + 1
                raise CliError(f"cannot read the type {text!r}: unexpected {text[col - 1]!r} at column {col}; "
                               f"write e.g. {EXAMPLES}")
            kind = m.lastgroup or "op"
            self.tokens.append((kind, m.group(kind), m.start(kind) + 1))
            pos = m.end()
        self.i = 0
        self.sizes: dict[str, list[str]] = {}

    def peek(self) -> str | None:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else None

    def next(self) -> tuple[str, str, int]:
        if self.i >= len(self.tokens):
            self.fail("the type ends too soon")
        self.i += 1
        return self.tokens[self.i - 1]

    def fail(self, what: str) -> None:
        at = f" at column {self.tokens[self.i][2]}" if self.i < len(self.tokens) else " at its end"
        raise CliError(f"cannot read the type {self.text!r}: {what}{at}; write e.g. {EXAMPLES}")

    def expect(self, op: str) -> None:
        if self.peek() != op:
            self.fail(f"expected {op!r}")
        self.i += 1

    def type(self, where: str) -> Type:
        kind, text, _ = self.next()
        if kind == "name" and text in ("tuple", "list") and self.peek() == "(":
            self.i += 1
            return self.repeated(text, self.items(")", where))
        if kind == "name":
            return self.number(text, where)
        if text in "([":
            return self.repeated("tuple" if text == "(" else "list", self.items(")" if text == "(" else "]", where))
        if text == "{":
            return self.dict(where)
        self.i -= 1
        self.fail("expected a type")
        raise AssertionError  # unreachable

    def number(self, name: str, where: str) -> Type:
        if name not in DTYPES:
            self.i -= 1
            self.fail(f"unknown dtype {name!r} (known: {', '.join(DTYPES)})")
        if self.peek() != "[":
            return PYTHON[name] if name in PYTHON else Num((), DTYPES[name])
        self.i += 1
        words: list[str] = []
        while self.peek() != "]":
            kind, text, _ = self.next()
            if kind not in ("num", "name") and text != "?":
                self.i -= 1
                self.fail("expected a size (a number, or a letter for a size known at run time)")
            words.append(text)
            if self.peek() == ",":
                self.i += 1
            elif self.peek() != "]":
                self.fail("expected ',' or ']'")
        self.i += 1
        return Num(dims_of(words, name, where, self.sizes), DTYPES[name])

    def items(self, close: str, where: str) -> list[Type]:
        out: list[Type] = []
        while self.peek() != close:
            out.append(self.type(f"{where}[{len(out)}]"))
            if self.peek() == ",":
                self.i += 1
            elif self.peek() != close:
                self.fail(f"expected ',' or {close!r}")
        self.i += 1
        return out

    def repeated(self, kind: str, items: list[Type]) -> StructT:
        if self.peek() == "*":
            self.i += 1
            count_kind, count, _ = self.next()
            if count_kind != "num":
                self.i -= 1
                self.fail("a list or tuple is repeated a number of times known now (its length is part of the type)")
            items = items * int(count)
        return StructT(kind, (), tuple(items))

    def dict(self, where: str) -> StructT:
        keys: list[object] = []
        items: list[Type] = []
        while self.peek() != "}":
            kind, text, _ = self.next()
            if kind not in ("name", "str", "num"):
                self.i -= 1
                self.fail("expected a key (a name, a 'quoted' string or a number)")
            key: object = int(text) if kind == "num" else text[1:-1] if kind == "str" else text
            if key in keys:
                self.i -= 1
                self.fail(f"the key {key!r} is given twice")
            self.expect(":")
            keys.append(key)
            items.append(self.type(f"{where}[{key!r}]"))
            if self.peek() == ",":
                self.i += 1
            elif self.peek() != "}":
                self.fail("expected ',' or '}'")
        self.i += 1
        return StructT("dict", tuple(keys), tuple(items))
