"""Benchmark astad against plain numpy, autograd and JAX.

Run from the repository root:  python bench/run.py [--repeat N] [--only NAME] [--quick]
See bench/README.md for what the columns mean.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time


def blas_threads(argv: list[str]) -> None:
    """``--blas-threads N``: the BLAS thread count, set before numpy is imported (it reads the
    environment then). One thread keeps matrix products steady on a machine shared with other work."""
    if "--blas-threads" in argv[:-1]:
        n = argv[argv.index("--blas-threads") + 1]
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = n


blas_threads(sys.argv)
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import forward_mode  # noqa: E402
from harness import (AUTOGRAD_PROGRAMS, IMPORT_NOTES, JAX_PROGRAMS, LIMITS, Args, Argnums, Limits, Row,  # noqa: E402
                     SKIP, Target, Timer, Tool, astad, autograd, autograd_np, describe, jax,
                     print_table, programs, ratio, speedup, time_of, time_tools, timed_once, version,
                     wanted, with_target)

# ------------------------------------------------------------- per program

PROGRAMS: dict[str, tuple[Callable[..., Any], Callable[[np.random.Generator], Args], Argnums]]
PROGRAMS = programs.PROGRAMS  # type: ignore[assignment]


def prepare_primal(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    fn = PROGRAMS[name][0]
    return lambda: fn(*args)


def prepare_astad(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    vg = astad.value_and_grad(PROGRAMS[name][0], argnums=argnums)
    return lambda: vg(*args)


def prepare_autograd(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    vg = autograd.value_and_grad(AUTOGRAD_PROGRAMS[name][0], argnums)
    return lambda: vg(*args)


def jax_call(vg: Callable[..., Any], args: Args) -> Callable[[], Any]:
    jargs = tuple(jax.numpy.asarray(a) for a in args)
    return lambda: jax.block_until_ready(vg(*jargs))


def prepare_jax_eager(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    return jax_call(jax.value_and_grad(JAX_PROGRAMS[name][0], argnums), args)


def prepare_jax_jit(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    call = jax_call(jax.jit(jax.value_and_grad(JAX_PROGRAMS[name][0], argnums)), args)
    row.times["jit_compile"] = timed_once(call)  # first call: trace + compile + run
    return call


TOOLS = [
    Tool("primal", "numpy", True, prepare_primal),
    Tool("astad", "astad", astad is not None, prepare_astad),
    Tool("autograd", "autograd", autograd_np is not None, prepare_autograd),
    Tool("jax_eager", "jax eager", jax is not None, prepare_jax_eager),
    Tool("jax_jit", "jax jit", jax is not None, prepare_jax_jit),
]


def as_tuple(grads: Any, argnums: Argnums) -> tuple[Any, ...]:
    return (grads,) if isinstance(argnums, int) else tuple(grads)


def check_gradient(name: str, args: Args, argnums: Argnums) -> str | None:
    """A warning if astad's value/gradient differs from autograd's (else JAX's)."""
    reference = next((t for t in TOOLS if t.key in ("autograd", "jax_eager") and wanted(t)), None)
    if astad is None or reference is None:
        return None
    try:
        got = prepare_astad(name, args, argnums, Row(name))()
        want = reference.prepare(name, args, argnums, Row(name))()
    except Exception:
        return None  # reported when timing that tool
    pairs = [(got[0], want[0])] + list(zip(as_tuple(got[1], argnums), as_tuple(want[1], argnums), strict=False))
    labels = ["value"] + [f"d/d arg {i}" for i in np.atleast_1d(argnums)]
    bad = [
        label
        for label, (g, w) in zip(labels, pairs, strict=False)
        if np.shape(g) != np.shape(w) or not np.allclose(g, np.asarray(w), rtol=1e-6)
    ]
    if len(pairs) != len(labels) or bad:
        return f"WARNING {name}: astad disagrees with {reference.label} on {', '.join(bad) or 'arity'}"
    return None


def bench_program(name: str, timer: Timer, limits: Limits, jvp_cells: bool = True) -> Row:
    """One program's row: the gradient cells, then (``jvp_cells``) the JVP cells."""
    _, make_inputs, argnums = PROGRAMS[name]
    args = make_inputs(np.random.default_rng(0))
    row = Row(name)
    checks = [check_gradient(name, args, argnums)]
    if jvp_cells:
        checks += forward_mode.check_jvp(name, args, argnums)
    row.notes += [warning for warning in checks if warning]
    time_tools(row, TOOLS + (forward_mode.TOOLS if jvp_cells else []), args, argnums, timer, limits)
    return row


# ----------------------------------------------------------- astad-only


def transform_cold(timer: Timer) -> float:
    """Median seconds to build astad.reverse(fn) and make its first call, caches cleared."""
    fn, make_inputs = programs.TRANSFORM_COLD
    args = make_inputs(np.random.default_rng(0))

    def once() -> float:
        astad.clear_caches()
        return timed_once(lambda: astad.reverse(fn)(*args))

    once()  # first-ever transform also pays for lazy imports; not a cache effect
    return statistics.median(once() for _ in range(timer.repeat))


def call_overhead(timer: Timer) -> float:
    """Seconds a call through the astad.reverse object costs over the generated forward."""
    fn, make_inputs = programs.CALL_OVERHEAD
    args = make_inputs(np.random.default_rng(0))
    obj = astad.reverse(fn)
    generated = obj.transform(*args).forward
    return timer.median(lambda: obj(*args)) - timer.median(lambda: generated(*args))


def jvp_call_overhead(timer: Timer) -> float:
    """Seconds ``astad.jvp(tiny, args, tangents)`` costs over the generated JVP function alone."""
    fn, make_inputs = programs.CALL_OVERHEAD
    args = make_inputs(np.random.default_rng(0))
    tangents = tuple(1.0 for _ in args)
    astad.jvp(fn, args, tangents)
    generated = astad.forward(fn).derivative(args, frozenset(range(len(args)))).jvp
    return timer.median(lambda: astad.jvp(fn, args, tangents)) - timer.median(lambda: generated(*args, *tangents))


# ----------------------------------------------------------------- output


# Targets from the issues: straight-line programs (issue 2) gradient <= 3x primal;
# control-flow programs (issue 3) <= 4x, and >= 20x faster than autograd on the
# scalar loops, Huber and Newton; issue 4: closure map and tree <= 4x, Horner
# <= 6x, >= 20x faster than autograd on the closure map and Horner.
RATIO_TARGET = Target("<=", 3)
RATIO_TARGETS = {**{name: Target("<=", 4) for name in (
    "scalar_loop_1000", "scalar_loop_4000", "scalar_loop_16000", "huber", "newton", "gmm", "lstm", "rk4",
    "closure_map", "tree")}, "horner": Target("<=", 6)}
AUTOGRAD_TARGETS = {"mlp": Target(">=", 2), **{name: Target(">=", 20) for name in (
    "scalar_loop_1000", "scalar_loop_4000", "scalar_loop_16000", "huber", "newton", "closure_map", "horner")}}
DEFAULT_AUTOGRAD_TARGET = Target(">=", 3)


# (header, cell) -- the main table, one row per program
COLUMNS: list[tuple[str, Callable[[Row], str]]] = [
    ("program", lambda row: row.name),
    ("primal", time_of("primal")),
    ("astad grad", time_of("astad")),
    ("grad/primal", lambda row: with_target(ratio(row, "astad", "primal"), RATIO_TARGETS.get(row.name, RATIO_TARGET))),
    ("autograd", time_of("autograd")),
    ("astad vs autograd", lambda row: with_target(
        ratio(row, "autograd", "astad"), AUTOGRAD_TARGETS.get(row.name, DEFAULT_AUTOGRAD_TARGET))),
    ("jax eager", time_of("jax_eager")),
    ("vs eager", speedup("jax_eager")),
    ("jax jit", time_of("jax_jit")),
    ("jit compile", time_of("jit_compile", tool="jax_jit")),
    ("vs jit", speedup("jax_jit")),
]


# (name, measure -> seconds, target, seconds per target unit)
ASTAD_ONLY: list[tuple[str, Callable[[Timer], float], Target, float]] = [
    ("transform_cold", transform_cold, Target("<=", 100, " ms"), 1e-3),
    ("call_overhead", call_overhead, Target("<=", 20, " us"), 1e-6),
    ("jvp_call_overhead", jvp_call_overhead, Target("<=", 20, " us"), 1e-6),
]


def astad_only_row(measurement: tuple[str, Callable[[Timer], float], Target, float],
                   timer: Timer, notes: list[str]) -> list[str]:
    name, measure, target, scale = measurement
    value: float | None = None
    if astad is not None:
        try:
            value = measure(timer) / scale
        except Exception as e:
            notes.append(f"{name}: astad: {describe(e)}")
    shown = "n/a" if value is None else f"{value:.1f}{target.unit}"
    return [name, shown, str(target), target.check(value)]


def main(argv: list[str] | None = None) -> int:
    extras = [name for name, *_ in ASTAD_ONLY] + forward_mode.EXTRAS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int,
                        help="timed samples per cell (default 25; 5 with --quick; LIMITS caps slow cells)")
    parser.add_argument("--only", action="append", choices=[*PROGRAMS, *extras],
                        metavar="NAME", help=f"run only NAME (repeatable): {', '.join([*PROGRAMS, *extras])}")
    parser.add_argument("--quick", action="store_true", help="few, short samples: a smoke test")
    parser.add_argument("--no-limits", action="store_true",
                        help="ignore the per-program caps on slow cells (LIMITS): every tool, full repeat; slow")
    parser.add_argument("--blas-threads", type=int, metavar="N",
                        help="BLAS threads (OPENBLAS/OMP/MKL_NUM_THREADS; default: the environment's). "
                             "1 makes timings on a busy machine steadier")
    parser.add_argument("--no-forward", action="store_true",
                        help="only the reverse-mode table and astad-only rows (no JVP cells, memory, hvp, "
                             "hessian, jacobian)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time CPU seconds (time.process_time) and take the least sample, not the median wall "
                             "time: steadier on a machine busy with other work (with --blas-threads 1)")
    parser.add_argument("--skip", action="append", choices=["autograd", "jax"], default=[],
                        help="leave out a tool's cells and checks in the program tables (repeatable)")
    parser.add_argument("--transform-time", action="store_true",
                        help="also time transformations over program size (bench/transform_time.py)")
    opts = parser.parse_args(argv)
    SKIP.update(opts.skip)
    timer = Timer(repeat=opts.repeat or (5 if opts.quick else 25),
                  warmup=1 if opts.quick else 3, min_sample=0.001 if opts.quick else 0.01)
    if opts.cpu_time:
        timer = Timer(timer.repeat, timer.warmup, timer.min_sample, time.process_time, min)
    selected = opts.only or [*PROGRAMS, *extras]

    print(f"python {platform.python_version()}, numpy {np.__version__}, astad {version(astad)}, "
          f"autograd {version(autograd)}, jax {version(jax)}"
          f"{f' (float64, {jax.default_backend()})' if jax else ''}; "
          f"{'least CPU time' if opts.cpu_time else 'median'} of {timer.repeat} samples; "
          f"BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}\n")

    rows = [bench_program(name, timer, Limits() if opts.no_limits else LIMITS.get(name, Limits()),
                          jvp_cells=not opts.no_forward)
            for name in PROGRAMS if name in selected]
    if rows:
        print_table([h for h, _ in COLUMNS], [[cell(row) for _, cell in COLUMNS] for row in rows])
        print("speedups are other tool's time / astad's time; jit compile = first call\n")
        if not opts.no_forward:
            forward_mode.print_jvp_table(rows)

    notes = IMPORT_NOTES + [note for row in rows for note in row.notes]
    if not opts.no_forward:
        forward_mode.run_extras(selected, timer, notes)
    extra_rows = [astad_only_row(m, timer, notes) for m in ASTAD_ONLY if m[0] in selected]
    if extra_rows:
        print_table(["astad only", "median", "target", "ok"], extra_rows)
        print()

    if notes:
        print("notes:")
        for note in notes:
            print(f"  {note}")
    if opts.transform_time:
        import transform_time

        print("\ntransform time over program size (best of transformations from scratch):")
        transform_time.run(quick=opts.quick, repeat=1 if opts.quick else 3)
    return 0


if __name__ == "__main__":
    sys.exit(main())
