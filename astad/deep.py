"""Room to recurse, without changing the interpreter's recursion limit.

The frontend lowers a call by lowering the callee's body inside it, so a
recursion in the user's code (Horner's rule over 500 coefficients) nests the
lowering as deep as the recursion goes, some 30 Python frames a level; a
deeply nested expression nests it as well.  Raising ``sys.setrecursionlimit``
would change the whole process (and race between threads); instead, when the
current thread's stack is deep, :func:`call` continues the work on a fresh
thread and waits for it.  The recursion limit counts each thread's own
frames, so every thread starts with the full limit: the stack grows in
segments of at most :data:`SEGMENT` frames, while only one thread runs at a
time (the others wait in ``join``), so the lowering stays sequential.

:func:`walk` visits a libcst tree with an explicit stack (libcst's own
visitors recurse a few frames per node); :func:`children` is libcst's
``node.children`` without rebuilding the node (libcst's own rebuilds it).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import gc
import sys
import threading
from collections.abc import Sequence
from typing import Any, Callable, Iterator, TypeVar

import libcst as cst

T = TypeVar("T")


def segment() -> int:
    """Frames a thread may use before the work moves to a fresh thread: a
    third of the limit, leaving the rest for libcst and numpy below a hop."""
    return max(sys.getrecursionlimit() // 3, 50)


def deep() -> bool:
    """Whether this thread's stack is deeper than :func:`segment` frames."""
    try:
        sys._getframe(segment())
    except ValueError:
        return False
    return True


#: how many calls of :func:`call` each thread is inside
_nesting = threading.local()

#: :func:`call` looks at the stack's depth at every this many levels of calls
#: inside calls (a look costs microseconds: Python raises and catches an error
#: when the stack is shallow, and the lowering calls it at every expression);
#: in between, a few levels more than a segment may pile up, well within the
#: two thirds of the limit a segment leaves.  Every level under a low limit.
CHECK_EVERY = 4


def call(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, on a fresh thread when this thread's stack is deep."""
    n = getattr(_nesting, "n", 0)
    if (n % CHECK_EVERY == 0 or sys.getrecursionlimit() < 1000) and deep():
        return fresh(fn, *args)
    _nesting.n = n + 1
    try:
        return fn(*args)
    finally:
        _nesting.n = n


def fresh(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on a fresh thread (a stack of its own), in a copy of the
    caller's context; its result or exception comes back to the caller."""
    context = contextvars.copy_context()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = context.run(fn, *args)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            box["error"] = e

    worker = threading.Thread(target=run, name="astad-deep", daemon=True)
    worker.start()
    worker.join()
    if "error" in box:
        error = box.pop("error")
        try:
            raise error
        finally:
            del error
    return box["value"]


#: per libcst node class, its dataclass fields
_FIELDS: dict[type, tuple[str, ...]] = {}
#: (class, the fields holding nodes in one instance) -> those fields in source order
_ORDER: dict[tuple[type, tuple[str, ...]], tuple[str, ...]] = {}


#: per class of a field's value, whether it is a libcst node (isinstance of
#: an abstract class costs more than this look-up)
_IS_NODE: dict[type, bool] = {}


def is_node(value: Any) -> bool:
    cls = type(value)
    found = _IS_NODE.get(cls)
    if found is None:
        found = _IS_NODE[cls] = issubclass(cls, cst.CSTNode)
    return found


def _holds_nodes(value: Any) -> bool:
    if type(value) is LazyNodes:
        value = value.made()
    return is_node(value) or (type(value) in (tuple, list) and bool(value) and is_node(value[0]))


_MAKING = threading.RLock()


def _made_already() -> tuple:
    raise AssertionError("made")


class LazyNodes(Sequence):
    """The statements of a block (``IndentedBlock.body``), made when first read: ``make()`` gives
    them, kept here (the block is not given them: the two would hold each other, a cycle).  Any
    reading (``len``, indexing, iteration: libcst's visitors, :func:`children`) makes them; the lowering of straight-line code reads the statements of Python's tree instead
    (:mod:`astad.frontend.fast`), and so reads none of them."""

    __slots__ = ("make", "source", "_made")

    def __init__(self, make: Callable[[], tuple], source: Any) -> None:
        self.make, self.source, self._made = make, source, None

    def made(self) -> tuple:
        found = self._made
        if found is None:
            with _MAKING:  # (one making: every thread reads the same nodes)
                found = self._made
                if found is None:
                    found = self._made = tuple(self.make())
                    self.make = _made_already
        return found

    def is_made(self) -> bool:
        return self._made is not None

    def __len__(self) -> int:
        return len(self.made())

    def __getitem__(self, i: Any) -> Any:
        return self.made()[i]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.made())

    def __eq__(self, other: object) -> bool:
        return self.made() == (other.made() if type(other) is LazyNodes else other)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return repr(self.made())


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children`` (the child nodes in source order), read from the node's
    fields: libcst computes ``children`` by rebuilding the node, some 30 times
    slower.  The order of a class's fields in the source is learnt from
    libcst's ``children`` the first time a class is seen with a given set of
    fields present (libcst visits a class's fields in a fixed order)."""
    cls = type(node)
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    found: list[str] = []  # (_holds_nodes of each field, inline: this runs for every node of every walk)
    for f in fields:
        value = getattr(node, f)
        kind = type(value)
        if kind is LazyNodes:  # (made now: the field holds the tuple from here on)
            value = value.made()
            kind = tuple
        node_like = _IS_NODE.get(kind)
        if node_like is None:
            node_like = is_node(value)
        if node_like or ((kind is tuple or kind is list) and value and is_node(value[0])):
            found.append(f)
    present = tuple(found)
    order = _ORDER.get((cls, present))
    if order is None:
        slow = list(node.children)
        field_of = {}
        for f in present:
            value = getattr(node, f)
            for child in (value if type(value) in (tuple, list) else (value,)):
                field_of[id(child)] = f
        learnt = tuple(dict.fromkeys(field_of.get(id(c), "") for c in slow))
        if sorted(learnt) != sorted(present):  # not a plain walk of the fields: ask libcst every time
            return slow
        order = _ORDER[(cls, present)] = learnt
    return _in_order(node, order)


#: fields that hold only whitespace, comments or punctuation (parentheses, commas, ...)
#: (those typed so in libcst's classes, but the ``whitespace...`` ones)
_FORMATTING = frozenset({"lpar", "rpar", "comma", "trailing_comma", "semicolon", "equal", "dot", "colon",
                         "first_colon", "second_colon", "leading_lines", "lines_after_decorators", "header", "footer",
                         "empty_lines", "first_line", "last_line", "lbracket", "rbracket", "lbrace", "rbrace",
                         "newline", "comment"})
#: per libcst node class, its fields that are not formatting (:data:`_FORMATTING`, whitespace)
_SYNTAX_FIELDS: dict[type, tuple[str, ...]] = {}
#: (class, the syntax fields holding nodes in one instance) -> those fields in source order
_SYNTAX_ORDER: dict[tuple[type, tuple[str, ...]], tuple[str, ...]] = {}


def _in_order(node: cst.CSTNode, order: tuple[str, ...]) -> list[cst.CSTNode]:
    """The nodes in ``node``'s fields ``order``, a sequence's items in place."""
    out: list[cst.CSTNode] = []
    for f in order:
        value = getattr(node, f)
        if is_node(value):
            out.append(value)
        else:
            out.extend(value)
    return out


def syntax_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """:func:`children` but whitespace, comments and punctuation (a check of the
    syntax never looks at them; about half the nodes of a tree), in the same order."""
    cls = type(node)
    fields = _SYNTAX_FIELDS.get(cls)
    if fields is None:
        fields = _SYNTAX_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls)
                                             if f.name not in _FORMATTING and "whitespace" not in f.name)
    found: list[str] = []  # (_holds_nodes of each field, inline as in children: this runs for every node of a walk)
    for f in fields:
        value = getattr(node, f)
        kind = type(value)
        if kind is LazyNodes:
            value = value.made()
            kind = tuple
        node_like = _IS_NODE.get(kind)
        if node_like is None:
            node_like = is_node(value)
        if node_like or ((kind is tuple or kind is list) and value and is_node(value[0])):
            found.append(f)
    present = tuple(found)
    order = _SYNTAX_ORDER.get((cls, present))
    if order is None:
        field_of = {}
        for f in present:
            value = getattr(node, f)
            for child in (value if type(value) in (tuple, list) else (value,)):
                field_of[id(child)] = f
        order = tuple(dict.fromkeys(field_of[id(c)] for c in children(node) if id(c) in field_of))
        if sorted(order) != sorted(present):  # (not a plain walk of the fields: as children does)
            return [c for c in children(node) if id(c) in field_of]
        _SYNTAX_ORDER[(cls, present)] = order
    return _in_order(node, order)


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node of the tree under ``node`` (itself first), parents before
    children, children in source order."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(reversed(children(n)))


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` for a visitor that changes nothing, with an explicit
    stack: ``on_visit`` before the children (which it may skip by returning
    False), ``on_leave`` after them, as libcst calls them."""
    todo: list[tuple[cst.CSTNode, bool]] = [(node, False)]
    while todo:
        n, leaving = todo.pop()
        if leaving:
            visitor.on_leave(n)
            continue
        todo.append((n, True))
        if visitor.on_visit(n):
            todo.extend((c, False) for c in reversed(children(n)))


#: per tuple of classes ``found_below`` stops at or looks for, per class: whether it is one of them
_STOPS: dict[tuple[type, ...], dict[type, bool]] = {}


def found_below(node: cst.CSTNode, kinds: tuple[type, ...], stop: tuple[type, ...],
                memo: dict[cst.CSTNode, bool]) -> bool:
    """Whether ``node`` or a node under it is one of ``kinds``, not looking under
    the nodes of ``stop`` below ``node``, nor at whitespace, comments and punctuation
    (:func:`syntax_children`: ``kinds`` are none of those).  ``memo`` keeps the answer
    for every node looked at, so that asking about each statement of a nest of blocks
    costs time linear in the nest, not quadratic (one ``memo`` per ``kinds``
    and ``stop``)."""
    stops = _STOPS.setdefault(stop, {})  # (per class: isinstance of libcst's abstract classes is slow)
    wanted = _STOPS.setdefault(kinds, {})
    todo: list[tuple[cst.CSTNode, list[cst.CSTNode] | None]] = [(node, None)]
    while todo:
        n, kids = todo.pop()
        if n in memo:
            continue
        if kids is None:
            kids = []
            for c in syntax_children(n):
                cls = type(c)
                stopped = stops.get(cls)
                if stopped is None:
                    stopped = stops[cls] = issubclass(cls, stop)
                if not stopped:
                    kids.append(c)
            todo.append((n, kids))
            todo.extend((c, None) for c in kids if c not in memo)
        else:
            cls = type(n)
            found = wanted.get(cls)
            if found is None:
                found = wanted[cls] = issubclass(cls, kinds)
            memo[n] = found or any(memo[c] for c in kids)
    return memo[node]


# CPython 3.11 keeps the AST converter's recursion depth in per-interpreter
# state: two threads converting at once (a garbage collection in one lets the
# other run) can fail with SystemError "AST constructor recursion depth
# mismatch" (python/cpython#106905).  astad's own conversions take turns.
_AST = threading.Lock()


def _taking_turns(convert: Callable[[], Any]) -> Any:
    """``convert()`` under the lock, again if the shared depth was changed under us (see above)."""
    for attempt in range(3):
        with _AST:
            try:
                return convert()
            except SystemError as e:
                if "recursion depth mismatch" not in str(e) or attempt == 2:
                    raise
    raise AssertionError("unreachable")


def parse_ast(source: str, filename: str = "<unknown>") -> Any:
    """``ast.parse``, one thread at a time."""
    import ast

    return _taking_turns(lambda: ast.parse(source, filename))


def compile_ast(tree: Any, filename: str, flags: int = 0) -> Any:
    """``compile`` of an ``ast`` tree or of source text, one thread at a time."""
    return _taking_turns(lambda: compile(tree, filename, "exec", flags=flags, dont_inherit=True))


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a transformation runs: it
    makes hundreds of thousands of small objects (syntax trees, IR), nearly all
    still alive, and every full collection walks all of them again (some 40% of
    the time of transforming a large function).  Back on afterwards, as it was
    (a nested use leaves it off for the outer one)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
