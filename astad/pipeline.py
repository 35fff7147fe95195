"""The pipeline: runs the stages in order and keeps each stage's output.

    frontend.lower -> structural.make_explicit -> activity.analyse -> reverse.reverse
        -> optimise.optimise -> codegen.generate -> compile/exec

:class:`Derivative` is the result for one function at one abstract signature:
the generated functions, their source, and (on demand) every stage's IR.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from . import codegen, deep, fresh, frontend, imported, key_functions, names, optimise, outputs, rules, structural
from .ad import activity, forward as forward_macro, reverse
from .optimise import copowers
from .optimise.factor import factor_tangents
from .optimise.dots import dot_sums
from .optimise.shifts import cancel_shifts
from .errors import AstadError, InternalError, generated_too_nested
from .ad.vjp_function import SplitFunction
from .ir import (Bind, Block, Const, Function, KeyFunction, MakeTuple, NoneT, Num, Prim, ReverseProgram, StructT, TupleT,
                 Type, Var, all_binds, kinds, leaf_counts)
from .ir.types import _flattener, builder, unpacker  # the flattener of a structure, looked up once per derivative

STAGES = ("core", "structural", "activity", "ad", "optimised")


class _StageText:
    """Each stage's IR, for the stages named in ``NAMES`` (as attributes of
    those names), and ``text(stage)``, one printed.

    Made either with every stage (in order), or with ``later``, which computes
    them all again, and the stages to keep (``kept``): a stage not kept is
    computed (with the others) when first read.  The IR of every stage,
    kept for each derivative made, was most of the objects a transformation
    leaves alive, which the garbage collector then walks; the stages are
    deterministic, so a stage computed later is the one the code was made from."""

    NAMES: tuple[str, ...] = ()

    def __init__(self, *stages: Any, later: Callable[[], "_StageText"] | None = None, **kept: Any) -> None:
        if stages:
            if len(stages) != len(self.NAMES) or later is not None or kept:
                raise TypeError(f"{type(self).__name__} takes every stage, or later= and the stages kept")
            kept = dict(zip(self.NAMES, stages))
        elif later is None:
            raise TypeError(f"{type(self).__name__} takes every stage, or later= and the stages kept")
        self.__dict__.update(kept)
        self._later = later

    def __getattr__(self, name: str) -> Any:  # (only for an attribute not set: a stage not computed yet)
        later = self.__dict__.get("_later")
        if later is None or name not in self.NAMES:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        computed = later()
        for stage in self.NAMES:
            self.__dict__.setdefault(stage, computed.__dict__[stage])
        self._later = None
        return self.__dict__[name]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(self.NAMES)})"

    def text(self, stage: str) -> str:
        if stage not in self.NAMES:
            raise AstadError(f"unknown stage {stage!r}; stages are {', '.join(self.NAMES)}")
        return getattr(self, stage).pretty()


class Stages(_StageText):
    """Each stage of reverse mode (see :class:`_StageText`)."""

    NAMES = STAGES

    core: Function
    structural: Function
    activity: activity.Activity  # the structural IR, its inactive bindings marked
    ad: ReverseProgram
    optimised: ReverseProgram

    def text(self, stage: str) -> str:
        """The stage's IR, and after it the functions of their own it calls (:mod:`astad.key_functions`):
        their bodies up to ``activity``, their reverse programs (those generated) after."""
        main = super().text(stage)
        if stage in ("ad", "optimised"):
            parts = [key_functions.reverse_of_key(f, m).pretty() for f, m in key_functions.called(getattr(self, stage))]
        else:
            parts = [f.fn.pretty() for f in _key_functions_in(self.core.body)]
        return "\n\n".join([main, *parts])


def _key_functions_in(block: Block) -> list[KeyFunction]:
    """The functions of their own the calls in ``block`` call, and those they call, each once, a callee first."""
    order: list[KeyFunction] = []

    def visit(b: Block) -> None:
        for bind in all_binds(b):
            rhs = bind.rhs
            if type(rhs) is Prim and rhs.op == "call" and all(rhs.param("fn") is not f for f in order):
                visit(rhs.param("fn").fn.body)
                order.append(rhs.param("fn"))

    visit(block)
    return order


@dataclass(eq=False)
class Derivative:
    """The generated code for one function at one signature."""

    name: str
    source: str
    forward: Callable[..., Any]
    backward: Callable[..., Any]
    out_type: Type
    arg_types: tuple[Type, ...]
    wrt: frozenset[int] | None = None  # the parameters whose cotangents are computed (None: all)
    deps: list[tuple[tuple[str, ...], Any]] = field(default_factory=list)
    constants: dict[str, tuple[str, ...]] = field(default_factory=dict)
    stages: Stages | None = None
    out_lists: Any = None  # which of the output's tuples are lists (astad.outputs; None: none)
    #: the constants its backward functions take from their residuals (``optimise.residuals``), by name
    held: tuple[str, ...] = ()
    #: the constant arrays the code reads: a pullback copies the residuals that share memory with one that
    #: could change (fresh.changeable_owners), as it copies those that share an argument's
    constant_arrays: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        #: the owners of the memory of the constant arrays that could change (fixed: an array's base is)
        self.changing: frozenset[int] = frozenset(fresh.changeable_owners(self.constant_arrays))
        if self.out_lists is not None:
            self.forward = outputs.reverse_forward(self.forward, self.out_lists)
        self.arg_owners: Callable[[Sequence[Any]], set[int]] = _owners_of_args  # see astad.fresh
        if any(isinstance(t, StructT) for t in self.arg_types):  # the generated code takes and gives leaves
            unpackers = [unpacker(t) if isinstance(t, StructT) else None for t in self.arg_types]  # (each compiled once)
            self.forward, self.backward = _structured(self.forward, self.backward, self.arg_types, unpackers)
            flat = [_single if f is None else f for f in unpackers]
            self.arg_owners = lambda args: fresh.owners(*[leaf for f, a in zip(flat, args) for leaf in f(a)])


def _owners_of_args(args: Sequence[Any]) -> set[int]:
    return fresh.owners(*args)


def _structured(forward: Callable, backward: Callable, types: Sequence[Type],
                flatteners: Sequence[Callable | None]) -> tuple[Callable, Callable]:
    """Forward and backward functions of structured arguments (tuples, lists,
    dicts, NamedTuples) around generated code that takes their leaves;
    ``flatteners``: each structure's :func:`unpacker` (None for another argument)."""

    build = builder(types)  # (compiled once: the types of a large structure hash slowly)

    def structured_forward(*args: Any) -> Any:
        leaves: list[Any] = []
        for f, a in zip(flatteners, args):
            if f is None:
                leaves.append(a)
            else:
                leaves += f(a)
        return forward(*leaves)

    def structured_backward(residuals: Any, ct: Any) -> tuple:
        return build(backward(residuals, ct))

    return structured_forward, structured_backward


def leaf_wrt(arg_types: Sequence[Type], wrt: frozenset[int] | None) -> frozenset[int] | None:
    """The parameters (leaves of structured arguments) of the arguments ``wrt``."""
    if wrt is None:
        return None
    counts = leaf_counts(arg_types)
    starts = [sum(counts[:i]) for i in range(len(counts))]
    return frozenset(j for i in wrt for j in range(starts[i], starts[i] + counts[i]))


def run_stages(parsed: frontend.Parsed, arg_types: Sequence[Type],
               wrt: frozenset[int] | None = None, functions: bool = False) -> tuple[Stages, frontend.Lowerer]:
    """Every stage of reverse mode, and the lowerer (which knows the names the code
    reads); the garbage collector waits meanwhile (:func:`astad.deep.gc_paused`).
    ``functions``: a recursion's calls made functions of their own (:mod:`astad.ad.calls`),
    which only the generated code of :func:`transform` calls (a derivative of a derivative,
    forward mode and the IR given to other programs have every call inlined)."""
    with deep.gc_paused():
        lowerer = frontend.Lowerer(parsed)
        lowerer.functions = functions
        return Stages(*each_stage(_lowered(lowerer, arg_types), arg_types, wrt)), lowerer


def each_stage(core: Function, arg_types: Sequence[Type], wrt: frozenset[int] | None) -> Iterator[Any]:
    """Reverse mode's stages of ``core``, in order, each as it is made, holding none the next stage does
    not read: :func:`last_stage` lets each go as soon as the next is made, so later stages reuse its memory
    (peak 16.2 -> 13.6 MB for straight_line_500; ~370 -> ~50 page faults a transformation, repeated)."""
    yield core
    leaves, linear = leaf_wrt(arg_types, wrt), structural.make_explicit(core)
    del core
    yield linear
    active = activity.analyse(linear, leaves)
    yield active
    ad = reverse.reverse(linear, active)
    del linear, active  # (``active`` holds ``linear``)
    yield ad
    yield optimise.optimise(copowers.remove_functions(ad), leaves)


def last_stage(stages: Iterator[Any]) -> Any:
    """The last of ``stages``, none of the others kept (see :func:`each_stage`)."""
    stage = None
    for stage in stages:
        pass
    return stage


def stages_of(parsed: frontend.Parsed, arg_types: Sequence[Type], wrt: frozenset[int] | None,
              deps: list | None = None, functions: bool = False) -> Stages:
    """The stages of :func:`transform` (computed again for a stage read later), the
    transformation's errors as its; ``deps``: the names its derivative read
    (:class:`Derivative`), which must mean the same objects still."""
    with _ours(parsed.name):
        stages, lowerer = run_stages(parsed, arg_types, wrt, functions)
    if deps is not None:
        _same_reads(parsed.name, lowerer.deps, deps)
    return stages


def _same_reads(name: str, now: list, then: list) -> None:
    """Refuse stages computed again when a name the function reads means another object now."""
    if [(path, id(obj)) for path, obj in now] != [(path, id(obj)) for path, obj in then]:
        raise AstadError(f"a name {name} reads means another object than when its derivative was made, so its "
                         f"stages computed again would not be the derivative's: call {name} again (or pass "
                         "example arguments to .ir) to transform it again")


def header(parsed: frontend.Parsed, arg_types: Sequence[Type], constants: Sequence[str]) -> str:
    from .version import __version__

    sig = ", ".join(f"{p.name.value}: {_short(t)}" for p, t in zip(parsed.params, arg_types))
    lines = [f"Generated by astad {__version__} from {parsed.name}({sig})",
             f"defined at {parsed.file}:{parsed.funcdef_line}."]
    if constants:
        lines.append("Module-level constants read: " + ", ".join(constants) + ".")
    return "\n".join(lines)


def _short(t: Type) -> str:
    """A type for the header: a large structure by its kind and number of leaves."""
    text = str(t)
    if len(text) <= 80 or not isinstance(t, StructT):
        return text
    return f"{t.kind} of {sum(leaf_counts([t]))} leaves"


def compile_source(name: str, source: str, constants: dict[str, Any],
                   held: Sequence[str] = ()) -> tuple[Callable, Callable]:
    """The forward and backward functions of the generated ``source``; ``held``: the constants
    its residuals hold (:func:`astad.optimise.held_constants`)."""
    namespace = _exec_source(name, source, constants, held)
    return namespace[names.python_name(f"{name}_forward")], namespace[names.python_name(f"{name}_backward")]


def _exec_source(name: str, source: str, constants: dict[str, Any], held: Sequence[str] = ()) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": f"astad.generated.{name}"}
    namespace.update(rules.RUNTIME)
    try:
        code = deep.compile_ast(source, f"<astad: {name}>")
    except SyntaxError as e:  # (a block nested past Python's limits: the user's error, see there)
        refused = generated_too_nested(source, e)
        if refused is None:
            raise
        raise refused from None
    scopes = names.compiled_scopes(code, source)  # read from the code: the text is parsed once
    read = names.global_reads(scopes)
    constants = {k: v for k, v in constants.items() if k in read}  # what the code reads of them
    namespace.update(constants)
    names.check_generated(scopes, constants, held)  # before anything of it runs
    exec(code, namespace)  # noqa: S102 - our own generated code
    for module in ("np", "math"):  # numpy and math as astad imported them (see astad.imported)
        if id(namespace.get(module)) in imported.MODULES:
            namespace[module] = imported.MODULES[id(namespace[module])]
    return namespace


@contextlib.contextmanager
def _ours(name: str, what: str = "while transforming") -> Iterator[None]:
    """astad's own errors pass; a too-deep program or a bug of ours becomes an
    InternalError (never a bare traceback).  The garbage collector waits
    meanwhile (:func:`astad.deep.gc_paused`)."""
    try:
        with deep.gc_paused():
            yield
    except AstadError:
        raise
    except RecursionError:
        raise InternalError(f"{name} is too deeply nested for astad to transform") from None
    except Exception as e:
        raise InternalError(f"internal error {what} {name}: {type(e).__name__}: {e}. "
                            "This is a bug in astad; please report it with the function.") from e


def transform(parsed: frontend.Parsed, arg_types: Sequence[Type], wrt: frozenset[int] | None = None) -> Derivative:
    """Run every stage on ``parsed`` at ``arg_types`` and compile the result.  The stages
    are not kept: each is computed again when first read (see :class:`_StageText`)."""
    arg_types = tuple(arg_types)
    with _ours(parsed.name):
        # (a function of its own: the IR is gone before the garbage collector is on again)
        source, forward, backward, out_type, deps, paths, lists, held, arrays = _generate(parsed, arg_types, wrt)
    return Derivative(parsed.name, source, forward, backward, out_type, arg_types, wrt, deps, paths,
                      Stages(later=functools.partial(stages_of, parsed, arg_types, wrt, deps, True)), lists, held,
                      arrays)


def _generate(parsed: frontend.Parsed, arg_types: tuple[Type, ...], wrt: frozenset[int] | None
              ) -> tuple[str, Callable, Callable, Type, list, dict[str, tuple[str, ...]], Any, tuple, tuple]:
    """The generated source, its forward and backward functions, the output's type, the names
    the code reads (:class:`Derivative`'s deps and constants), the output's lists, the constants
    its residuals hold (:func:`astad.optimise.held_constants`) and the constant arrays it reads."""
    prog, constants, deps, out_template = _optimised(parsed, arg_types, wrt)
    with deep.gc_paused():
        # (the functions it calls looked for only where it calls one: the blocks' kinds are known by now, mostly)
        calls = "call_forward" in kinds(prog.forward) or "call_forward" in kinds(prog.backward)
        programs = [key_functions.reverse_of_key(f, m) for f, m in key_functions.called(prog)] if calls else []
        called = [(p, optimise.residuals(p, constants)) for p in programs]
    residuals = optimise.residuals(prog, constants)
    source = codegen.generate(prog, residuals, header(parsed, arg_types, list(constants)), called)
    values = {name: obj for name, (path, obj) in constants.items()}
    held = optimise.held_constants([residuals] + [r for _, r in called])
    # (``prog`` let go after compiling: freed before, the code compiled in its gaps was walked slower by the collector)
    forward, backward = compile_source(parsed.name, source, values, held)
    paths = {n: p for n, (p, _) in constants.items()}
    return (source, forward, backward, prog.forward.result.type, deps, paths, out_template, held,
            fresh.arrays_of(values))


def _optimised(parsed: frontend.Parsed, arg_types: tuple[Type, ...], wrt: frozenset[int] | None
               ) -> tuple[ReverseProgram, dict, list, Any]:
    """:func:`run_stages`' optimised stage, and its lowerer's constants, deps and output lists; the lowerer
    (which holds the core IR's bindings) and each stage let go as soon as the next is made (:func:`each_stage`)."""
    with deep.gc_paused():
        lowerer = frontend.Lowerer(parsed)
        lowerer.functions = True
        stages = each_stage(_lowered(lowerer, arg_types), arg_types, wrt)
        constants, deps, out_template = lowerer.constants, lowerer.deps, lowerer.out_template
        del lowerer
        return last_stage(stages), constants, deps, out_template


def is_real_scalar(t: Type) -> bool:
    return isinstance(t, Num) and t.shape == () and t.differentiable


# --------------------------------------------------------------------------- forward mode

FORWARD_STAGES = ("core", "structural", "activity", "forward", "optimised")


class ForwardStages(_StageText):
    """Each stage of forward mode: the core IR, with explicit dup/drop, its
    inactive bindings marked (:mod:`astad.ad.activity`), the forward macro's
    output (params, tangents) -> (value, tangent), optimised (kept: see
    :func:`forward_of_function`; the others computed when read, see :class:`_StageText`)."""

    NAMES = FORWARD_STAGES

    core: Function
    structural: Function
    activity: activity.Activity
    forward: Function
    optimised: Function | ReverseProgram  # forward over reverse: a reverse program again


@dataclass(eq=False)
class ForwardDerivative:
    """The generated forward-mode code for one function at one signature.

    ``jvp(*args, *tangents)``: the value and the output's tangent, given one
    tangent per argument in ``wrt`` (in order; a structured argument's tangent
    has its structure; a discrete argument's tangent is ignored, None say)."""

    name: str
    source: str
    jvp: Callable[..., tuple[Any, Any]]
    out_type: Type
    arg_types: tuple[Type, ...]
    wrt: frozenset[int]
    deps: list[tuple[tuple[str, ...], Any]] = field(default_factory=list)
    constants: dict[str, tuple[str, ...]] = field(default_factory=dict)
    stages: ForwardStages | None = None
    out_lists: Any = None  # which of the output's tuples are lists (astad.outputs; None: none)

    def __post_init__(self) -> None:
        self.leaf_jvp = self.jvp  # the generated function: leaves, then the tangents of the differentiable ones
        self.jvp = self.plain_jvp = outputs.scalar_tangents(_structured_jvp(self.jvp, self.arg_types, self.wrt),
                                                            self.out_type)  # (plain: no lists made)
        if self.out_lists is not None:
            self.jvp = outputs.jvp(self.jvp, self.out_lists)


def _leaf_types(t: Type) -> list[Type]:
    return [leaf for item in t.items for leaf in _leaf_types(item)] if isinstance(t, StructT) else [t]


def _single(v: Any) -> list[Any]:
    return [v]


def _structured_jvp(jvp: Callable, types: Sequence[Type], wrt: frozenset[int]) -> Callable:
    """``jvp(*args, *tangents)`` around generated code that takes leaves: each
    argument in ``wrt`` gives the tangents of its differentiable leaves."""
    order = sorted(wrt)
    structured = any(isinstance(t, StructT) for t in types)
    keep = {i: [forward_macro.differentiable(leaf) for leaf in _leaf_types(types[i])] for i in order}
    if not structured and all(all(k) for k in keep.values()):
        return jvp

    # each structure's flattener looked up once (a lookup hashes the whole structure)
    flats = [_flattener(t) if isinstance(t, StructT) else _single for t in types]

    def structured_jvp(*values: Any) -> tuple[Any, Any]:
        args, tangents = values[:len(types)], values[len(types):]
        leaves = [leaf for flat, a in zip(flats, args) for leaf in flat(a)]
        for i, tv in zip(order, tangents):
            leaves += [leaf for leaf, k in zip(flats[i](tv) if any(keep[i]) else [], keep[i]) if k]
        return jvp(*leaves)

    return structured_jvp


def optimise_forward(fn: Function, n_primal: int | None = None) -> Function:
    """The forward program through the reverse-mode optimiser (as the forward block
    of a program whose backward block is empty): function values inlined, zeros
    and copies folded, common subexpressions shared, dead code removed."""
    namer = names.Namer.adding_to(names.program_names(fn), fn.name)  # never one of the program's own names
    done = Var(namer.fresh("nothing"), TupleT(()))
    empty = Block((Bind((done,), MakeTuple(())),), done)
    prog = ReverseProgram(fn.name, fn.params, fn.body, Var(namer.fresh("no_ct"), NoneT()), empty)
    prog = optimise.optimise(copowers.remove_functions(prog), None)
    prog = optimise.dce(optimise.sink_forward_broadcasts(prog))
    out = Function(fn.name, fn.params, prog.forward)
    if n_primal is None:
        return out
    # ``n_primal``: the parameters after these are tangents
    factored = dot_sums(cancel_shifts(factor_tangents(out, n_primal), n_primal), n_primal)
    prog = ReverseProgram(fn.name, fn.params, factored.body, prog.ct_in, prog.backward)
    return Function(fn.name, fn.params, optimise.dce(optimise.cse(prog)).forward)  # 0.5 * x in both: once


def optimise_split(fn: SplitFunction) -> ReverseProgram:
    """Forward mode of a reverse program (:mod:`astad.ad.vjp_function`), optimised as
    a reverse program again: its forward part (the primal and its tangents, tapes
    recording both), then its backward part (cotangents and their tangents),
    which reads the forward part's values as residuals."""
    binds = fn.body.binds
    forward = Block(binds[:fn.split], Const.literal(None, NoneT()))
    no_ct = names.Namer.adding_to(names.program_names(fn), fn.name).fresh("no_ct")  # not a name of the program's
    prog = ReverseProgram(fn.name, fn.params, forward, Var(no_ct, NoneT()), Block(binds[fn.split:], fn.body.result))
    return optimise.optimise_passes(prog)


def _compile_forward(fn: Function, optimised: Function | ReverseProgram, header_text: str, name: str,
                     constants: dict[str, Any]) -> tuple[str, Callable]:
    from .codegen import generate_forward
    if isinstance(optimised, Function):
        source = generate_forward(optimised, header_text, len(fn.params))
        return source, _exec_source(name, source, constants)[names.python_name(f"{fn.name}_jvp")]
    n = optimised.name
    residuals = optimise.residuals(optimised, constants)
    source = codegen.generate(optimised, residuals, header_text).replace(
        f"Primal of {n}: returns (value, residuals for {n}_backward).",
        f"Forward mode of {n}, first part: the primal and its tangents (tapes record both) -> (None, residuals).").replace(
        f"Reverse pass of {n}: cotangent of the value -> one cotangent per parameter.",
        f"Forward mode of {n}, second part: residuals -> (cotangents, their tangents).")
    namespace = _exec_source(name, source, constants, optimise.held_constants([residuals]))
    first = namespace[names.python_name(f"{fn.name}_forward")]
    second = namespace[names.python_name(f"{fn.name}_backward")]

    def jvp(*args: Any) -> tuple[Any, Any]:
        return second(first(*args)[1], None)

    return source, jvp


def forward_of_function(fn: Function, arg_types: Sequence[Type], wrt: frozenset[int] | None, name: str,
                        constants: dict[str, Any], header_text: str = "", core: Function | None = None,
                        deps: list | None = None, constant_paths: dict | None = None,
                        again: Callable[[], Function] | None = None, out_lists: Any = None) -> ForwardDerivative:
    """Forward mode of an IR function: core IR, or a reverse program made one
    function by :func:`astad.ad.vjp_function.vjp_function` (forward over reverse).
    ``wrt`` are argument indices (None: all); a structured argument's leaves are
    parameters of ``fn``.  ``constants``: the module-level values the code reads.
    ``again``: makes ``fn`` again, for the stages read later (by default ``fn`` is kept)."""
    wrt = frozenset(range(len(arg_types))) if wrt is None else frozenset(wrt)
    arg_types = tuple(arg_types)
    with _ours(name, "in forward mode of"):
        # (a function of its own: the IR is gone before the garbage collector is on again)
        source, jvp, optimised = _generate_forward(fn, arg_types, wrt, name, constants, header_text)
    if again is None:
        again = functools.partial(_same, fn)
    later = functools.partial(_forward_stages_again, again, arg_types, wrt, name, None if core is fn else core)
    return ForwardDerivative(name, source, jvp, fn.body.result.type, arg_types, wrt, deps or [],
                             constant_paths or {}, ForwardStages(later=later, optimised=optimised), out_lists)


def forward_stages(fn: Function, arg_types: Sequence[Type], wrt: frozenset[int], core: Function | None = None
                   ) -> ForwardStages:
    """Forward mode's stages of ``fn`` (whose core IR, where it is a lowered function, is ``core``)."""
    linear = fn if isinstance(fn, SplitFunction) else structural.make_explicit(fn)
    active = activity.analyse(linear, leaf_wrt(arg_types, wrt))
    fwd = forward_macro.forward(linear, active.wrt, active)
    optimised: Function | ReverseProgram = optimise_split(fwd) if isinstance(fwd, SplitFunction) \
        else optimise_forward(fwd, len(fn.params))
    return ForwardStages(core or fn, linear, active, fwd, optimised)


def _generate_forward(fn: Function, arg_types: tuple[Type, ...], wrt: frozenset[int], name: str,
                      constants: dict[str, Any], header_text: str) -> tuple[str, Callable, Function | ReverseProgram]:
    """The generated source, its JVP function, and the optimised stage (which higher
    derivatives differentiate again: see :mod:`astad.programs`)."""
    optimised = forward_stages(fn, arg_types, wrt).optimised
    source, jvp = _compile_forward(fn, optimised, header_text or f"Forward mode of {name}, generated by astad.",
                                   name, constants)
    return source, jvp, optimised


def _same(fn: Function) -> Function:
    return fn


def _forward_stages_again(again: Callable[[], Function], arg_types: tuple[Type, ...], wrt: frozenset[int],
                          name: str, core: Function | None) -> ForwardStages:
    """The stages of :func:`forward_of_function`, computed again (for a stage read later)."""
    with _ours(name, "in forward mode of"):
        return forward_stages(again(), arg_types, wrt, core)


def reverse_of_function(fn: Function, arg_types: Sequence[Type], wrt: frozenset[int] | None, name: str,
                        constants: dict[str, Any], deps: list | None = None) -> Derivative:
    """Reverse mode of an IR function: core IR, or the output of either macro (a
    reverse program made one function by :func:`astad.ad.vjp_function.vjp_function`:
    reverse over reverse), lowered to core IR first by :mod:`astad.ad.lower_target`.
    ``wrt`` are argument indices; a structured argument's leaves are parameters of ``fn``."""
    arg_types = tuple(arg_types)
    with _ours(name, "in reverse mode of"):
        # (a function of its own: the IR is gone before the garbage collector is on again)
        source, forward, backward, out_type, held = _generate_reverse(fn, arg_types, wrt, name, constants)
    return Derivative(name, source, forward, backward, out_type, arg_types, wrt, deps or [], {},
                      Stages(later=functools.partial(_reverse_stages_again, fn, arg_types, wrt, name)), held=held,
                      constant_arrays=fresh.arrays_of(constants))


def _generate_reverse(fn: Function, arg_types: tuple[Type, ...], wrt: frozenset[int] | None, name: str,
                      constants: dict[str, Any]) -> tuple[str, Callable, Callable, Type, tuple[str, ...]]:
    from .ad.lower_target import lower
    prog = last_stage(each_stage(lower(fn), arg_types, wrt))  # (no stage kept; lower: the identity on core IR)
    residuals = optimise.residuals(prog, constants)
    source = codegen.generate(prog, residuals, f"Reverse mode of {name}, generated by astad.")
    held = optimise.held_constants([residuals])
    forward, backward = compile_source(fn.name, source, constants, held)
    return source, forward, backward, prog.forward.result.type, held


def _reverse_stages_again(fn: Function, arg_types: tuple[Type, ...], wrt: frozenset[int] | None,
                          name: str) -> Stages:
    from .ad.lower_target import lower
    with _ours(name, "in reverse mode of"):
        return Stages(*each_stage(lower(fn), arg_types, wrt))


def transform_forward(parsed: frontend.Parsed, arg_types: Sequence[Type],
                      wrt: frozenset[int] | None = None) -> ForwardDerivative:
    """Forward mode of ``parsed`` at ``arg_types``: tangents for the arguments in ``wrt`` (None: all)."""
    with _ours(parsed.name):  # (one pause: the core IR is gone before the garbage collector is on again)
        return _transform_forward(parsed, arg_types, wrt)


def _transform_forward(parsed: frontend.Parsed, arg_types: Sequence[Type],
                       wrt: frozenset[int] | None) -> ForwardDerivative:
    lowerer = frontend.Lowerer(parsed)
    core = _lowered(lowerer, arg_types)
    values = {n: obj for n, (path, obj) in lowerer.constants.items()}
    text = header(parsed, arg_types, list(lowerer.constants)).replace("Generated by astad", "Forward mode (JVP), generated by astad", 1)
    return forward_of_function(core, arg_types, wrt, parsed.name, values, text, core, lowerer.deps,
                               {n: p for n, (p, _) in lowerer.constants.items()},
                               functools.partial(_lowered_again, parsed, tuple(arg_types), lowerer.deps),
                               lowerer.out_template)


def _lowered(lowerer: frontend.Lowerer, arg_types: Sequence[Type]) -> Function:
    return frontend.drop_dead_temporaries(lowerer.lower_function(list(arg_types)))


def _lowered_again(parsed: frontend.Parsed, arg_types: tuple[Type, ...], deps: list) -> Function:
    lowerer = frontend.Lowerer(parsed)
    fn = _lowered(lowerer, arg_types)
    _same_reads(parsed.name, lowerer.deps, deps)
    return fn
