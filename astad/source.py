"""A function's source text, read so that it is the source of the code Python runs.

``inspect.getsource`` follows ``__wrapped__`` (so it reads the function a
decorator wrapped, not the wrapper) and re-reads a file edited since it was
imported (so it may read another function, or the new text of this one).
astad must differentiate exactly the code Python runs, so :func:`read` refuses
wrapped functions, reads the text at the code object's own line, and checks
it: the text, compiled again as its module compiled it (same ``__future__``
flags, same imported names, its free variables as cells), must give the same
code (instructions, names, constants, nested code, recursively; line numbers
aside) as the function's ``__code__``.  A module-level function of straight-line
code is checked without compiling its text: its tree's instructions, written by
:mod:`astad.straight_code`, are compared with its code's.
"""

from __future__ import annotations

import __future__
import ast
import bisect
import dis
import functools
import importlib.machinery
import inspect
import io
import linecache
import operator
import re
import textwrap
import tokenize
import types
from typing import Any, Callable, Iterator

from . import deep, straight_code
from .errors import SourceUnavailableError

#: the compiler flags ``from __future__ import ...`` sets (they change the code of annotations)
_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag

_RELOAD = ("reload the module (importlib.reload) or restart Python, so that the code Python runs is the code "
           "in the file")


def reversed_function(obj: Any) -> Any:
    """The function an ``astad.reverse`` object transforms, or None for anything
    else.  Asked of the type: ``functools.wraps`` copies an object's ``__dict__``
    (``__astad_function__`` too) into its wrappers, which are not the same function."""
    if getattr(type(obj), "__astad_reverse__", False):
        return obj.__dict__["__astad_function__"]
    return None


def check_not_wrapped(fn: Any) -> None:
    """Refuse a wrapper made by ``functools.wraps``: ``inspect`` would read the
    source of the function it wraps, not the wrapper's own code."""
    try:
        inner = inspect.getattr_static(fn, "__wrapped__", None)
    except Exception:  # an object whose attribute lookup fails is no plain function either
        inner = None
    if inner is None:
        return
    if getattr(fn, "__astad_derived__", None) is not None:
        raise SourceUnavailableError(
            f"{fn.__qualname__} is {fn.__astad_derived__}: it has no source of its own for astad.reverse or "
            "astad.forward to read (higher-order derivatives: astad.grad, jvp, jacfwd, jacrev, hessian and hvp "
            "take a derivative made by astad)",
            hint="astad.grad(astad.grad(f)), or compute the derivative outside the function astad transforms")
    raise SourceUnavailableError(
        f"{fn.__qualname__} is a wrapper made by a decorator (functools.wraps): its source is the wrapped "
        "function's, not the wrapper's own code, which astad cannot see",
        hint="differentiate the undecorated function, and apply the decorator to the result "
             "(or write what the wrapper does into the function)")


def read(fn: Callable[..., Any]) -> tuple[list[str], int, str]:
    """The lines of ``fn``'s ``def`` (decorators included), its first line
    number, and its file; checked against ``fn.__code__`` (the caller has refused wrappers)."""
    return read_dedented(fn)[:3]


def read_dedented(fn: Callable[..., Any]) -> tuple[list[str], int, str, str]:
    """:func:`read`, and the text of the lines dedented (as checked)."""
    return read_with_tree(fn)[:4]


def read_with_tree(fn: Callable[..., Any]) -> tuple[list[str], int, str, str, ast.FunctionDef | None]:
    """:func:`read_dedented`, and the ``def``'s node in its module's tree where that is the tree of the
    dedented text, its lines numbered from the module's first line (:func:`module_def`), else None."""
    return read_checked(fn)[:5]


def read_checked(fn: Callable[..., Any]) -> tuple[list[str], int, str, str, ast.FunctionDef | None,
                                                 set[str] | None]:
    """:func:`read_with_tree`, and where the node was checked against the code by its instructions
    (straight-line code: :func:`astad.straight_code.names_if_matches`), the names its body mentions,
    else None."""
    code = fn.__code__
    try:
        file_lines, start = _find_source(code)  # the code object: inspect does not unwrap it
        file = _source_file(code)
    except (OSError, TypeError) as e:
        raise SourceUnavailableError(
            f"cannot read the source of {fn.__qualname__} (defined in {code.co_filename}): {e}",
            hint="define the function in a .py file or a notebook cell, not with exec() or in an interactive prompt "
                 "that keeps no source") from None
    text = "".join(file_lines)
    imported, ends = _module_facts(text)
    end = ends.get(start + 1)  # (inspect.getblock finds the same last line with tokenize: some 20 times slower)
    lines = file_lines[start:end] if end is not None else inspect.getblock(file_lines[start:])
    dedented = dedent("".join(lines))
    node = module_def(text, start + 1, end) if end is not None and lines[0][:1] not in (" ", "\t") else None
    # (the def's tree, where it is straight-line code, checked against the code without compiling its text:
    # astad.straight_code; where it cannot tell, the text compiled again and compared)
    names = None if node is None else straight_code.names_if_matches(code, node, imported)
    if names is None:
        _check_dedented(code, dedented, fn.__qualname__, file, imported)
    if node is not None and _alone(node, text):
        _forget(text)  # (the caller holds the def's own nodes, freed with its reading)
    return lines, start + 1, file, dedented, node, names


def _source_file(code: types.CodeType) -> str:
    """``inspect.getsourcefile(code) or code.co_filename``: a name ``<...>`` (a notebook cell's, a
    text linecache holds) is that, without inspect's search of every module for one of that file."""
    name = code.co_filename
    if (name.startswith("<") and name.endswith(">")) or _kept_text(name) is not None:
        return name  # (getsourcefile gives it or None: no suffix of its maps it)
    return inspect.getsourcefile(code) or name


#: the endings of files of compiled code, which ``inspect.getsourcefile`` maps to another name or refuses
_COMPILED_SUFFIXES = tuple(importlib.machinery.BYTECODE_SUFFIXES + importlib.machinery.EXTENSION_SUFFIXES)

#: the lines ``inspect.findsource`` steps back to from a code object's first line (its own pattern)
_DEF_LINE = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")


def _kept_text(name: str) -> list[str] | None:
    """The lines linecache keeps of the file ``name`` where they were put there, not read from a file
    (a notebook cell's, generated code's: no time of a file with them, which ``linecache.checkcache``
    leaves as they are); None for any other file."""
    entry = linecache.cache.get(name)
    if entry is None or len(entry) != 4 or entry[1] is not None or not entry[2] or name.endswith(_COMPILED_SUFFIXES):
        return None
    return entry[2]


def _find_source(code: types.CodeType) -> tuple[list[str], int]:
    """``inspect.findsource(code)``: the lines of the file and the (0-based) line of its ``def``.  For a
    text linecache keeps (:func:`_kept_text`), what inspect finds there, without its search of every
    module (``inspect.getmodule``: for such a file, at every call) for the one whose file it is, which
    would only say where to load lines linecache does not have."""
    lines = _kept_text(code.co_filename)
    if lines is None:
        return inspect.findsource(code)
    lnum = code.co_firstlineno - 1
    while lnum > 0:
        if lnum >= len(lines):
            raise OSError("lineno is out of bounds")
        if _DEF_LINE.match(lines[lnum]):
            break
        lnum -= 1
    return lines, lnum


def read_lambda(fn: Callable[..., Any]) -> tuple[list[str], int, int, str, str]:
    """The lines of ``fn``'s file from the line of the lambda ``fn`` is, that line
    number, the lambda's column (0-based), the file, and the lambda's text; checked
    against ``fn.__code__`` as :func:`read` checks a ``def``."""
    code = fn.__code__
    try:
        file_lines, _ = _find_source(code)
        file = _source_file(code)
    except (OSError, TypeError) as e:
        raise SourceUnavailableError(
            f"cannot read the source of the lambda {fn.__qualname__} (defined in {code.co_filename}): {e}",
            hint="define the function in a .py file or a notebook cell") from None
    text = "".join(file_lines)
    imported = imported_names(text)
    for node in _lambdas(text).get(code.co_firstlineno, ()):
        segment = ast.get_source_segment(text, node)
        if segment is None:
            continue
        compiled = _compile(code, "(" + segment + ")", imported)
        if compiled is not None and same_code(compiled, code):
            line = file_lines[node.lineno - 1]
            col = len(line.encode()[:node.col_offset].decode(errors="replace"))  # ast counts bytes
            return file_lines[node.lineno - 1:], node.lineno, col, file, segment
    raise SourceUnavailableError(
        f"the source of the lambda {fn.__qualname__} in {file} is not the code Python runs: the file was edited "
        "since the module was imported (or the lambda is not at that line)", hint=_RELOAD)


@functools.lru_cache(maxsize=16)
def _lambdas(text: str) -> dict[int, list[ast.Lambda]]:
    """The lambdas of a module's text by their first line."""
    tree = _module_tree(text)
    if tree is None:
        return {}
    found: dict[int, list[ast.Lambda]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            found.setdefault(node.lineno, []).append(node)
    return found


def imported_names(text: str) -> frozenset[str]:
    """The names a module's text binds by ``import`` outside functions and
    classes.  CPython compiles ``name.attr(...)`` differently when ``name`` was
    imported (it knows an attribute of a module is no method), so compiling a
    function alone must be told which names those are."""
    return _module_facts(text)[0]


@functools.lru_cache(maxsize=64)
def _module_facts(text: str) -> tuple[frozenset[str], dict[int, int]]:
    """:func:`imported_names`, and the last line of each ``def`` by its first
    line (its first decorator's, where :func:`inspect.findsource` starts it),
    from one reading of a module's text."""
    tree = _module_tree(text)
    if tree is None:
        return frozenset(), {}
    ends = {min([d.lineno for d in node.decorator_list] + [node.lineno]): node.end_lineno or node.lineno
            for node in _defs(tree.body)}
    return _imported(tree), ends


#: the text of the module parsed last and its tree (None: not Python), kept for the reading of its
#: functions that follows (:func:`module_def`): one module's (a tree is large)
_last_tree: tuple[str, ast.Module | None] = ("", None)


def _module_tree(text: str) -> ast.Module | None:
    """The tree of a module's text (None: not Python); kept as the last one parsed."""
    global _last_tree
    last = _last_tree
    if last[0] == text and last[0]:  # (the same string object, most often: compared by identity first)
        return last[1]
    try:
        tree = deep.parse_ast(text)
    except (SyntaxError, ValueError):
        tree = None
    _last_tree = (text, tree)
    return tree


def clear_module_tree() -> None:
    """Forget the module tree kept (:func:`_module_tree`)."""
    global _last_tree
    _last_tree = ("", None)


def odd_breaks(text: str) -> bool:
    """Whether ``text`` holds a line break other than "\\n" (or a form feed): where Python's parser and
    ``str.splitlines`` (which a module's lines may come from) count lines differently.  (``in`` of each
    character, each a scan in C: a hundredth of the time of a regular expression's character class.)"""
    return ("\r" in text or "\v" in text or "\f" in text or "\x1c" in text or "\x1d" in text or "\x1e" in text
            or (not text.isascii() and ("\x85" in text or "\u2028" in text or "\u2029" in text)))


def module_def(text: str, first: int, end: int) -> ast.FunctionDef | None:
    """The ``def`` of the module ``text`` (the module parsed last: no other is parsed again) whose first
    line (its first decorator's) is ``first`` and last ``end``, at the module's top level (its text at
    the start of its lines: its lines, dedented, are its text as the module has it); None if there is
    none, or if the module's lines may not be Python's (line breaks other than newlines)."""
    last = _last_tree
    tree = last[1]
    if tree is None or last[0] != text or odd_breaks(text):
        return None
    body = tree.body
    i = bisect.bisect_left(body, first, key=_LINENO)  # (statements in order of their lines)
    node = body[i] if i < len(body) else None
    if type(node) is not ast.FunctionDef or node.end_lineno != end or node.col_offset != 0 or \
            min([d.lineno for d in node.decorator_list], default=node.lineno) != first:
        return None
    return node


_LINENO = operator.attrgetter("lineno")


def _alone(node: ast.FunctionDef, text: str) -> bool:
    """Whether the module tree kept (:func:`module_def`) holds nothing another reading would look for:
    ``node`` its only ``def`` or class at the top level, and no ``lambda`` in its text.  It is then
    forgotten once ``node`` is read: the first collection of the garbage collector after a transformation
    would otherwise walk all of its nodes (each with a ``__dict__``), some 4 ms of the transformation of a
    500-line function; a later reading of the module parses it again (:func:`_module_tree`)."""
    text_read, tree = _last_tree
    return tree is not None and text_read == text and "lambda" not in text and not any(
        type(s) in _DEFS for s in tree.body if s is not node)


def _forget(text: str) -> None:
    """Forget the module tree kept if it is still that of ``text`` (another thread may have parsed
    another module since: only a reading's speed depends on which tree is kept)."""
    global _last_tree
    if _last_tree[0] == text:
        _last_tree = ("", None)


def _imported(tree: ast.Module) -> frozenset[str]:
    names: set[str] = set()
    for node in _statements(tree.body, False):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
    return frozenset(names)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


#: the statements with blocks inside (the others: none of the fields :func:`_statements` reads)
_BLOCKS = frozenset(getattr(ast, name) for name in (
    "FunctionDef", "AsyncFunctionDef", "ClassDef", "If", "For", "AsyncFor", "While", "With", "AsyncWith", "Try",
    "TryStar", "Match") if hasattr(ast, name))


def _defs(body: list[ast.stmt]) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The ``def`` statements of ``body`` and of the blocks inside it (those of functions and classes
    too): :func:`_statements` of the statements with blocks only (most statements have none)."""
    found = []
    todo = [s for s in body if type(s) in _BLOCKS]
    while todo:
        node = todo.pop()
        if type(node) is ast.FunctionDef or type(node) is ast.AsyncFunctionDef:
            found.append(node)
        for field in ("body", "orelse", "finalbody"):
            todo.extend([s for s in getattr(node, field, ()) if type(s) in _BLOCKS])
        for part in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):  # except / match blocks
            todo.extend([s for s in part.body if type(s) in _BLOCKS])
    return found


def _statements(body: list[ast.stmt], into_defs: bool) -> Iterator[ast.stmt]:
    """Every statement of ``body`` and of the blocks inside it (``def`` and ``import`` are statements:
    no expression is walked, which is most of a module's nodes); into the bodies of functions and
    classes too where ``into_defs``."""
    todo: list[ast.stmt] = list(body)
    while todo:
        node = todo.pop()
        yield node
        if not into_defs and isinstance(node, _DEFS):
            continue
        for field in ("body", "orelse", "finalbody"):
            todo.extend(getattr(node, field, ()))
        for part in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):  # except / match blocks
            todo.extend(part.body)


def check_matches(code: types.CodeType, source: str, what: str, file: str,
                  imported: frozenset[str] = frozenset()) -> None:
    """Refuse ``source`` unless, compiled, it gives ``code`` (up to line numbers)."""
    _check_dedented(code, dedent(source), what, file, imported)


def _check_dedented(code: types.CodeType, source: str, what: str, file: str, imported: frozenset[str]) -> None:
    compiled = _compile(code, source, imported)
    if compiled is None or not same_code(compiled, code):
        if _rewritten_by_pytest(code):
            raise SourceUnavailableError(
                f"the `assert` statements of {what} in {file} were rewritten by pytest (it rewrites those of test "
                "modules as it imports them), so the code Python runs is not the text in the file",
                hint="define the function in a module pytest does not rewrite (not test_*.py or conftest.py), or "
                     "put PYTEST_DONT_REWRITE in the test module's docstring")
        raise SourceUnavailableError(
            f"the source of {what} in {file} is not the code Python runs: the file was edited since the module "
            "was imported (or the text at that line is another function)", hint=_RELOAD)


def _rewritten_by_pytest(code: types.CodeType) -> bool:
    """Whether pytest's assertion rewriting made ``code`` (or a function nested in it): it reads its helpers
    through the names ``@pytest_ar`` and ``@py_builtins``, which no Python source can spell."""
    return "@pytest_ar" in code.co_names or any(
        isinstance(c, types.CodeType) and _rewritten_by_pytest(c) for c in code.co_consts)


#: a line of blanks only (:func:`textwrap.dedent` empties them)
_BLANK_LINE = re.compile("^[ \t]+$", re.MULTILINE)


def dedent(text: str) -> str:
    """``textwrap.dedent(text)`` of the lines of code: a line inside a string literal (a
    multi-line docstring's) is kept as it is, since it is part of the string's value.  Where the
    first line is not indented (a module-level ``def``), only the emptying of blank lines: where
    it has none, the text itself (without the reading of its tokens that finds its strings, some
    20 microseconds a line: a docstring's quotes ask for it)."""
    if text[:1] not in ("", " ", "\t", "\n") and _may_span_lines(text) and not any(
            not line.strip() and line.rstrip("\r\n") for line in text.splitlines(True)):
        return text  # (what both ways below give: each changes only lines of blanks)
    inside = _in_strings(text)
    if inside:
        return _dedent_code(text, inside)
    if text[:1] not in ("", " ", "\t", "\n"):  # (a line of blanks ends in a blank before a newline or the
        return _BLANK_LINE.sub("", text) if _ends_blank(text) else text  # text's end: where none does, none)
    return textwrap.dedent(text)


def _ends_blank(text: str) -> bool:
    """Whether a line of ``text`` ends with a blank (str.__contains__: a tenth of the time of the
    substitution of :data:`_BLANK_LINE` over a 500-line function, which finds nothing where this is False)."""
    return " \n" in text or "\t\n" in text or text.endswith((" ", "\t"))


def indent(text: str, prefix: str) -> str:
    """``textwrap.indent(text, prefix)`` of the lines of code (not of those inside a string literal)."""
    inside = _in_strings(text)
    return "".join(line if i in inside or not line.strip() else prefix + line
                   for i, line in enumerate(text.splitlines(True)))


def string_lines(text: str) -> frozenset[int]:
    """The (0-based) lines of ``text`` that :func:`dedent` keeps as they are (inside a string literal,
    or a line continued)."""
    return _in_strings(text)


#: the tokens that neither begin nor continue a logical line
_NOT_CODE = frozenset({tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
                       tokenize.ENCODING, tokenize.ENDMARKER})


def _in_strings(text: str) -> frozenset[int]:
    """The (0-based) lines of ``text`` that begin inside a string literal (the lines after the first
    of each multi-line string: only triple-quoted strings and backslash-continued ones span lines) or
    inside a logical line (after a backslash, or inside brackets), and the lines of comments alone: their
    indentation is not Python's (a method's ``y = f(a,`` may go on at the line's start, less indented
    than its ``def``; a line of code commented out may start with its ``#``)."""
    if not _may_span_lines(text) and not _less_indented(text):
        return frozenset()
    inside: set[int] = set()
    logical, seen = False, 0  # (in a logical line; the last row a token reached)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            row, kind = tok.start[0], tok.type
            if row > seen and (logical or kind == tokenize.COMMENT):
                inside.add(row - 1)  # (a line begun inside a logical line, or a comment's own line)
            if tok.end[0] > row and kind != tokenize.NEWLINE and kind != tokenize.NL:
                inside.update(range(row, tok.end[0]))  # rows start+1 .. end (1-based), 0-based
            if kind == tokenize.NEWLINE:
                logical = False
            elif kind not in _NOT_CODE:
                logical = True
            seen = max(seen, tok.end[0])
    except (tokenize.TokenError, SyntaxError):
        return frozenset()  # (not Python: the check that follows refuses it)
    return frozenset(inside)


def _less_indented(text: str) -> bool:
    """Whether a line of ``text`` (not blank) is less indented than its first (a line continued, in a
    string, or a comment: where ``text`` is a function's, not the next statement of its block)."""
    margin = text[:len(text) - len(text.lstrip(" \t"))]
    return bool(margin) and any(not line.startswith(margin) and line.strip() for line in text.split("\n"))


def _may_span_lines(text: str) -> bool:
    """Whether a string literal of ``text`` may span lines (only triple-quoted strings and
    backslash-continued ones can)."""
    return '"""' in text or "'''" in text or "\\\n" in text


def _dedent_code(text: str, inside: frozenset[int]) -> str:
    lines = text.splitlines(True)
    code = [line for i, line in enumerate(lines) if i not in inside and line.strip()]
    margins = [line[:len(line) - len(line.lstrip(" \t"))] for line in code]
    margin = margins[0] if margins else ""
    for m in margins[1:]:
        while not m.startswith(margin):
            margin = margin[:-1]
    return "".join(line if i in inside else (line[len(margin):] if line.strip() else line[len(line.rstrip("\r\n")):])
                   for i, line in enumerate(lines))


def _compile(code: types.CodeType, source: str, imported: frozenset[str]) -> types.CodeType | None:
    """The code object of the function ``source`` defines, compiled as ``code``
    was: with the same ``__future__`` flags, in a module that imports the same
    names (compiled only: nothing is imported), and inside a function that binds
    its free variables (so that they are read as closure cells, not globals)."""
    text = source
    if code.co_freevars:
        cells = "".join(f"    {n} = None\n" for n in code.co_freevars)
        text = "def __astad_enclosing__():\n" + cells + indent(source, "    ")
    if imported:
        text = f"import {', '.join(sorted(imported))}\n" + text
    try:
        module = deep.compile_ast(text, "<astad: source check>", code.co_flags & _FUTURE_FLAGS)
    except (SyntaxError, ValueError):
        return None
    if code.co_freevars:
        module = next((c for c in module.co_consts if isinstance(c, types.CodeType)), None)
        if module is None:
            return None
    found = [c for c in module.co_consts if isinstance(c, types.CodeType) and c.co_name == code.co_name]
    return found[0] if len(found) == 1 else None


#: what must agree between two code objects for them to run the same way (with the instructions, and
#: the flags but CO_NESTED: a function compiled alone is not nested)
_FIELDS = ("co_name", "co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_names",
           "co_varnames", "co_freevars", "co_cellvars")

#: the same operation compiled two ways: CPython 3.11 calls an attribute of a
#: module-level name bound by `import` with LOAD_ATTR (not LOAD_METHOD), which
#: it knows only when compiling the whole module
_SAME_OP = {"LOAD_METHOD": "LOAD_ATTR"}
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)
_NAMED = frozenset(dis.hasname)


def same_code(a: types.CodeType, b: types.CodeType) -> bool:
    """Whether two code objects are the same program (line numbers aside)."""
    if any(getattr(a, f) != getattr(b, f) for f in _FIELDS) or len(a.co_consts) != len(b.co_consts) or (
            a.co_flags & ~inspect.CO_NESTED != b.co_flags & ~inspect.CO_NESTED):
        return False
    # the same bytes with the same tables of names are the same instructions (dis is slow on a long function)
    same_ops = a.co_code == b.co_code or _instructions(a) == _instructions(b)
    return same_ops and all(_same_const(x, y) for x, y in zip(a.co_consts, b.co_consts))


def _instructions(code: types.CodeType) -> list[tuple[str, Any]]:
    """The instructions, each an operation and its argument: a name by its text,
    a jump by the index of its target (offsets depend on inline caches, and so
    does where EXTENDED_ARG is needed)."""
    index: dict[int, int] = {}
    found = []
    for ins in dis.get_instructions(code):
        index[ins.offset] = len(found)  # an EXTENDED_ARG: the instruction it extends
        if ins.opname != "EXTENDED_ARG":  # its value is in the next instruction's argument
            found.append(ins)
    out = []
    for ins in found:
        op = _SAME_OP.get(ins.opname, ins.opname)
        if ins.opcode in _JUMPS:
            out.append((op, index.get(ins.argval, -1)))
        elif ins.opcode in _NAMED:
            out.append((op, ins.argval))
        else:
            out.append((op, ins.arg))
    return out


def _same_const(x: Any, y: Any) -> bool:
    if isinstance(x, types.CodeType) or isinstance(y, types.CodeType):
        return isinstance(x, types.CodeType) and isinstance(y, types.CodeType) and same_code(x, y)
    if isinstance(x, (tuple, frozenset)) or isinstance(y, (tuple, frozenset)):
        if type(x) is not type(y) or len(x) != len(y):
            return False
        if isinstance(x, frozenset):
            x, y = sorted(x, key=repr), sorted(y, key=repr)
        return all(_same_const(a, b) for a, b in zip(x, y))
    return type(x) is type(y) and repr(x) == repr(y)  # repr: tells 0.0 from -0.0, and nan equals nan
