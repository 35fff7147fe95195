"""Parsing: a function's source, read and parsed (cached per code object),
checked against the supported subset, with the positions that errors point
at.  Python's parser reads it and :mod:`.from_ast` makes the libcst nodes the
frontend reads; libcst's parser reads what that does not know.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import libcst as cst

from .. import deep, source
from ..source import check_not_wrapped, read_checked, read_lambda, string_lines
from ..errors import SourceUnavailableError, UnsupportedSyntaxError
from ..ir import Loc
from ..positions import Starts, has_start, resolve as resolve_positions, start_of
from . import from_ast
from .recursion import calls_itself, self_call_sites
from .syntax import FOUND, NAMES, stmts_of


@dataclass
class Parsed:
    """A function's source, parsed, with what is needed to point at its lines."""

    fn: Callable[..., Any]
    file: str
    funcdef: cst.FunctionDef
    positions: Any
    line_offset: int  # a position's line and this: its line in the file
    col_offset: int
    lines: list[str]  # a position's line's text: lines[line - 1] (the def's lines, below as many blank as it needs)
    source: str
    aliases: dict = field(default_factory=dict)  # a node astad made (a comprehension's loop) -> the user's node
    fixed: dict = field(default_factory=dict)  # parameters a method or partial fixes (see astad.calling) -> values
    calls_own_name: bool = True  # False: no call of a function of its name anywhere in it (check_subset found none)
    # the lines (1-based) inside a multi-line string or a line continued, and comments alone (source.string_lines):
    # not dedented, no col_offset
    kept: frozenset = frozenset()
    locs: dict = field(default_factory=dict, repr=False, compare=False)  # where a node starts (Starts) -> its Loc

    @property
    def params(self) -> list[cst.Param]:
        """The parameters a call fills: the positional ones not fixed, then the keyword-only ones."""
        ps = self.funcdef.params
        return [p for p in (*ps.params, *ps.kwonly_params) if p.name.value not in self.fixed]

    @property
    def name(self) -> str:
        return self.funcdef.name.value

    @property
    def funcdef_line(self) -> int:
        return start_of(self.positions, self.aliases.get(self.funcdef, self.funcdef))[0] + self.line_offset

    @functools.cached_property
    def calls_itself(self) -> bool:
        """Whether the function calls itself by name (a recursion that may need lowering as loops)."""
        return self.calls_own_name and calls_itself(self.funcdef)

    @functools.cached_property
    def self_call_sites(self) -> int:
        """How many calls of the function by its own name its body holds (2 for a recursion over a tree)."""
        return self_call_sites(self.funcdef) if self.calls_own_name else 0

    def loc(self, node: cst.CSTNode) -> Loc:
        if self.aliases:
            node = self.aliases.get(node, node)
        positions = self.positions
        at = positions.get(id(node)) if type(positions) is Starts else None
        if at is not None:  # (the rest, inline: the lowering asks at every binding)
            loc = self.locs.get(at)  # (nodes starting at one place, `a * b + c` and `a * b`: one Loc)
            return loc if loc is not None else self.loc_at(at)
        if isinstance(node, ast.AST):  # a node of Python's tree (astad.frontend.fast) whose start was not noted
            at = (node.lineno, node.col_offset)  # (its libcst node's: straight-line code is ASCII text)
            loc = self.locs.get(at)
            return loc if loc is not None else self.loc_at(at)
        if type(node) is cst.SimpleStatementLine and not has_start(self.positions, node) and node.body:
            node = node.body[0]  # a line made from a one-line block (`if c: return x`)
        try:
            line, column = start_of(self.positions, node)
        except KeyError:
            line, column = start_of(self.positions, self.aliases.get(self.funcdef, self.funcdef))
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return Loc(self.file, line + self.line_offset, column + (self.col_offset if line not in self.kept else 0) + 1,
                   text)

    def loc_at(self, at: tuple[int, int]) -> Loc:
        """The Loc of a node starting at ``at`` (its :class:`Starts` entry), made and kept in ``locs``
        (:meth:`loc`, and the lowering's ``emit``, look there first)."""
        line, col = at
        if line > 0:  # (a line past the last: IndexError, below)
            try:
                text = self.lines[line - 1]
            except IndexError:
                text = ""
        else:
            text = ""
        # (a line inside a string or continued is not dedented: no col_offset)
        col += 1 if self.kept and line in self.kept else self.col_offset + 1
        loc = self.locs[at] = Loc(self.file, line + self.line_offset, col, text)
        return loc


_PARSED: dict[Any, Parsed] = {}


def clear_parse_cache() -> None:
    _PARSED.clear()
    FOUND.clear()
    NAMES.clear()
    # (what a module's text says, read once per text: cleared too, so that a transform after
    # clear_caches pays what one in a fresh process pays, as the bench's "cold" says)
    source._module_facts.cache_clear()
    source._lambdas.cache_clear()
    source.clear_module_tree()


def parse(fn: Callable[..., Any]) -> Parsed:
    """Read, parse and check ``fn``'s source (cached per code object)."""
    with deep.gc_paused():
        return _parse(fn)


def _parse(fn: Callable[..., Any]) -> Parsed:
    code = getattr(fn, "__code__", None)
    if code is None:
        raise SourceUnavailableError(
            f"cannot differentiate {fn!r}: it is not a Python function with source code",
            hint="a function defined with `def` in a .py file (or a notebook cell)")
    check_not_wrapped(fn)
    key = (code, code.co_filename, code.co_firstlineno)
    found = _PARSED.get(key)
    if found is not None:  # the same code; another function object may have other globals
        return found if found.fn is fn else dataclasses.replace(found, fn=fn)
    if fn.__name__ == "<lambda>":
        parsed = _parse_lambda(fn)
        check_subset(parsed)
        _PARSED[key] = parsed
        return parsed
    # (tree: the def's, from its module's reading; names: those its body mentions, where it is straight-line code)
    lines, start, file, dedented, tree, names = read_checked(fn)
    source = "".join(lines)
    col_offset = len(lines[0]) - len(lines[0].lstrip()) if dedented != source else 0
    kept = frozenset(i + 1 for i in string_lines(source)) if col_offset else frozenset()
    read = _read_with_ast(dedented, code.co_name, tree, start - 1, names)
    if read is not None:
        if tree is not None:  # its starts on the module's lines (the def's own text at column 0: col_offset 0)
            parsed = Parsed(fn, file, read[0], read[1], 0, 0, [""] * (start - 1) + lines, source)
        else:
            parsed = Parsed(fn, file, read[0], read[1], start - 1, col_offset, lines, source, kept=kept)
        check_subset(parsed, read[2])
        _PARSED[key] = parsed
        return parsed
    try:
        module = deep.fresh(cst.parse_module, dedented)  # libcst recurses: give it a whole stack
    except cst.ParserSyntaxError as e:
        raise SourceUnavailableError(f"cannot parse the source of {fn.__qualname__}: {e.message}") from None
    except RecursionError:
        module = None
    positions = None if module is None else resolve_positions(module, dedented)
    if module is None or positions is None:
        line, col = _deepest(dedented)
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        raise UnsupportedSyntaxError(
            f"{fn.__qualname__} is nested too deeply for astad's parser (libcst), here",
            Loc(file, line + start - 1, col + (col_offset if line not in kept else 0) + 1, text),
            "name the inner parts: `a = np.sin(x)`, `b = np.sin(a)`, ...")
    funcdef = next((s for s in module.body if isinstance(s, cst.FunctionDef)), None)
    if funcdef is None or funcdef.name.value != code.co_name:
        raise SourceUnavailableError(f"cannot find the `def` of {fn.__qualname__} in its source")
    parsed = Parsed(fn, file, funcdef, positions, start - 1, col_offset, lines, source, kept=kept)
    check_subset(parsed)
    _PARSED[key] = parsed
    return parsed


def _read_with_ast(source: str, name: str, tree: ast.FunctionDef | None = None, shift: int = 0,
                   names: set[str] | None = None) -> tuple[cst.FunctionDef, Starts, from_ast.Found] | None:
    """The ``def`` of ``name``, where its nodes start and what the reading found,
    read with Python's parser (:mod:`.from_ast`; ``tree``, ``shift``: the tree read already,
    see :func:`.from_ast.read`); None where libcst's parser should read it (a construct
    not known there, a syntax error, a function nested too deeply); ``names``: see
    :func:`.from_ast.read`."""
    try:
        return from_ast.read(source, name, tree, shift, lazy=True, names=names)
    except Exception:  # (from_ast.Decline, SyntaxError, RecursionError, ...: libcst's reading says what is wrong)
        return None


#: the name a lambda has in messages and generated code
LAMBDA_NAME = "lambda_fn"


def _parse_lambda(fn: Callable[..., Any]) -> Parsed:
    """A lambda, parsed as the function ``def lambda_(params): return body`` made
    of its own nodes (so that errors point at its text)."""
    lines, line, col, file, text = read_lambda(fn)
    padded = "(" + " " * (col - 1) + text + ")\n" if col >= 1 else "(" + text + ")\n"
    try:
        module = deep.fresh(cst.parse_module, padded)
    except cst.ParserSyntaxError as e:
        raise SourceUnavailableError(f"cannot parse the source of {fn.__qualname__}: {e.message}") from None
    positions = resolve_positions(module, padded)
    lam = module.body[0].body[0].value  # type: ignore[attr-defined]
    if positions is None or not isinstance(lam, cst.Lambda):
        raise SourceUnavailableError(f"cannot parse the source of {fn.__qualname__}")
    ret = cst.Return(lam.body)
    stmt = cst.SimpleStatementLine([ret])
    assigned = re.search(r"(\w+)\s*=\s*\(?\s*$", lines[0][:col])  # `name = lambda ...`: the lambda's name
    name = assigned.group(1) if assigned and assigned.group(1).isidentifier() else LAMBDA_NAME
    funcdef = cst.FunctionDef(cst.Name(name), lam.params, cst.IndentedBlock([stmt]))
    aliases = {funcdef: lam, stmt: lam.body, ret: lam.body}
    return Parsed(fn, file, funcdef, positions, line - 1, 0 if col >= 1 else col - 1, lines, text + "\n",
                  aliases)


def _deepest(source: str) -> tuple[int, int]:
    """Line (1-based) and column (0-based) of the most deeply nested node of
    ``source`` (Python's own parser; an explicit stack)."""
    best, where = -1, (1, 0)
    todo = [(deep.parse_ast(source), 0)]
    while todo:
        node, depth = todo.pop()
        if depth > best and hasattr(node, "lineno"):
            best, where = depth, (node.lineno, node.col_offset)
        todo.extend((c, depth + 1) for c in ast.iter_child_nodes(node))
    return where


# What each unsupported construct is called and what to write instead.
UNSUPPORTED: dict[type, tuple[str, str]] = {
    cst.Try: ("`try` is not supported", "straight-line code without exception handling"),
    cst.With: ("`with` is not supported", "straight-line code"),
    cst.ClassDef: ("class definitions are not supported", "module-level functions"),
    cst.DictComp: ("dict comprehensions are not supported", "arrays and tuples"),
    cst.SetComp: ("set comprehensions are not supported", "arrays and tuples"),
    cst.Dict: ("dicts are not supported yet", "arrays and tuples"),
    cst.Set: ("sets are not supported", "arrays and tuples"),
    cst.Yield: ("generators are not supported", "a function that returns its result"),
    cst.Await: ("`await` is not supported", "plain synchronous numpy code"),
    cst.Global: ("`global` is not supported", "module-level constants are read as constants; pass values as arguments"),
    cst.Nonlocal: ("`nonlocal` is not supported", "pass values as arguments and return results"),
    cst.Del: ("`del` is not supported", "simply stop using the variable"),
    cst.Import: ("imports inside the function are not supported", "import at module level"),
    cst.ImportFrom: ("imports inside the function are not supported", "import at module level"),
    cst.NamedExpr: ("`:=` is not supported", "a separate assignment"),
    cst.FormattedString: ("f-strings are supported only in print(...), `raise` and `assert`", "numbers and arrays"),
    cst.ConcatenatedString: ("strings side by side are supported only in print(...), `raise` and `assert`",
                             "numbers and arrays"),
    cst.Imaginary: ("complex numbers are not supported", "real floats and arrays"),
    cst.StarredElement: ("`*` unpacking is not supported", "explicit arguments"),
}


_MESSAGE_STRINGS = (cst.FormattedString, cst.ConcatenatedString)


def _holds_message(node: cst.CSTNode) -> bool:
    """Where a message may be written with f-strings: print(...), `raise`, `assert`."""
    return isinstance(node, (cst.Raise, cst.Assert)) or (
        isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "print")


#: the classes of node _SubsetChecker looks at (libcst's node classes have no subclasses)
_CHECKED = frozenset({cst.FunctionDef, cst.Lambda, cst.Name, cst.ListComp, cst.GeneratorExp, cst.Raise, cst.Assert,
                      cst.Call, cst.For, cst.While, cst.Comparison, *UNSUPPORTED})


class _SubsetChecker(cst.CSTVisitor):
    """Checks every node, and on the way notes the names the function mentions
    (:func:`astad.frontend.syntax.user_names`) and whether it calls a function
    of its own name (one walk of the tree for the three)."""

    def __init__(self, parsed: Parsed) -> None:
        self.parsed = parsed
        self.depth = 0
        self.messages = 0  # inside print(...), `raise` or `assert`, where f-strings may be
        self.names: set[str] = set()
        self.own_name = parsed.funcdef.name.value
        self.calls_own_name = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        cls = type(node)
        if cls is cst.Name:
            self.names.add(node.value)
            if node.value.isascii():  # (most nodes: nothing more to check)
                return True
        elif cls not in _CHECKED:  # most nodes: nothing to check
            return True
        elif cls is cst.Call and type(node.func) is cst.Name and node.func.value == self.own_name:
            self.calls_own_name = True
        if isinstance(node, cst.FunctionDef):
            self.depth += 1
            self._check_signature(node)
            if node.decorators and self.depth > 1:
                raise UnsupportedSyntaxError("decorators on nested functions are not supported",
                                             self.parsed.loc(node.decorators[0]), "a plain nested `def`")
            if self.depth == 1:
                return True
        if isinstance(node, cst.Lambda):
            self._check_params(node.params)
        if isinstance(node, cst.Name) and not node.value.isascii() and \
                unicodedata.normalize("NFKC", node.value) != node.value:
            plain = unicodedata.normalize("NFKC", node.value)
            raise UnsupportedSyntaxError(f"the name `{node.value}` is `{plain}` to Python (it normalises names "
                                         "to NFKC), so astad would read two names where Python reads one",
                                         self.parsed.loc(node), f"write `{plain}`")
        if isinstance(node, (cst.ListComp, cst.GeneratorExp)):
            f: Any = node.for_in
            while f is not None:
                if f.asynchronous is not None:
                    raise UnsupportedSyntaxError("`async for` is not supported", self.parsed.loc(f), "a plain `for`")
                f = f.inner_for_in
        if _holds_message(node):
            self.messages += 1
        entry = UNSUPPORTED.get(type(node))
        if entry is not None and not (self.messages and type(node) in _MESSAGE_STRINGS):
            raise UnsupportedSyntaxError(entry[0], self.parsed.loc(node), entry[1])
        if isinstance(node, cst.Comparison):
            for comp in node.comparisons:
                if _is_none_test(node, comp):
                    continue
                if isinstance(comp.operator, (cst.Is, cst.IsNot)):
                    raise UnsupportedSyntaxError("`is` is supported only as a test for None (`x is None`, "
                                                 "`x is not None`, alone)", self.parsed.loc(comp),
                                                 "== or != for numbers and arrays")
                if not isinstance(comp.operator, (cst.LessThan, cst.LessThanEqual, cst.GreaterThan,
                                                  cst.GreaterThanEqual, cst.Equal, cst.NotEqual)):
                    raise UnsupportedSyntaxError("only the comparisons < <= > >= == != are supported",
                                                 self.parsed.loc(comp), "< <= > >= == !=, or `x is None`")
        return True

    def on_leave(self, node: cst.CSTNode) -> None:
        if type(node) not in _CHECKED or type(node) is cst.Name:
            return
        if isinstance(node, cst.FunctionDef):
            self.depth -= 1
        if _holds_message(node):
            self.messages -= 1

    def _check_signature(self, node: cst.FunctionDef) -> None:
        if node.asynchronous is not None:  # (calling it returns a coroutine, not its result)
            raise UnsupportedSyntaxError("`async def` is not supported", self.parsed.loc(node), "a plain `def`")
        self._check_params(node.params, module_level=self.depth == 1)
        if from_ast.lazy_block(node) is None:  # (else its one `return` is last: astad.frontend.straight)
            _check_returns_last(stmts_of(node.body), self.parsed)

    def _check_params(self, ps: cst.Parameters, module_level: bool = False) -> None:
        extra = ps.star_arg if isinstance(ps.star_arg, cst.Param) else None
        # positional-only and keyword-only parameters: a module-level function (inlined by its signature) may have them
        posonly = ps.posonly_params[0] if ps.posonly_params and not module_level else None
        kwonly = ps.kwonly_params[0] if ps.kwonly_params and not module_level else None
        for bad, what in ((extra, "*args"), (ps.star_kwarg, "**kwargs"), (kwonly, "keyword-only parameters"),
                          (posonly, "positional-only parameters (before `/`)")):
            if bad is not None:
                raise UnsupportedSyntaxError(f"{what} are not supported", self.parsed.loc(bad),
                                             "positional parameters (with constant defaults)")


def _check_returns_last(body: Sequence[cst.BaseStatement], parsed: Parsed) -> None:
    """A ``return`` ends its block: nothing may follow it there (dead code is
    more likely a mistake than intended)."""
    last = len(body) - 1
    for i, stmt in enumerate(body):
        cls = type(stmt)  # (libcst's node classes have no subclasses: `type(...) is` is the cheap test)
        if cls is cst.SimpleStatementLine:
            for small in stmt.body:
                if type(small) is cst.Return and (i != last or small is not stmt.body[-1]):
                    raise UnsupportedSyntaxError("code after `return` is never run", parsed.loc(small),
                                                 "end the block with its `return`")
        elif cls is cst.If:
            _check_returns_last(stmts_of(stmt.body), parsed)
            if isinstance(stmt.orelse, cst.If):
                _check_returns_last([stmt.orelse], parsed)
            elif stmt.orelse is not None:
                _check_returns_last(stmts_of(stmt.orelse.body), parsed)


#: the classes whose ``on_leave`` does something (a function's depth, where messages may be)
_LEFT = frozenset({cst.FunctionDef, cst.Raise, cst.Assert, cst.Call})


def check_subset(parsed: Parsed, found: from_ast.Found | None = None) -> None:
    """``deep.visit(parsed.funcdef, _SubsetChecker(parsed))``, leaving only the nodes
    whose ``on_leave`` does something (a leaving is a 1-tuple on the stack), and
    not visiting whitespace and punctuation (:func:`astad.deep.syntax_children`).

    ``found``: the function was read by :mod:`.from_ast`, which found its names, calls
    and the ``def`` inside it on the way, and declines every construct the walk refuses
    (libcst's parser then reads it) but those of a ``def``'s own: only the signatures of
    the function and of the ``def`` inside it are left to check, and a nested one's
    decorators (tests/test_from_ast.py checks both ways agree)."""
    checker = _SubsetChecker(parsed)
    if found is not None and found.defs == 1 + len(found.nested):
        checker.depth = 1
        checker._check_signature(parsed.funcdef)
        checker.depth = 2
        for node in found.nested:  # (what on_visit checks of a def inside, in the order the walk meets them)
            checker._check_signature(node)
            if node.decorators:
                raise UnsupportedSyntaxError("decorators on nested functions are not supported",
                                             parsed.loc(node.decorators[0]), "a plain nested `def`")
        NAMES[parsed.funcdef] = found.names
        parsed.calls_own_name = checker.own_name in found.called
        return
    todo: list[Any] = [parsed.funcdef]
    children = deep.syntax_children  # (whitespace and punctuation hold nothing it checks)
    while todo:
        n = todo.pop()
        if type(n) is tuple:
            checker.on_leave(n[0])
            continue
        if type(n) in _LEFT:
            todo.append((n,))
        if checker.on_visit(n):
            kids = children(n)
            if n is parsed.funcdef:  # its decorators run where it is defined, not in the code differentiated:
                decorators = [k for k in kids if type(k) is cst.Decorator]  # their names are read, nothing checked
                while decorators:
                    d = decorators.pop()
                    if type(d) is cst.Name:
                        checker.names.add(d.value)
                    decorators.extend(children(d))
                kids = [k for k in kids if type(k) is not cst.Decorator]
            todo.extend(reversed(kids))
    NAMES[parsed.funcdef] = frozenset(checker.names)
    parsed.calls_own_name = checker.calls_own_name  # (if so, calls_itself looks in the body alone)


def _is_none_test(node: cst.Comparison, comp: cst.ComparisonTarget) -> bool:
    """``x is None`` or ``x is not None``, alone (not in a chain)."""
    return (isinstance(comp.operator, (cst.Is, cst.IsNot)) and len(node.comparisons) == 1
            and any(type(e) is cst.Name and e.value == "None" for e in (node.left, comp.comparator)))
