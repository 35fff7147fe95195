"""The forward-mode and second-order benchmarks of bench/run.py (see bench/README.md).

- JVP cells of every program row: ``astad.jvp`` next to autograd's forward mode
  (``make_jvp``) and ``jax.jvp`` (eager and jit), printed as a second table;
- memory: peak extra memory (tracemalloc) of one call on the scalar loop at two
  lengths, forward mode next to the primal and reverse mode;
- Hessian-vector product, Hessian and Jacobians: ``astad.hvp``, ``astad.hessian``,
  ``astad.jacfwd`` / ``jacrev`` / ``jacobian`` next to autograd's and JAX's.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hand_jvp import HAND
from harness import (AUTOGRAD_NS, JAX_NS, Args, Argnums, Limits, Row, Target, Timer, Tool, astad, autograd_np,
                     describe, fmt_ratio, jax, print_table, programs, ratio, speedup, time_of, time_tools, timed_once,
                     wanted, with_target)

if autograd_np is not None:
    from autograd import differential_operators as autograd_ops
    from autograd import hessian as autograd_hessian
    from autograd import jacobian as autograd_jacobian


def nums(argnums: Argnums) -> tuple[int, ...]:
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def tangents_for(args: Args, argnums: Argnums, seed: int = 1) -> tuple[Any, ...]:
    """Random tangents (float64, the argument's shape) for the arguments in argnums; None elsewhere."""
    rng = np.random.default_rng(seed)
    return tuple((rng.standard_normal(np.shape(a)) if np.ndim(a) else float(rng.standard_normal()))
                 if i in nums(argnums) else None for i, a in enumerate(args))


def chosen(values: Sequence[Any], argnums: Argnums) -> tuple[Any, ...]:
    return tuple(values[i] for i in nums(argnums))


def with_chosen(args: Args, argnums: Argnums, new: Sequence[Any]) -> tuple[Any, ...]:
    """args with the ones in argnums replaced by `new`, in order."""
    by_index = dict(zip(nums(argnums), new, strict=True))
    return tuple(by_index.get(i, a) for i, a in enumerate(args))


def as_jax(value: Any) -> Any:
    return jax.tree_util.tree_map(jax.numpy.asarray, value)


def jax_of(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The same function re-executed with np = jax.numpy (see harness.programs_with)."""
    return JAX_NS[fn.__name__]


def autograd_of(fn: Callable[..., Any]) -> Callable[..., Any]:
    return AUTOGRAD_NS[fn.__name__]


def blocked(call: Callable[[], Any]) -> Callable[[], Any]:
    return lambda: jax.block_until_ready(call())


def leaves(value: Any) -> list[np.ndarray]:
    """The arrays of a (nested) result, None dropped: what the checks compare."""
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in leaves(item)]
    return [np.asarray(value, dtype=float)]


def disagreement(got: Any, want: Any, rtol: float = 1e-6) -> str | None:
    g, w = leaves(got), leaves(want)
    if len(g) != len(w) or any(a.shape != b.shape for a, b in zip(g, w)):
        return f"structure {[a.shape for a in g]} vs {[b.shape for b in w]}"
    bad = [i for i, (a, b) in enumerate(zip(g, w)) if not np.allclose(a, b, rtol=rtol, atol=1e-9)]
    return f"leaves {bad}" if bad else None


def check(name: str, what: str, got: Callable[[], Any], references: list[tuple[str, Callable[[], Any]]]) -> str | None:
    """A warning if astad's result differs from the first reference tool that runs."""
    try:
        mine = got()
    except Exception:
        return None  # reported when timing
    for label, reference in references:
        try:
            want = reference()
        except Exception:
            continue
        problem = disagreement(mine, want)
        return f"WARNING {name}: astad's {what} disagrees with {label} ({problem})" if problem else None
    return None


# ------------------------------------------------------------ JVP per program


def program(name: str) -> Callable[..., Any]:
    return programs.PROGRAMS[name][0]


def prepare_astad_jvp(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    fn, tangents = program(name), tangents_for(args, argnums)
    jvp = astad.jvp
    return lambda: jvp(fn, args, tangents)


def prepare_hand_jvp(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    """The hand-written JVP of bench/hand_jvp.py: the floor astad.jvp is measured against."""
    hand, t = HAND[name], chosen(tangents_for(args, argnums), argnums)
    return lambda: hand(*args, *t)


def prepare_autograd_jvp(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    """autograd's forward mode: make_jvp(fn, argnum)(*args)(tangent), a tuple argnum taking a tuple."""
    make_jvp = autograd_ops.make_jvp(autograd_of(program(name)), argnums)
    t = chosen(tangents_for(args, argnums), argnums)
    tangent = t[0] if isinstance(argnums, int) else t
    return lambda: make_jvp(*args)(tangent)


def jax_jvp_of(fn: Callable[..., Any], argnums: Argnums, n: int) -> Callable[..., Any]:
    """(*args, *tangents of argnums) -> jax.jvp of fn in the arguments argnums, the others held fixed."""
    def jvp(*values: Any) -> Any:
        args, tangents = values[:n], values[n:]
        return jax.jvp(lambda *d: fn(*with_chosen(args, argnums, d)), chosen(args, argnums), tangents)

    return jvp


def jax_modes(call_of: Callable[..., Callable[[], Any]], compile_key: str = "jit_compile") -> tuple[Callable, Callable]:
    """The eager and the jit ``prepare`` of one JAX call (``call_of(name, args, argnums, jit)``);
    the jit one records its first call's time under ``compile_key``."""

    def eager(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
        return call_of(name, args, argnums, jit=False)

    def jit(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
        call = call_of(name, args, argnums, jit=True)
        row.times[compile_key] = timed_once(call)
        return call

    return eager, jit


def jax_jvp_call(name: str, args: Args, argnums: Argnums, jit: bool) -> Callable[[], Any]:
    jvp = jax_jvp_of(jax_of(program(name)), argnums, len(args))
    jvp = jax.jit(jvp) if jit else jvp
    values = as_jax((*args, *chosen(tangents_for(args, argnums), argnums)))
    return blocked(lambda: jvp(*values))


prepare_jax_eager_jvp, prepare_jax_jit_jvp = jax_modes(jax_jvp_call, "jit_compile_jvp")


# `limit`: the JVP cells share the caps of the gradient cells of the same tool
TOOLS = [
    Tool("jvp", "astad jvp", astad is not None, prepare_astad_jvp),
    Tool("hand_jvp", "hand jvp", True, prepare_hand_jvp),
    Tool("autograd_jvp", "autograd jvp", autograd_np is not None, prepare_autograd_jvp, limit="autograd"),
    Tool("jax_eager_jvp", "jax jvp eager", jax is not None, prepare_jax_eager_jvp, limit="jax_eager"),
    Tool("jax_jit_jvp", "jax jvp jit", jax is not None, prepare_jax_jit_jvp, limit="jax_jit"),
]


def check_jvp(name: str, args: Args, argnums: Argnums) -> list[str]:
    """Warnings if astad's (value, tangent) differs from autograd's forward mode (else JAX's),
    or from the hand-written JVP."""
    row = Row(name)
    by_key = {tool.key: tool for tool in TOOLS}
    refs = [(label, lambda tool=by_key[key]: tool.prepare(name, args, argnums, row)()) for label, key in
            (("autograd", "autograd_jvp"), ("jax", "jax_eager_jvp")) if wanted(by_key[key])]
    mine = lambda: prepare_astad_jvp(name, args, argnums, row)()  # noqa: E731
    hand = [("the hand-written jvp", lambda: prepare_hand_jvp(name, args, argnums, row)())]
    return [w for w in (check(name, "jvp", mine, refs), check(name, "jvp", mine, hand)) if w]


JVP_TARGET = Target("<=", 2)
COLUMNS: list[tuple[str, Callable[[Row], str]]] = [
    ("program", lambda row: row.name),
    ("primal", time_of("primal")),
    ("astad jvp", time_of("jvp")),
    ("jvp/primal", lambda row: with_target(ratio(row, "jvp", "primal"), JVP_TARGET)),
    ("hand/primal", lambda row: fmt_ratio(ratio(row, "hand_jvp", "primal"))),
    ("autograd jvp", time_of("autograd_jvp")),
    ("vs autograd", speedup("autograd_jvp", "jvp")),
    ("jax jvp eager", time_of("jax_eager_jvp")),
    ("vs eager", speedup("jax_eager_jvp", "jvp")),
    ("jax jvp jit", time_of("jax_jit_jvp")),
    ("jit compile", time_of("jit_compile_jvp", tool="jax_jit_jvp")),
    ("vs jit", speedup("jax_jit_jvp", "jvp")),
]


def print_jvp_table(rows: list[Row]) -> None:
    print("forward mode: (value, tangent) for one tangent of the differentiated arguments")
    print_table([h for h, _ in COLUMNS], [[cell(row) for _, cell in COLUMNS] for row in rows])
    print("hand/primal: bench/hand_jvp.py's hand-written numpy JVP (the floor); "
          "speedups are other tool's time / astad jvp's time\n")


# ------------------------------------------------------------------ memory


def peak_bytes(call: Callable[[], Any]) -> int:
    """Peak memory (tracemalloc) allocated during one call, over what was allocated before it."""
    call()  # transforms and caches first
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return peak - before


def memory_calls(fn: Callable[..., Any], args: Args, argnums: Argnums) -> dict[str, Callable[[], Any]]:
    tangents = tangents_for(args, argnums)
    calls: dict[str, Callable[[], Any]] = {"primal (numpy)": lambda: fn(*args)}
    if astad is not None:
        calls["astad jvp (forward)"] = lambda: astad.jvp(fn, args, tangents)
        calls["astad value_and_grad (reverse)"] = lambda: astad.value_and_grad(fn, argnums=argnums)(*args)
    return calls


MEMORY_TARGET = Target("<=", 1, " B/step")  # forward mode: no tape, O(1) in the number of steps


def memory_section(notes: list[str]) -> None:
    fn, make_inputs, (short, long), argnums = programs.MEMORY
    peaks: dict[str, list[int | None]] = {}
    for n in (short, long):
        args = make_inputs(np.random.default_rng(0), n=n)
        for label, call in memory_calls(fn, args, argnums).items():
            try:
                value: int | None = peak_bytes(call)
            except Exception as e:
                notes.append(f"memory {label} n={n}: {describe(e)}")
                value = None
            peaks.setdefault(label, []).append(value)
    rows = []
    for label, (a, b) in peaks.items():
        per_step = None if a is None or b is None else (b - a) / (long - short)
        target = with_target_plain(per_step, MEMORY_TARGET) if "forward" in label else "-"
        rows.append([label, kib(a), kib(b), "n/a" if per_step is None else f"{per_step:.1f} B", target])
    print(f"memory: peak extra memory of one call of {fn.__name__} (tracemalloc), n steps")
    print_table(["call", f"n={short}", f"n={long}", "growth per step", "target"], rows)
    print()


def kib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 1024:.1f} KiB"


def with_target_plain(x: float | None, target: Target) -> str:
    return f"({target}) {target.check(x)}"


# ------------------------------------------------- HVP, Hessian, Jacobians


@dataclass(frozen=True)
class Section:
    title: str
    entries: dict[str, tuple[Callable[..., Any], Callable[[np.random.Generator], Args], Argnums]]
    tools: list[Tool]
    columns: list[tuple[str, Callable[[Row], str]]]
    check: Callable[[str, Args, Argnums], str | None]


def prepare_primal(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    fn = SECTION_ENTRIES[name][0]
    return lambda: fn(*args)


# --- hvp: H v for v a tangent of the differentiated arguments


def prepare_astad_hvp(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    fn, tangents, hvp = SECTION_ENTRIES[name][0], tangents_for(args, argnums), astad.hvp
    return lambda: hvp(fn, args, tangents)


def prepare_astad_jvp_of_grad(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    """``astad.jvp(astad.grad(fn, argnums), args, tangents)`` with the grad made once: what
    ``astad.hvp`` costs when its transformation is cached (it also returns the gradient)."""
    fn, tangents = SECTION_ENTRIES[name][0], tangents_for(args, argnums)
    grad = astad.grad(fn, argnums=argnums)
    return lambda: astad.jvp(grad, args, tangents)


def prepare_autograd_hvp(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    """autograd's make_hvp (reverse over reverse: the vjp of the gradient)."""
    make_hvp = autograd_ops.make_hvp(autograd_of(SECTION_ENTRIES[name][0]), argnums)
    t = chosen(tangents_for(args, argnums), argnums)
    tangent = t[0] if isinstance(argnums, int) else t
    return lambda: make_hvp(*args)[0](tangent)


def jax_hvp_of(fn: Callable[..., Any], argnums: Argnums, n: int) -> Callable[..., Any]:
    """Forward over reverse: the jvp of the gradient in argnums, the others held fixed."""
    def hvp(*values: Any) -> Any:
        args, tangents = values[:n], values[n:]
        grad = jax.grad(lambda *d: fn(*with_chosen(args, argnums, d)), argnums=tuple(range(len(tangents))))
        return jax.jvp(grad, chosen(args, argnums), tangents)[1]

    return hvp


def jax_hvp_call(name: str, args: Args, argnums: Argnums, jit: bool) -> Callable[[], Any]:
    hvp = jax_hvp_of(jax_of(SECTION_ENTRIES[name][0]), argnums, len(args))
    hvp = jax.jit(hvp) if jit else hvp
    values = as_jax((*args, *chosen(tangents_for(args, argnums), argnums)))
    return blocked(lambda: hvp(*values))


prepare_jax_eager_hvp, prepare_jax_jit_hvp = jax_modes(jax_hvp_call)


def check_hvp(name: str, args: Args, argnums: Argnums) -> str | None:
    row = Row(name)
    refs = [("jax", lambda: prepare_jax_eager_hvp(name, args, argnums, row)()) if jax else None,
            ("autograd", lambda: prepare_autograd_hvp(name, args, argnums, row)()) if autograd_np else None]
    return check(name, "hvp", lambda: prepare_astad_hvp(name, args, argnums, row)(), [r for r in refs if r])


# --- hessian: the full Hessian in one argument


def prepare_astad_hessian(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    hessian = astad.hessian(SECTION_ENTRIES[name][0], argnums=argnums)
    return lambda: hessian(*args)


def prepare_autograd_hessian(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    """autograd.hessian: jacobian(jacobian(f)), reverse over reverse, one row per backward pass."""
    hessian = autograd_hessian(autograd_of(SECTION_ENTRIES[name][0]), argnums)
    return lambda: hessian(*args)


def jax_hessian_call(name: str, args: Args, argnums: Argnums, jit: bool) -> Callable[[], Any]:
    hessian = jax.hessian(jax_of(SECTION_ENTRIES[name][0]), argnums)  # jacfwd(jacrev(f)), vmapped
    hessian = jax.jit(hessian) if jit else hessian
    values = as_jax(args)
    return blocked(lambda: hessian(*values))


prepare_jax_eager_hessian, prepare_jax_jit_hessian = jax_modes(jax_hessian_call)


def check_hessian(name: str, args: Args, argnums: Argnums) -> str | None:
    row = Row(name)
    problem = check(name, "hessian", lambda: prepare_astad_hessian(name, args, argnums, row)(),
                    [r for r in [("autograd", lambda: prepare_autograd_hessian(name, args, argnums, row)())
                                 if autograd_np else None,
                                 ("jax", lambda: prepare_jax_eager_hessian(name, args, argnums, row)())
                                 if jax else None] if r])
    if problem is None and astad is not None:
        try:
            h = np.asarray(prepare_astad_hessian(name, args, argnums, row)())
            if not np.allclose(h, h.T, rtol=1e-10, atol=1e-12):
                return f"WARNING {name}: astad's Hessian is not symmetric"
        except Exception:
            pass
    return problem


# --- jacobians: forward (one jvp per input) vs reverse (one vjp per output)


def prepare_astad_jac(kind: str) -> Callable[[str, Args, Argnums, Row], Callable[[], Any]]:
    def prepare(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
        jac = getattr(astad, kind)(SECTION_ENTRIES[name][0], argnums=argnums)
        return lambda: jac(*args)

    return prepare


def prepare_jax_jac(kind: str) -> Callable[[str, Args, Argnums, Row], Callable[[], Any]]:
    def prepare(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
        jac = getattr(jax, kind)(jax_of(SECTION_ENTRIES[name][0]), argnums)  # eager (vmapped, no jit)
        values = as_jax(args)
        return blocked(lambda: jac(*values))

    return prepare


def prepare_autograd_jacobian(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    jac = autograd_jacobian(autograd_of(SECTION_ENTRIES[name][0]), argnums)  # one backward pass per output
    return lambda: jac(*args)


def check_jacobians(name: str, args: Args, argnums: Argnums) -> str | None:
    row = Row(name)
    refs = [("jax jacfwd", lambda: prepare_jax_jac("jacfwd")(name, args, argnums, row)()) if jax else None,
            ("autograd", lambda: prepare_autograd_jacobian(name, args, argnums, row)()) if autograd_np else None]
    refs = [r for r in refs if r]
    problems = [check(name, kind, lambda kind=kind: prepare_astad_jac(kind)(name, args, argnums, row)(), refs)
                for kind in ("jacfwd", "jacrev", "jacobian")]
    return "; ".join(p for p in problems if p) or None


def faster_mode(row: Row) -> str:
    """The mode that should win on this row's shape (forward: fewer inputs than outputs),
    how many times faster it was than the other, and whether it won."""
    fn, make_inputs, argnums = SECTION_ENTRIES[row.name]
    args = make_inputs(np.random.default_rng(0))
    fwd_wins = np.size(args[nums(argnums)[0]]) < np.size(fn(*args))
    slow, fast = ("jacrev", "jacfwd") if fwd_wins else ("jacfwd", "jacrev")
    x = ratio(row, slow, fast)
    return f"{fast} {fmt_ratio(x)} faster {Target('>', 1).check(x)}"


def best_mode_ratio(row: Row) -> str:
    best = min((row.times[k] for k in ("jacfwd", "jacrev") if k in row.times), default=None)
    x = None if best is None or "jacobian" not in row.times else row.times["jacobian"] / best
    return with_target(x, Target("<=", 1.2))


SECTION_ENTRIES = {**programs.HVPS, **programs.HESSIANS, **programs.JACOBIANS}


def _ratio_cell(num: str, den: str, target: Target | None = None) -> Callable[[Row], str]:
    return lambda row: (with_target(ratio(row, num, den), target) if target else fmt_ratio(ratio(row, num, den)))


PRIMAL = Tool("primal", "numpy", True, prepare_primal)
SECTIONS = {
    "hvp": Section(
        "Hessian-vector product (forward over reverse; autograd: reverse over reverse)",
        programs.HVPS,
        [PRIMAL, Tool("hvp", "astad hvp", astad is not None, prepare_astad_hvp),
         Tool("jvp_grad", "astad jvp(grad)", astad is not None, prepare_astad_jvp_of_grad),
         Tool("autograd", "autograd make_hvp", autograd_np is not None, prepare_autograd_hvp),
         Tool("jax_eager", "jax jvp(grad) eager", jax is not None, prepare_jax_eager_hvp),
         Tool("jax_jit", "jax jvp(grad) jit", jax is not None, prepare_jax_jit_hvp)],
        [("program", lambda row: row.name), ("primal", time_of("primal")), ("astad hvp", time_of("hvp")),
         ("hvp/primal", _ratio_cell("hvp", "primal", Target("<=", 6))),
         ("astad jvp(grad)", time_of("jvp_grad")), ("jvp(grad)/primal", _ratio_cell("jvp_grad", "primal")),
         ("autograd", time_of("autograd")), ("vs autograd", speedup("autograd", "hvp")),
         ("jax eager", time_of("jax_eager")), ("vs eager", speedup("jax_eager", "hvp")),
         ("jax jit", time_of("jax_jit")), ("jit compile", time_of("jit_compile", tool="jax_jit")),
         ("vs jit", speedup("jax_jit", "hvp"))],
        check_hvp),
    "hessian": Section(
        "Hessian of a 30-parameter loss (astad/JAX: forward over reverse; autograd: reverse over reverse)",
        programs.HESSIANS,
        [PRIMAL, Tool("hessian", "astad hessian", astad is not None, prepare_astad_hessian),
         Tool("autograd", "autograd hessian", autograd_np is not None, prepare_autograd_hessian),
         Tool("jax_eager", "jax.hessian eager", jax is not None, prepare_jax_eager_hessian),
         Tool("jax_jit", "jax.hessian jit", jax is not None, prepare_jax_jit_hessian)],
        [("program", lambda row: row.name), ("primal", time_of("primal")), ("astad hessian", time_of("hessian")),
         ("hessian/primal", _ratio_cell("hessian", "primal")),
         ("autograd", time_of("autograd")),
         ("vs autograd", lambda row: with_target(ratio(row, "autograd", "hessian"), Target(">", 1))),
         ("jax eager", time_of("jax_eager")),
         ("vs eager", lambda row: with_target(ratio(row, "jax_eager", "hessian"), Target(">", 1))),
         ("jax jit", time_of("jax_jit")), ("jit compile", time_of("jit_compile", tool="jax_jit")),
         ("vs jit", speedup("jax_jit", "hessian"))],
        check_hessian),
    "jacobian": Section(
        "Jacobians: forward mode (one jvp per input) vs reverse mode (one vjp per output)",
        programs.JACOBIANS,
        [PRIMAL, *(Tool(kind, f"astad {kind}", astad is not None, prepare_astad_jac(kind))
                   for kind in ("jacfwd", "jacrev", "jacobian")),
         *(Tool(f"jax_{kind}", f"jax {kind} eager", jax is not None, prepare_jax_jac(kind))
           for kind in ("jacfwd", "jacrev")),
         Tool("autograd", "autograd jacobian", autograd_np is not None, prepare_autograd_jacobian)],
        [("program", lambda row: row.name), ("primal", time_of("primal")), ("jacfwd", time_of("jacfwd")),
         ("jacrev", time_of("jacrev")), ("expected winner", faster_mode),
         ("jacobian", time_of("jacobian")), ("jacobian/best", best_mode_ratio),
         ("jax jacfwd", time_of("jax_jacfwd")), ("jax jacrev", time_of("jax_jacrev")),
         ("autograd jacobian", time_of("autograd"))],
        check_jacobians),
}


def run_section(key: str, timer: Timer, notes: list[str]) -> None:
    section = SECTIONS[key]
    rows = []
    for name, (_, make_inputs, argnums) in section.entries.items():
        args = make_inputs(np.random.default_rng(0))
        row = Row(name)
        warning = section.check(name, args, argnums) if astad is not None else None
        if warning:
            row.notes.append(warning)
        time_tools(row, section.tools, args, argnums, timer, Limits())
        rows.append(row)
        notes += row.notes
    print(section.title)
    print_table([h for h, _ in section.columns], [[cell(row) for _, cell in section.columns] for row in rows])
    print()


EXTRAS = ["memory", *SECTIONS]


def run_extras(selected: Sequence[str], timer: Timer, notes: list[str]) -> None:
    """The forward-mode sections named in `selected`, in order: memory, hvp, hessian, jacobian."""
    if "memory" in selected:
        memory_section(notes)
    for key in SECTIONS:
        if key in selected:
            run_section(key, timer, notes)
