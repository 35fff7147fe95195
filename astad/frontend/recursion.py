"""Recursion whose depth is known only when running, as two loops.

A recursive call is first unrolled while transforming (:meth:`run_call`); when
a call repeats the static key of a call it is inside (same shapes, same known
ints), its depth is known only at run time.  A *linear* recursion, the
everyday shape

    def g(x, n):
        if n <= 0:                      # base cases first, each ending in `return`
            return x
        y = x * 0.5                     # S: no `return`, no recursive call
        return np.sin(g(y, n - 1)) + y  # T: the one recursive call; then U, if any

is then lowered as what it computes: a descent loop that runs while no base
case holds, recording per level the variables the rest of the body reads (one
list per variable) and rebinding the parameters to the call's arguments; the
base case; and an ascent loop over the levels in reverse, which restores each
level's variables and finishes the body with the call's value.  Both macros
differentiate the two loops as any loop (a tape in reverse mode, tangents
carried in forward mode).  The code is pure, so evaluating the call's
arguments before the rest of its statement changes nothing.

Anything else (two recursive calls, a call in a loop, a lambda, a short-circuit
or conditional expression, a `return` between the base cases and the call) is
refused with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from typing import Callable

from .. import deep
from ..errors import Loc, UnsupportedSyntaxError
from .syntax import stmts_of


class RuntimeDepth(UnsupportedSyntaxError):
    """A recursive call that repeats the static key of the call ``scope`` it is
    inside: its depth is known only when running.  Caught where ``scope`` was
    entered, which lowers the function as loops if it can."""

    def __init__(self, message: str, loc: Loc, hint: str, scope: object) -> None:
        super().__init__(message, loc, hint)
        self.scope = scope


class NotLinear(Exception):
    """Why a recursive function is not of the linear shape (with the node to point at)."""

    def __init__(self, message: str, node: cst.CSTNode, mutual: bool = False) -> None:
        super().__init__(message)
        self.node, self.mutual = node, mutual


@dataclass
class LoopForm:
    """The rewritten function, and which node of the user's each new node stands for."""

    funcdef: cst.FunctionDef
    aliases: dict[cst.CSTNode, cst.CSTNode] = field(default_factory=dict)


HINT = ("a linear recursion: base cases first (`if <cond>: ... return <value>`), then statements without "
        "`return`, then one statement with the one recursive call, then statements ending in `return`")


def loop_form(fd: cst.FunctionDef, taken: set[str]) -> LoopForm:
    """``fd`` (directly self-recursive) as a descent loop, its base case and an
    ascent loop; ``taken``: the names the new variables must not be."""
    return _Rewrite(fd, taken).run()


class _Rewrite:
    def __init__(self, fd: cst.FunctionDef, taken: set[str]) -> None:
        self.fd, self.name = fd, fd.name.value
        self.taken = set(taken)
        self.aliases: dict[cst.CSTNode, cst.CSTNode] = {}
        params = fd.params
        if params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or params.kwonly_params or params.star_kwarg \
                or params.posonly_params:
            raise NotLinear("a recursive function with `*`, `**` or keyword-only parameters", fd)
        self.params = [p.name.value for p in params.params]

    def fresh(self, base: str) -> str:
        name, k = base, 2
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name

    def made(self, new: cst.CSTNode, user: cst.CSTNode) -> cst.CSTNode:
        """``new`` stands for the user's node ``user`` (in errors and the generated code's line comments)."""
        user = self.aliases.get(user, user)
        self.aliases[new] = user
        if isinstance(new, cst.SimpleStatementLine):
            for small in new.body:
                self.aliases[small] = user.body[0] if isinstance(user, cst.SimpleStatementLine) else user
        return new

    def made_all(self, new: cst.CSTNode, user: cst.CSTNode, keep: set[int] = frozenset()) -> cst.CSTNode:  # type: ignore[assignment]
        """``new`` and every node in it stand for ``user`` (but the user's own nodes in ``keep``)."""
        todo = [new]
        while todo:
            node = todo.pop()
            if id(node) in keep:
                continue
            self.made(node, user)
            todo.extend(deep.children(node))
        return new

    # ------------------------------------------------------------------ the shape

    def run(self) -> LoopForm:
        if not _calls(self.fd.body, self.name):
            raise NotLinear(f"{self.name} calls itself through another function (a mutual recursion)", self.fd,
                            mutual=True)
        body = self.normalise([s for s in stmts_of(self.fd.body) if not _is_docstring(s)])
        k = 0
        while k < len(body) and self.is_base(body[k]):
            k += 1
        bases, rest = body[:k], body[k:]
        if not bases:
            finder = _CallFinder(self.name)
            self.fd.body.visit(finder)
            raise NotLinear("no base case (`if <cond>: ... return <value>`) before the recursive call",
                            finder.calls[0] if finder.calls else self.fd)
        at = [i for i, s in enumerate(rest) if _calls(s, self.name)]
        if len(at) != 1:
            raise NotLinear("the recursive call must be in one statement after the base cases",
                            rest[at[1]] if len(at) > 1 else self.fd)
        before, call_stmt, after = rest[:at[0]], rest[at[0]], rest[at[0] + 1:]
        for s in before:
            if _returns(s):
                raise NotLinear("a `return` between the base cases and the recursive call", s)
        call = self.the_call(call_stmt)
        return LoopForm(self.assemble(bases, before, call_stmt, call, after), self.aliases)

    def normalise(self, body: list) -> list:
        """``if c: A (returns) else: B`` as ``if c: A`` then B; ``if c: A (the
        recursion, returns)`` then R (returns) as ``if not c: R`` then A."""
        out: list = []
        for i, s in enumerate(body):
            if isinstance(s, cst.If) and s.orelse is not None and _always_returns(s.body):
                out.append(self.made(s.with_changes(orelse=None), s))
                rest = [s.orelse] if isinstance(s.orelse, cst.If) else list(stmts_of(s.orelse.body))
                return out + self.normalise(rest + body[i + 1:])
            if isinstance(s, cst.If) and s.orelse is None and _calls(s, self.name) and _always_returns(s.body) \
                    and not _calls(s.test, self.name):
                rest = body[i + 1:]
                if rest and not any(_calls(r, self.name) for r in rest) and _is_return(rest[-1]):
                    flipped = s.with_changes(test=_negated(s.test), body=cst.IndentedBlock(rest))
                    return out + [self.made(flipped, s)] + list(stmts_of(s.body))
            out.append(s)
        return out

    def is_base(self, s: cst.BaseStatement) -> bool:
        if not isinstance(s, cst.If) or s.orelse is not None or _calls(s, self.name):
            return False
        body = list(stmts_of(s.body))
        return bool(body) and _is_return(body[-1]) and not any(_returns(b) for b in body[:-1])

    def the_call(self, stmt: cst.BaseStatement) -> cst.Call:
        finder = _CallFinder(self.name)
        stmt.visit(finder)
        if len(finder.calls) != 1:
            raise NotLinear("two recursive calls in one statement (a tree recursion)", stmt)
        if finder.guarded:
            raise NotLinear(f"the recursive call is inside {finder.guarded}", finder.calls[0])
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], (cst.Return, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Expr))):
            raise NotLinear("the recursive call must be in a simple statement (`return ...`, `y = ...`)", stmt)
        return finder.calls[0]

    # ------------------------------------------------------------------ the loops

    def assemble(self, bases: list, before: list, call_stmt: cst.SimpleStatementLine, call: cst.Call,
                 after: list) -> cst.FunctionDef:
        result = self.fresh(f"{self.name}_result")
        depth = self.fresh("depth")
        level = self.fresh("level")
        ascent_body = [self.made(_replace_call(call_stmt, call, result), call_stmt)] + after
        if not after:
            if not _is_return(call_stmt):
                raise NotLinear("the function must end with `return <value>` after the recursive call", call_stmt)
        elif not _is_return(after[-1]) or any(_returns(s) for s in after[:-1]):
            raise NotLinear("after the recursive call, one `return` at the end", after[-1])
        elif _is_return(call_stmt):
            raise NotLinear("statements after a `return`", after[0])
        assigned = set(self.params) | {n for s in before for n in _assigned(s)}
        saved = [n for n in sorted(_read(ascent_body)) if n in assigned]
        lists = {n: self.fresh(f"{n}_levels") for n in saved}

        def line(text: str, user: cst.CSTNode) -> cst.BaseStatement:
            return self.made_all(cst.parse_statement(text), user)

        conds = [_negated(cst.ensure_type(b, cst.If).test) for b in bases]
        go = conds[0]
        for c in conds[1:]:
            go = cst.BooleanOperation(go, cst.And(), c)
        args = self.arguments(call)
        rebind = cst.SimpleStatementLine([cst.Assign(
            [cst.AssignTarget(cst.Tuple([cst.Element(cst.Name(p)) for p in self.params]))],
            cst.Tuple([cst.Element(a) for a in args]))])
        self.made_all(rebind, call_stmt, keep=set(map(id, args)))
        descent = cst.While(go, cst.IndentedBlock([
            *before,
            *[line(f"{lists[n]}.append({n})", call_stmt) for n in saved],
            line(f"{depth} = {depth} + 1", call_stmt),
            rebind]))
        self.made(descent, call)
        restore = [line(f"{n} = {lists[n]}[{level}]", call_stmt) for n in saved]
        ascent = cst.For(cst.Name(level), cst.parse_expression(f"range({depth} - 1, -1, -1)"),
                         cst.IndentedBlock([*restore, *[self.into(s, result) for s in ascent_body]]))
        self.made(ascent, call)
        made_ret = cst.SimpleStatementLine([cst.Return(cst.Name(result))])
        self.made(made_ret, after[-1] if after else call_stmt)
        body = [*[line(f"{lists[n]} = []", call_stmt) for n in saved], line(f"{depth} = 0", call_stmt), descent,
                *self.base_case(bases, result), ascent, made_ret]
        return self.fd.with_changes(body=cst.IndentedBlock(body))

    def arguments(self, call: cst.Call) -> list[cst.BaseExpression]:
        by_name: dict[str, cst.BaseExpression] = {}
        for i, a in enumerate(call.args):
            if a.star:
                raise NotLinear("`*args` in the recursive call", call)
            if a.keyword is None:
                if i >= len(self.params):
                    raise NotLinear("too many arguments in the recursive call", call)
                by_name[self.params[i]] = a.value
            else:
                by_name[a.keyword.value] = a.value
        missing = [p for p in self.params if p not in by_name]
        if missing or set(by_name) - set(self.params):
            raise NotLinear("the recursive call must pass every parameter (defaults are not filled in)", call)
        return [by_name[p] for p in self.params]

    def base_case(self, bases: list, result: str) -> list[cst.BaseStatement]:
        """The base cases after the descent: the first whose condition holds (the
        last needs no test: the descent stopped because one holds)."""
        out = [self.into(s, result) for s in stmts_of(bases[-1].body)]
        for b in reversed(bases[:-1]):
            body = cst.IndentedBlock([self.into(s, result) for s in stmts_of(b.body)])
            out = [self.made(b.with_changes(body=body, orelse=cst.Else(cst.IndentedBlock(out))), b)]
        return out

    def into(self, stmt: cst.BaseStatement, result: str) -> cst.BaseStatement:
        """``return e`` as ``result = e`` (a statement that is not a return: itself)."""
        if not _is_return(stmt):
            return stmt
        ret = stmt.body[0]  # type: ignore[attr-defined]
        if ret.value is None:
            raise NotLinear("`return` without a value", stmt)
        return self.made(stmt.with_changes(body=[cst.Assign([cst.AssignTarget(cst.Name(result))], ret.value)]), stmt)


def calls_itself(fd: cst.FunctionDef) -> bool:
    """Whether ``fd``'s body calls the function by its own name (only such a recursion is lowered as
    loops); a loop over the tree, not a visitor: a body may nest calls thousands deep."""
    name = fd.name.value
    todo: list[cst.CSTNode] = [fd.body]
    while todo:
        node = todo.pop()
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == name:
            return True
        todo.extend(deep.children(node))
    return False


def self_call_sites(fd: cst.FunctionDef) -> int:
    """How many calls of ``fd`` by its own name its body holds."""
    name = fd.name.value
    todo: list[cst.CSTNode] = [fd.body]
    n = 0
    while todo:
        node = todo.pop()
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == name:
            n += 1
        todo.extend(deep.children(node))
    return n


def _negated(test: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression
    return cst.UnaryOperation(cst.Not(), test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))


def _is_docstring(s: cst.CSTNode) -> bool:
    return (isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Expr)
            and isinstance(s.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _always_returns(block: cst.BaseSuite) -> bool:
    body = list(stmts_of(block))
    return bool(body) and _is_return(body[-1])


def _is_return(s: cst.CSTNode) -> bool:
    return isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Return)


def _returns(node: cst.CSTNode) -> bool:
    """Whether ``node`` holds a ``return`` of its function (not of a nested one)."""
    found: list[cst.Return] = []

    class F(cst.CSTVisitor):
        def visit_Return(self, n: cst.Return) -> None:
            found.append(n)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

    node.visit(F())
    return bool(found)


def _calls(node: cst.CSTNode, name: str) -> bool:
    finder = _CallFinder(name)
    node.visit(finder)
    return bool(finder.calls)


class _CallFinder(cst.CSTVisitor):
    """The calls of ``name`` in a node, and whether one is somewhere it may not run
    exactly once (a loop, a lambda, a comprehension, ``and``/``or``, ``a if c else b``)."""

    GUARDS = {cst.For: "a loop", cst.While: "a loop", cst.Lambda: "a lambda", cst.FunctionDef: "a nested function",
              cst.ListComp: "a comprehension", cst.GeneratorExp: "a comprehension", cst.SetComp: "a comprehension",
              cst.DictComp: "a comprehension", cst.BooleanOperation: "`and`/`or`",
              cst.IfExp: "a conditional expression", cst.If: "an `if`"}

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[cst.Call] = []
        self.inside: list[str] = []
        self.guarded: str | None = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == self.name:
            self.calls.append(node)
            if self.inside and self.guarded is None:
                self.guarded = self.inside[-1]
        guard = self.GUARDS.get(type(node))
        if guard:
            self.inside.append(guard)
        return True

    def on_leave(self, node: cst.CSTNode) -> None:
        if type(node) in self.GUARDS:
            self.inside.pop()


def _assigned(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    class F(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            names.update(_names_in(n.target))

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            names.update(_names_in(n.target))

        def visit_For(self, n: cst.For) -> None:
            names.update(_names_in(n.target))

    node.visit(F())
    return names


def _names_in(target: cst.CSTNode) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_names_in(e.value) for e in target.elements)) if target.elements else set()
    return set()


def _read(stmts: list) -> set[str]:
    names: set[str] = set()

    class F(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            names.add(n.value)

    for s in stmts:
        s.visit(F())
    return names


class _ReplaceCall(cst.CSTTransformer):
    def __init__(self, call: cst.Call, result: str) -> None:
        self.call, self.result = call, result

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:
        return cst.Name(self.result) if original is self.call else updated


def _replace_call(stmt: cst.CSTNode, call: cst.Call, result: str) -> cst.BaseStatement:
    return stmt.visit(_ReplaceCall(call, result))  # type: ignore[return-value]


def refusal(e: NotLinear, loc_of: Callable[[cst.CSTNode], Loc], call: RuntimeDepth) -> UnsupportedSyntaxError:
    """Why the recursion ``call`` found cannot be lowered as loops; a mutual one
    is pointed at where it recurses."""
    if e.mutual:
        return UnsupportedSyntaxError(f"{call.message}; {e}: only a function that calls itself directly is lowered "
                                      "as loops", call.loc, HINT)
    return UnsupportedSyntaxError(f"recursion whose depth is known only when running must be linear: {e}",
                                  loc_of(e.node), HINT)
