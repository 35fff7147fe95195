"""Names in generated code: the one authority that makes them.

A generated module holds three kinds of names:

- the program's own: the user's names for the values they name (``h``, a
  second binding ``h_2``), temporaries ``t1, t2, ...``, and what the passes
  add (cotangents ``h_ct``, tapes, accumulators, records);
- the user's module-level constants, read as globals (named by the frontend);
- ``OUTSIDE``: what generated code reads without binding it: ``np``, the
  runtime helpers, the builtins it calls; and what codegen binds itself
  (``residuals``, ``_``).  Python's keywords are never names either.

Every name is made by a :class:`Namer`, which never hands out an outside name
(a user's local ``np`` or ``reversed`` is ``np_2``, ``reversed_2`` in the
generated code) nor a name the program already has (:meth:`Namer.of` collects
them: parameters, bindings in every block, constants).  ``check_generated``
verifies the result before it runs: a generated function reads as globals only
outside names and constants, and binds none of them.
"""

from __future__ import annotations

import ast
import dataclasses
import builtins
import dis
import keyword
import symtable
import sys
import types
import unicodedata
from typing import Any, Iterable

from .errors import InternalError
from .ir import Block, Const, Function, Prim, ReverseProgram, Var
from .rules import RUNTIME

#: the modules generated code reads
MODULES = frozenset({"np", "math"})
#: the builtins generated code calls (``check_generated`` refuses any other); ``type`` and ``tuple``
#: too, which the checked fast calls test their arguments with (astad.guards, astad.scalar_grad), and ``complex``,
#: which a Python power is tested against (astad.rules.python.complex_power)
BUILTINS = frozenset({"float", "len", "range", "reversed", "zip", "int", "bool", "abs", "max", "min", "round", "print", "sum",
                      "type", "tuple", "complex"}) | \
    frozenset(n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException))
#: what generated code reads as globals besides the user's constants
GLOBALS = MODULES | frozenset(RUNTIME) | BUILTINS
#: names codegen binds in the generated functions: the backward pass's
#: parameter, the target of a loop over a tape with nothing saved
CODEGEN = frozenset({"residuals", "_"})
OUTSIDE = GLOBALS | CODEGEN
#: never a name (a lambda is named after its ``__name__``, ``<lambda>``)
KEYWORDS = frozenset(keyword.kwlist)
#: never handed out by a namer, whatever the program (``function_names`` of the program besides)
_NEVER = OUTSIDE | KEYWORDS


def python_name(name: str) -> str:
    """The identifier Python reads for ``name`` (NFKC: ``ﬁ`` is ``fi``)."""
    return name if name.isascii() else unicodedata.normalize("NFKC", name)


def function_names(program: str) -> frozenset[str]:
    """The names of the generated functions of ``program``."""
    return frozenset(python_name(f"{program}_{part}") for part in ("forward", "backward", "jvp"))


class Namer:
    """Deterministic, readable names: the user's own name for its first
    binding, then ``name_2``, ``name_3``; temporaries ``t1, t2, ...``.  Names in
    ``reserved`` (the user's code mentions them) are handed out only as a
    user's own name, outside names never.  Names are compared, and handed
    out, as Python reads them (:func:`python_name`)."""

    def __init__(self, reserved: Iterable[str] = (), program: str | None = None, own: bool = False) -> None:
        self.used = _used(reserved if own else set(reserved), program)  # (own: ``reserved`` is a set the caller
        # gives away)
        self.taken: set[str] = set(_NEVER)
        if program is not None:
            self.taken |= function_names(program)
        self.temps = 0
        self.log: list[tuple[str, str | None, str]] | None = None  # fresh/temp calls, while a call is recorded

    @classmethod
    def adding_to(cls, names: Iterable[str], program: str | None = None) -> "Namer":
        """Names for a pass that adds bindings to a program: every name there is
        taken, so ``fresh`` never hands one out again."""
        namer = cls(names, program)
        namer.taken = namer.used  # (every name used is taken: one set, each name made added once)
        return namer

    @classmethod
    def of(cls, prog: Function | ReverseProgram) -> "Namer":
        """Names for a pass that adds bindings to ``prog``: the program's names are
        collected when the first name is asked for (a pass that adds none walks nothing)."""
        return _NamerOf(prog)

    #: the names added since the first :meth:`mark`, each as (the set, the name), or None before it
    undo: list[tuple[set[str], str]] | None = None

    def mark(self) -> tuple[int, int]:
        """A point :meth:`back_to` goes back to.  From the first one on each name added is noted, so
        a mark copies nothing (a recursion unrolled takes one per level)."""
        if self.undo is None:
            self.undo = []
        return len(self.undo), self.temps

    def back_to(self, mark: tuple[int, int]) -> None:
        """The names there were at ``mark``."""
        n, self.temps = mark
        undo = self.undo
        assert undo is not None
        while len(undo) > n:
            names, name = undo.pop()
            names.discard(name)

    def _note(self, name: str) -> None:
        """Note ``name`` as added to ``used`` and ``taken`` where it is new (a name not used is not taken)."""
        assert self.undo is not None
        if name not in self.used:
            self.undo.append((self.used, name))
        if self.taken is not self.used and name not in self.taken:
            self.undo.append((self.taken, name))

    def mention(self, names: Iterable[str]) -> None:
        """Names more code of the user's mentions (a helper it inlines)."""
        self._unshare()
        new = {python_name(n) for n in names}
        if self.undo is not None:
            self.undo.extend((self.used, n) for n in sorted(new - self.used))
        self.used |= new

    def _unshare(self) -> None:
        """``taken`` a set of its own before a name is added to ``used`` only (:meth:`adding_to`
        and :meth:`of` start with every name used taken, and the two the same set)."""
        if self.taken is self.used:
            self.taken = set(self.used)

    def fresh(self, base: str) -> str:
        if not base.isascii():
            base = python_name(base)
        taken, used = self.taken, self.used  # (the same set, as a pass's namer starts: each name added once)
        if base not in taken:
            if self.undo is not None:
                self._note(base)
            taken.add(base)
            if used is not taken:
                used.add(base)
            if self.log is not None:
                self.log.append(("fresh", base, base))
            return base
        n = 2
        name = f"{base}_2"
        while name in used or name in taken:
            n += 1
            name = f"{base}_{n}"
        if self.undo is not None:
            self._note(name)
        taken.add(name)
        if used is not taken:
            used.add(name)
        if self.log is not None:
            self.log.append(("fresh", base, name))
        return name

    def temp(self) -> str:
        used, n = self.used, self.temps + 1
        try:  # (no test of the length: the list of names is long enough but where an index past it raises)
            name = _TEMPS[n]
            while name in used:  # (a pass's namer starts at t1 and steps over the temporaries the program has)
                n += 1
                name = _TEMPS[n]
        except IndexError:
            _more_temps(n)
            name = _TEMPS[n]
            while name in used:
                n += 1
                if n >= len(_TEMPS):
                    _more_temps(n)
                name = _TEMPS[n]
        self.temps = n
        if self.undo is not None:
            self._note(name)
        used.add(name)
        if self.taken is not used:
            self.taken.add(name)
        if self.log is not None:
            self.log.append(("temp", None, name))
        return name

    def copies(self, base: str, n: int) -> list[str]:
        """``n`` names for the copies of ``base`` that ``dup`` makes: ``base_1``,
        ``base_2``, ... (those not taken)."""
        out: list[str] = []
        if not base.isascii():
            base = python_name(base)
        taken, used = self.taken, self.used
        i = 0
        if taken is used and self.undo is None:  # (the common case: a pass's namer, no marks)
            out = [f"{base}_{i}" for i in range(1, n + 1)]
            if taken.isdisjoint(out):  # (the most common: the first n free)
                taken.update(out)
                return out
            out = []
            while n > 0:
                i += 1
                name = f"{base}_{i}"
                if name not in taken:
                    taken.add(name)
                    out.append(name)
                    n -= 1
            return out
        while n > 0:
            i += 1
            name = f"{base}_{i}"
            if name not in taken and name not in used:
                if self.undo is not None:
                    self._note(name)
                taken.add(name)
                if used is not taken:
                    used.add(name)
                out.append(name)
                n -= 1
        return out

    def hidden(self, base: str) -> str:
        """A name for the frontend's own use (``items``, ``items1``, ...) that no
        code of the user's mentions."""
        name = next(f"{base}{i or ''}" for i in range(len(self.used) + 1) if f"{base}{i or ''}" not in self.used)
        self._unshare()
        if self.undo is not None:
            self.undo.append((self.used, name))
        self.used.add(name)
        return name

    @staticmethod
    def is_temp(name: str) -> bool:
        return name[:1] == "t" and name[1:].isdigit()


def _used(names: set[str], program: str | None) -> set[str]:
    """``names`` (changed), as Python reads them, with every name a namer never hands out."""
    if not "".join(names).isascii():  # (rare: only a name that is not ASCII can read as another)
        names = {python_name(n) for n in names}
    names |= _NEVER
    if program is not None:
        names |= function_names(program)
    return names


#: the names of temporaries by number, made once (their hashes too: a pass's namer steps over thousands)
_TEMPS: list[str] = [f"t{n}" for n in range(1024)]


def _more_temps(n: int) -> None:
    """``_TEMPS`` long enough to hold ``t{n}``."""
    _TEMPS.extend(f"t{k}" for k in range(len(_TEMPS), max(2 * len(_TEMPS), n + 1)))


class _NamerOf(Namer):
    """:meth:`Namer.of`: ``used`` and ``taken`` made from the program's names when first read."""

    def __init__(self, prog: Function | ReverseProgram) -> None:  # (Namer's own __init__ runs when they are read)
        self._prog = prog
        self.temps = 0
        self.log = None

    def __getattr__(self, attr: str) -> Any:  # (only for attributes not set yet)
        if attr not in ("used", "taken") or "_prog" not in self.__dict__:
            raise AttributeError(attr)
        prog, temps = self.__dict__.pop("_prog"), self.temps
        # (Namer's __init__ with every name used taken, as adding_to: no set of the names never handed out made)
        self.used = self.taken = _used(program_names(prog), prog.name)  # (a new set: no copy of it made)
        self.temps = temps
        # a Namer from now on: a class with __getattr__ has every attribute read by the slow path (the
        # interpreter specialises no read of one), and a pass reads a namer's for each name it draws
        self.__class__ = Namer  # type: ignore[assignment]
        return getattr(self, attr)


# --------------------------------------------------------------------------- the names of a program


#: per IR node class, the fields that may hold atoms or blocks (not types,
#: locations or a primitive's static parameters); () for anything else
_FIELDS: dict[type, tuple[str, ...]] = {Prim: ("args",)}


def _fields(cls: type) -> tuple[str, ...]:
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = tuple(f.name for f in dataclasses.fields(cls) if f.name not in ("type", "loc")) \
            if dataclasses.is_dataclass(cls) else ()
        _FIELDS[cls] = fields
    return fields


def program_names(prog: Function | ReverseProgram | Block) -> set[str]:
    """Every name ``prog`` has: its parameters, every variable bound or read in
    any block (branches, loop bodies, functions and their backward maps) and
    the names of the constants it reads."""
    cls = type(prog)
    if cls is Block:
        return set(_block_names(prog))
    known = prog.__dict__.get("_program_names") if cls is Function else None
    if known is not None:
        return set(known)
    names: set[str] = set()
    stack: list[Any] = [prog]
    while stack:
        node = stack.pop()
        cls = type(node)
        if cls is Block:
            names |= _block_names(node)
        else:
            _add_names(node, cls, names, stack)
    return names


#: whether :func:`remember_names` checks what it is told against a walk of the function (tests turn it on)
CHECK_REMEMBERED = False


def remember_names(fn: Function, names: Iterable[str]) -> None:
    """Remember ``names`` as ``program_names(fn)`` (a pass that knows the names of the function it
    made: those of its input and those it added), so the next pass's namer does not walk ``fn``."""
    names = frozenset(names)
    if CHECK_REMEMBERED:
        walked = program_names(Function(fn.name, fn.params, fn.body))  # (a new Function: nothing remembered)
        if walked != names:
            raise InternalError(f"names remembered for {fn.name} are not its own: missing {sorted(walked - names)}, "
                                f"extra {sorted(names - walked)}")
    fn.__dict__["_program_names"] = names


def _block_names(block: Block) -> frozenset[str]:
    """``program_names`` of one block, computed once (blocks are immutable: a
    pass that leaves a block as it is leaves its names known).  Bindings of a
    primitive, the most common, are read directly; anything else field by field."""
    found = block.__dict__.get("_program_names")
    if found is not None:
        return found
    names: set[str] = set()
    add = names.add
    blocks, stack = [block], []
    while blocks:
        blk = blocks.pop()
        known = blk.__dict__.get("_program_names")
        if known is not None:
            names |= known
            continue
        stack.append(blk.result)
        for b in blk.binds:
            for t in b.targets:
                if type(t) is Var:
                    add(t.name)
                else:
                    stack.append(t)
            rhs = b.rhs
            if type(rhs) is Prim:
                for a in rhs.args:  # (mostly variables and constants: named here, not stacked)
                    cls = type(a)
                    if cls is Var:
                        add(a.name)
                    elif cls is Const:
                        if a.name is not None:
                            add(a.name)
                    else:
                        stack.append(a)
            else:
                stack.append(rhs)
        while stack:  # (what was stacked: the result, the bindings' other parts; a block inside, for later)
            node = stack.pop()
            cls = type(node)
            if cls is Block:
                blocks.append(node)
            else:
                _add_names(node, cls, names, stack)
    found = block.__dict__["_program_names"] = frozenset(names)
    return found


def _add_names(node: Any, cls: type, names: set[str], stack: list[Any]) -> None:
    """The name of a variable or named constant ``node`` into ``names``; anything
    else's fields onto ``stack``."""
    if cls is Var:
        names.add(node.name)
    elif cls is Const:
        if node.name is not None:
            names.add(node.name)
    elif cls is tuple or cls is list:
        for item in node:  # mostly variables (a primitive's arguments, a binding's targets): not stacked
            if type(item) is Var:
                names.add(item.name)
            else:
                stack.append(item)
    else:
        stack.extend(getattr(node, f) for f in _fields(cls))


# --------------------------------------------------------------------------- the generated module


def function_scopes(module: ast.Module | str | list) -> list[tuple[str, set[str], set[str]]]:
    """``(name, bound, read)`` of each function the generated module defines: the
    names it binds (its parameters, what it assigns, anywhere in its body) and the
    names it reads.  Of source text, from Python's symbol table (no syntax tree is
    built: a third of the time); of a syntax tree, from its ``Name`` nodes; a list
    of scopes is returned as it is.  (:func:`compiled_scopes`: of compiled code.)"""
    if isinstance(module, list):
        return module
    if isinstance(module, str):
        top = symtable.symtable(module, "<astad: generated>", "exec")
        out = []
        for fn in top.get_children():
            if fn.get_type() == "function":
                bound, read = set(fn.get_parameters()), set()
                _table_names(fn, bound, read)
                if "super" in read:  # Python's compiler adds a read of `__class__` for `super()`
                    read.discard("__class__")
                out.append((fn.get_name(), bound, read))
        return out
    scopes = []
    for fn in module.body:
        if isinstance(fn, ast.FunctionDef):
            bound = {a.arg for a in fn.args.args}
            read = set()
            for node in ast.walk(fn):
                if isinstance(node, ast.Name):
                    (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
            scopes.append((fn.name, bound, read))
    return scopes


def compiled_scopes(code: types.CodeType, source: str) -> list[tuple[str, set[str], set[str]]]:
    """:func:`function_scopes` of ``source``, read from ``code`` (``source``
    compiled) where it can be: a generated function of plain statements (no
    nested scope, no import, no ``global``) binds exactly its code's local
    variables and reads as globals exactly the names of its ``LOAD_GLOBAL``
    instructions (Python's compiler decides both from the same symbol table), so
    the symbol table is not built again from the text (a third of compiling it).
    Any other module (or a Python whose bytecode :data:`_BYTECODE` does not read)
    is read from its symbol table."""
    scopes = _code_scopes(code) if _BYTECODE else None
    return function_scopes(source) if scopes is None else scopes


def _code_scopes(code: types.CodeType) -> list[tuple[str, set[str], set[str]]] | None:
    """``(name, bound, read)`` of each function of a compiled module (``read``: the
    globals it reads, which is what :func:`function_scopes`' ``read - bound`` is);
    None where a function is not plain (see :func:`compiled_scopes`)."""
    out = []
    for fn in code.co_consts:
        if not isinstance(fn, types.CodeType):
            continue
        if fn.co_cellvars or fn.co_freevars or any(isinstance(c, types.CodeType) for c in fn.co_consts):
            return None
        ops, args = fn.co_code[::2], fn.co_code[1::2]
        if any(op in ops for op in _NOT_PLAIN):
            return None
        read = set()
        names = fn.co_names
        for op in _GLOBAL_LOADS:
            at = ops.find(op)
            while at >= 0:
                arg, back, shift = args[at], at - 1, 8
                while back >= 0 and ops[back] == _EXTENDED_ARG:
                    arg |= args[back] << shift
                    back, shift = back - 1, shift + 8
                read.add(names[arg >> _GLOBAL_SHIFT])
                at = ops.find(op, at + 1)
        out.append((fn.co_name, set(fn.co_varnames), read))
    return out


def _opcodes(*names: str) -> bytes:
    return bytes(dis.opmap[n] for n in names if n in dis.opmap)


#: instructions reading a global (a builtin) by name, and where their argument has the name's index
_GLOBAL_LOADS = _opcodes("LOAD_GLOBAL")
_GLOBAL_SHIFT = 1 if sys.version_info >= (3, 11) else 0  # (3.11: the low bit says "push NULL too")
_EXTENDED_ARG = dis.EXTENDED_ARG
#: instructions a plain function has none of: names read or bound other than as globals and locals
_NOT_PLAIN = _opcodes("IMPORT_NAME", "IMPORT_FROM", "IMPORT_STAR", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME",
                      "STORE_NAME", "DELETE_NAME", "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_CLASSDEREF",
                      "LOAD_FROM_DICT_OR_DEREF", "LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_CLOSURE",
                      "MAKE_CELL", "COPY_FREE_VARS")


def _reads_bytecode() -> bool:
    """Whether :func:`_code_scopes` reads this Python's code as the symbol table does (a module
    of the kinds generated code has: globals read, names bound, deleted, looped over)."""
    probe = ("import numpy as np\n\ndef f_forward(x, n):\n    t = np.tanh(x) + zz\n    del x\n"
             "    for i in range(n):\n        t = t * W\n    return t, abs(t)\n")
    scopes = _code_scopes(compile(probe, "<probe>", "exec", dont_inherit=True))
    want = [("f_forward", {"x", "n", "t", "i"}, {"np", "zz", "range", "W", "abs"})]
    return scopes is not None and [(n, b, r - b) for n, b, r in scopes] == \
        [(n, b, r - b) for n, b, r in function_scopes(probe)] == want


def _table_names(table: symtable.SymbolTable, bound: set[str], read: set[str]) -> None:
    """The names ``table`` and the scopes inside it (comprehensions) assign and read."""
    for sym in table.get_symbols():
        if sym.is_assigned():
            bound.add(sym.get_name())
        if sym.is_referenced():
            read.add(sym.get_name())
    for inner in table.get_children():
        _table_names(inner, bound, read)


_BYTECODE = _reads_bytecode()


def global_reads(module: ast.Module | str | list) -> set[str]:
    """The names the generated module's functions read and do not bind: the
    globals they read (a constant none reads may share a name with a local)."""
    out: set[str] = set()
    for _, bound, read in function_scopes(module):
        out |= read - bound
    return out


def check_generated(module: ast.Module | str | list, constants: Iterable[str], held: Iterable[str] = ()) -> None:
    """Each generated function reads as globals only outside names and the
    constants, and binds none of them (a binding would make Python read the
    function's own variable instead); a function may call the module's others
    (those of a recursion's calls: :mod:`astad.ad.calls`).  A backward function
    may bind the constants of ``held``: it unpacks them from its residuals (the
    arrays the forward read, see ``optimise.residuals``)."""
    outside = GLOBALS | set(constants)
    held = set(held)
    wrong = sorted(held - set(constants) | held & OUTSIDE)
    if wrong:  # (a constant the forward reads, never an outside name: a disk entry's list is checked too)
        raise InternalError(f"generated code would unpack {', '.join(wrong)}: not a constant it reads")
    scopes = list(function_scopes(module))
    own = {name for name, _, _ in scopes}
    unpacked = outside - held
    for name, bound, read in scopes:
        if name in outside:  # the module's own function would replace a constant it reads
            raise InternalError(f"generated function {name} has the name of a global it reads")
        bad = sorted((bound & ((unpacked if name.endswith("_backward") else outside) | own))
                     | (read - bound - outside - own))
        if bad:
            raise InternalError(f"generated function {name} binds or reads {', '.join(bad)} wrongly")
