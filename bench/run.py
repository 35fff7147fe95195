"""Benchmark astad against plain numpy, autograd and JAX.

Run from the repository root:  python bench/run.py [--repeat N] [--only NAME] [--quick] [--clock cpu]
See bench/README.md for what the columns mean. Writes bench/results/latest.json
(not with --quick) after comparing with the results saved there.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time


def blas_threads(argv: list[str]) -> None:
    """``--blas-threads N``: the BLAS thread count, set before numpy is imported (it reads the
    environment then). One thread keeps matrix products steady on a machine shared with other work.
    Without the option, the CPU clock (the default) gets one thread unless the environment sets
    OPENBLAS_NUM_THREADS: idle BLAS threads spin, and CPU time counts them."""
    n = argv[argv.index("--blas-threads") + 1] if "--blas-threads" in argv[:-1] else None
    wall = "--clock=wall" in argv or any(a == "--clock" and argv[i + 1:i + 2] == ["wall"] for i, a in enumerate(argv))
    if n is None and not wall and "OPENBLAS_NUM_THREADS" not in os.environ:
        n = "1"
    if n is not None:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = n


blas_threads(sys.argv)
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import array_backends  # noqa: E402
import forward_mode  # noqa: E402
from harness import (AUTOGRAD_PROGRAMS, CLOCKS, IMPORT_NOTES, JAX_PROGRAMS, LIMITS, QUICK_OTHERS,  # noqa: E402
                     QUICK_SKIP, RESULTS, SKIP, Args, Argnums, Limits, Row, Target, Timer, Tool, astad, autograd,
                     autograd_np, change, describe, fmt_bytes, fmt_ratio, jax, load_results, machine_info, print_table,
                     programs, ratio, reference_ms, REFERENCE_N, save_results, speedup, time_of, time_tools, timed_once, version,
                     wanted, with_target)

# ------------------------------------------------------------- per program

PROGRAMS: dict[str, tuple[Callable[..., Any], Callable[[np.random.Generator], Args], Argnums]]
PROGRAMS = programs.PROGRAMS  # type: ignore[assignment]
BACKEND = ["numpy"]  # --backend: the array library the inputs are converted to (bench/array_backends.py)


def prepare_primal(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    fn = PROGRAMS[name][0]
    return array_backends.finished(lambda: fn(*args), BACKEND[0])


def prepare_astad(name: str, args: Args, argnums: Argnums, row: Row) -> Callable[[], Any]:
    vg = astad.value_and_grad(PROGRAMS[name][0], argnums=argnums)
    return array_backends.finished(lambda: vg(*args), BACKEND[0])


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


def bench_program(name: str, timer: Timer, limits: Limits, jvp_cells: bool = True, transforms: int = 3) -> Row:
    """One program's row: the gradient cells, then (``jvp_cells``) the JVP cells, then the
    peak memory of one primal and one astad gradient call, and astad's transform time."""
    _, make_inputs, argnums = PROGRAMS[name]
    args = array_backends.convert(make_inputs(np.random.default_rng(0)), BACKEND[0])
    row = Row(name)
    checks = [check_gradient(name, args, argnums)]
    if jvp_cells:
        checks += forward_mode.check_jvp(name, args, argnums)
    row.notes += [warning for warning in checks if warning]
    time_tools(row, TOOLS + (forward_mode.TOOLS if jvp_cells else []), args, argnums, timer, limits)
    for tool in TOOLS[:2]:
        if tool.key in row.times:
            row.peak[tool.key] = forward_mode.peak_bytes(tool.prepare(name, args, argnums, row))
    if "astad" in row.times:
        row.transform = transform_time(name, args, argnums, timer, transforms)
    return row


def transform_time(name: str, args: Args, argnums: Argnums, timer: Timer, repeat: int) -> float:
    """Seconds (timer's clock) of astad's transformation from scratch for the gradient in ``argnums``:
    ``astad.clear_caches()``, then ``astad.api.Reverse(fn).derivative(args, argnums)``, best of ``repeat``.
    A new ``Reverse``, not ``astad.reverse(fn)`` (which returns the object made for ``fn`` before): so
    reading and parsing the source (libcst) and its positions are timed too."""
    fn = PROGRAMS[name][0]
    wrt = frozenset((argnums,) if isinstance(argnums, int) else argnums)

    def once() -> float:
        astad.clear_caches()
        gc.collect()  # (the garbage of the samples before is not this sample's work)
        start = timer.clock()
        astad.api.Reverse(fn).derivative(args, wrt)
        return timer.clock() - start

    return min(once() for _ in range(repeat))


#: transformations from scratch per program for "transform cold" (its best is shown), by --quick: the time of
#: one is deterministic work plus the machine's noise, which only adds, so the best of more is the truer number
TRANSFORMS = {False: 5, True: 1}


# ----------------------------------------------------------- astad-only


def transform_cold(timer: Timer) -> float:
    """Median seconds to build a new astad Reverse of fn (reading and parsing its source) and make
    its first call, caches cleared."""
    fn, make_inputs = programs.TRANSFORM_COLD
    args = make_inputs(np.random.default_rng(0))

    def once() -> float:
        astad.clear_caches()
        start = timer.clock()
        astad.api.Reverse(fn)(*args)
        return timer.clock() - start

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


def jvp_array_call_overhead(timer: Timer) -> float:
    """The same for arrays: ``astad.jvp(least_squares, (w, A, b), (w_t, None, None))`` at w: 3,
    A: 4 x 3, b: 4 (where the call is most of the time) over the generated JVP alone."""
    rng = np.random.default_rng(0)
    fn = programs.least_squares
    args = (rng.standard_normal(3), rng.standard_normal((4, 3)), rng.standard_normal(4))
    tangents = (rng.standard_normal(3), None, None)
    astad.jvp(fn, args, tangents)
    generated = astad.forward(fn).derivative(args, frozenset((0,))).jvp
    return timer.median(lambda: astad.jvp(fn, args, tangents)) - timer.median(lambda: generated(*args, tangents[0]))


# ----------------------------------------------------------------- output


# Targets from the issues: straight-line programs (issue 2) gradient <= 3x primal;
# control-flow programs (issue 3) <= 4x, and >= 20x faster than autograd on the
# scalar loops, Huber and Newton; issue 4: closure map and tree <= 4x, Horner
# <= 6x, >= 20x faster than autograd on the closure map and Horner. Issue 12:
# the scalar loops, Huber and Newton <= 1.5x the user's own primal; horner_llsq
# <= 2.5x, logsumexp at 10**6 <= 2x, tiny_scalar <= 5x; transform <= 100 ms cold.
RATIO_TARGET = Target("<=", 3)
RATIO_TARGETS = {**{name: Target("<=", 4) for name in ("gmm", "gmm_64_100", "lstm", "rk4", "closure_map", "tree")},
                 **{name: Target("<=", 1.5) for name in (
                     "scalar_loop_1000", "scalar_loop_4000", "scalar_loop_16000", "huber", "newton")},
                 "horner": Target("<=", 6), "horner_llsq": Target("<=", 2.5), "logsumexp_1e6": Target("<=", 2),
                 "tiny_scalar": Target("<=", 5)}
TRANSFORM_TARGET = Target("<=", 100, " ms")
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


def grad_ratio(row: Row) -> float | None:
    return ratio(row, "astad", "primal")


def saved_ratio(previous: dict[str, Any], name: str) -> float | None:
    return previous.get("programs", {}).get(name, {}).get("ratio")


def peak_cell(row: Row) -> str:
    """astad grad's peak memory, and over the primal's (when the primal's is over 1 kB)."""
    grad, primal = row.peak.get("astad"), row.peak.get("primal")
    if grad is None or primal is None:
        return "n/a"
    if primal < 1000:
        return f"{fmt_bytes(grad)} (primal {fmt_bytes(primal)})"
    return f"{fmt_bytes(grad)} ({grad / primal:.1f}x)"


def transform_cell(row: Row) -> str:
    ms = None if row.transform is None else row.transform * 1e3
    if ms is None:
        return "n/a"
    shown = f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"
    return f"{shown} ms ({TRANSFORM_TARGET}) {TRANSFORM_TARGET.check(ms)}"


# (header, cell) -- issue 12's table: ratio against the saved run, memory, transform time
def issue12_columns(previous: dict[str, Any]) -> list[tuple[str, Callable[[Row], str]]]:
    return [
        ("program", lambda row: row.name),
        ("grad/primal", lambda row: with_target(grad_ratio(row), RATIO_TARGETS.get(row.name, RATIO_TARGET))),
        ("saved", lambda row: fmt_ratio(saved_ratio(previous, row.name))),
        ("change", lambda row: change(grad_ratio(row), saved_ratio(previous, row.name))[0]),
        ("grad peak mem (x primal)", peak_cell),
        ("transform cold", transform_cell),
    ]


def program_results(row: Row) -> dict[str, Any]:
    """One program's entry in the results file."""
    r = grad_ratio(row)
    target = RATIO_TARGETS.get(row.name, RATIO_TARGET)
    ms = None if row.transform is None else row.transform * 1e3
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "times_s": row.times,
            "ratio": r, "ratio_target": str(target), "ratio_ok": target.check(r),
            "peak_bytes": row.peak, "transform_s": row.transform, "transform_ok": TRANSFORM_TARGET.check(ms),
            "skipped": sorted(row.skipped), "notes": row.notes}


# (name, measure -> seconds, target, seconds per target unit)
ASTAD_ONLY: list[tuple[str, Callable[[Timer], float], Target, float]] = [
    ("transform_cold", transform_cold, Target("<=", 100, " ms"), 1e-3),
    ("call_overhead", call_overhead, Target("<=", 1, " us"), 1e-6),  # issue 12 point 4: scalar arguments
    ("jvp_call_overhead", jvp_call_overhead, Target("<=", 1, " us"), 1e-6),
    ("jvp_array_call_overhead", jvp_array_call_overhead, Target("<=", 20, " us"), 1e-6),
]


def astad_only_value(measurement: tuple[str, Callable[[Timer], float], Target, float],
                     timer: Timer, notes: list[str]) -> float | None:
    """The measurement in its target's unit (None if astad is missing or it raised)."""
    name, measure, target, scale = measurement
    if astad is None:
        return None
    try:
        return measure(timer) / scale
    except Exception as e:
        notes.append(f"{name}: astad: {describe(e)}")
        return None


def astad_only_row(measurement: tuple[str, Callable[[Timer], float], Target, float], value: float | None) -> list[str]:
    name, _, target, _ = measurement
    shown = "n/a" if value is None else f"{value:.{2 if target.unit == ' us' else 1}f}{target.unit}"
    return [name, shown, str(target), target.check(value)]


def program_limits(name: str, opts: argparse.Namespace) -> Limits:
    """The caps on ``name``'s slow cells: LIMITS, none with --no-limits, QUICK_SKIP's with --quick."""
    if opts.no_limits:
        return Limits()
    limits = LIMITS.get(name, Limits())
    if opts.quick and name not in QUICK_OTHERS:
        return Limits(repeat=limits.repeat, skip={**limits.skip, **QUICK_SKIP.skip})
    return limits


def main(argv: list[str] | None = None) -> int:
    extras = [name for name, *_ in ASTAD_ONLY] + forward_mode.EXTRAS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int,
                        help="timed samples per cell (default 25; 5 with --quick; LIMITS caps slow cells)")
    parser.add_argument("--only", action="append", choices=[*PROGRAMS, *extras],
                        metavar="NAME", help=f"run only NAME (repeatable): {', '.join([*PROGRAMS, *extras])}")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test (~2 min): 5 short samples, autograd and JAX only on "
                             f"{', '.join(QUICK_OTHERS)}, one cold transform, no results file")
    parser.add_argument("--no-limits", action="store_true",
                        help="ignore the per-program caps on slow cells (LIMITS): every tool, full repeat; slow")
    parser.add_argument("--blas-threads", type=int, metavar="N",
                        help="BLAS threads (OPENBLAS/OMP/MKL_NUM_THREADS; default: the environment's, "
                             "1 with the cpu clock). 1 makes timings on a busy machine steadier")
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
    parser.add_argument("--clock", choices=CLOCKS, default="cpu",
                        help="cpu (default): time.process_time, this process's CPU time (all threads), "
                             "steady on a machine busy with other work; one BLAS thread unless --blas-threads "
                             "or OPENBLAS_NUM_THREADS says otherwise. wall: time.perf_counter")
    parser.add_argument("--save", type=Path, metavar="PATH",
                        help="write the results as JSON to PATH (default: bench/results/latest.json, not with --quick "
                             "unless --save is given); the file there is read first, to compare with")
    parser.add_argument("--no-save", action="store_true", help="write no results file (still compare with it)")
    parser.add_argument("--backend", choices=array_backends.BACKENDS, default="numpy",
                        help="the inputs as Dask or CuPy arrays (bench/array_backends.py): primal and astad only, "
                             "no forward-mode cells, no results file")
    opts = parser.parse_args(argv)
    if opts.backend != "numpy":
        why = array_backends.available(opts.backend)
        if why is not None:
            print(why)
            return 0
        BACKEND[0] = opts.backend
        opts.skip += ["autograd", "jax"]
        opts.no_forward = opts.no_save = True
    SKIP.update(opts.skip)
    timer = Timer(repeat=opts.repeat or (5 if opts.quick else 25), warmup=1 if opts.quick else 3,
                  min_sample=0.001 if opts.quick else 0.01, clock=CLOCKS["cpu" if opts.cpu_time else opts.clock])
    selected = opts.only or ([*PROGRAMS, *extras] if opts.backend == "numpy" else list(array_backends.DEFAULT))
    results_path = opts.save or RESULTS
    previous = load_results(results_path) if opts.backend == "numpy" else {}  # saved: numpy's
    saved_clock = previous.get("machine", {}).get("clock")

    reference = [reference_ms(timer.clock)]
    print(f"python {platform.python_version()}, numpy {np.__version__}, astad {version(astad)}, "
          f"autograd {version(autograd)}, jax {version(jax)}"
          f"{f' (float64, {jax.default_backend()})' if jax else ''}; median of {timer.repeat} samples, "
          f"{opts.clock} clock; {opts.backend} arrays; BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}; "
          f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"reference loop {reference[0]:.1f} ms ({REFERENCE_N:,} additions in Python)\n")

    rows = [bench_program(name, timer, program_limits(name, opts), jvp_cells=not opts.no_forward,
                          transforms=TRANSFORMS[opts.quick])
            for name in PROGRAMS if name in selected]
    if rows:
        print_table([h for h, _ in COLUMNS], [[cell(row) for _, cell in COLUMNS] for row in rows])
        print("speedups are other tool's time / astad's time; jit compile = first call\n")
        columns = issue12_columns(previous)
        print_table([h for h, _ in columns], [[cell(row) for _, cell in columns] for row in rows])
        print(f"saved: grad/primal in {results_path.name} ({previous.get('machine', {}).get('date', 'none')}); "
              "REGR: over 10% worse. peak mem: tracemalloc, one call. transform cold: "
              "astad.clear_caches() then the transformation, best of "
              f"{TRANSFORMS[opts.quick]}, {opts.clock} clock\n")
        if not opts.no_forward:
            forward_mode.print_jvp_table(rows)

    notes = IMPORT_NOTES + [note for row in rows for note in row.notes]
    if saved_clock not in (None, opts.clock):
        notes.append(f"the saved results were taken with the {saved_clock} clock, this run with the {opts.clock} "
                     "clock: their ratios differ for that reason too")
    changes = {row.name: change(grad_ratio(row), saved_ratio(previous, row.name)) for row in rows}
    notes += [f"{name}: grad/primal {shown} against the saved run" for name, (shown, worse) in changes.items() if worse]
    if not opts.no_forward:
        forward_mode.run_extras(selected, timer, notes)
    extra_values = {m[0]: astad_only_value(m, timer, notes) for m in ASTAD_ONLY if m[0] in selected}
    if extra_values:
        print_table(["astad only", "median", "target", "ok"],
                    [astad_only_row(m, extra_values[m[0]]) for m in ASTAD_ONLY if m[0] in extra_values])
        print()

    reference.append(reference_ms(timer.clock))
    print(f"reference loop at the end: {reference[1]:.1f} ms (at the start {reference[0]:.1f} ms; "
          "a busier machine runs it slower)\n")
    save = (opts.save or not opts.quick) and not opts.no_save
    if save:
        save_results(results_path, previous, {**machine_info(opts.clock, timer), "reference_ms": reference},
                     {row.name: program_results(row) for row in rows}, extra_values)

    quick = [note for note in notes if note.endswith(QUICK_SKIP.skip["autograd"] + " (--no-limits runs it)")]
    notes = [note for note in notes if note not in quick] + (
        [f"{QUICK_SKIP.skip['autograd']}: {len(quick)} cells skipped"] if quick else [])
    if notes:
        print("notes:")
        for note in notes:
            print(f"  {note}")
    if opts.transform_time:
        import transform_time

        print("\ntransform time over program size (best of transformations from scratch):")
        transform_time.run(quick=opts.quick, repeat=1 if opts.quick else 3)
    if save:
        print(f"\nresults written to {results_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
