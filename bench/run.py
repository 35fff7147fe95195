"""Benchmark astad against plain numpy, autograd and JAX.

Run from the repository root:  python bench/run.py [--repeat N] [--only NAME] [--quick]
See bench/README.md for what the columns mean.
"""

from __future__ import annotations

import os

# Before astad is imported: keep the disk cache off, so "transform cold" really
# transforms from scratch and no run is influenced by an earlier one.
os.environ["ASTAD_DISK_CACHE"] = "0"

import argparse
import dataclasses
import importlib
import importlib.metadata
import inspect
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]  # this checkout's astad; programs.py

import programs  # noqa: E402

IMPORT_NOTES: list[str] = []


def try_import(name: str) -> Any:
    """The module, or None (noted unless it is simply not installed)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name.split(".")[0]:  # a dependency is missing, not the tool
            IMPORT_NOTES.append(f"import {name}: {describe(e)}")
        return None
    except Exception as e:  # a broken install or a half-written astad
        IMPORT_NOTES.append(f"import {name}: {describe(e)}")
        return None


def describe(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


astad = try_import("astad")
autograd = try_import("autograd")
autograd_np = try_import("autograd.numpy") if autograd else None
jax = try_import("jax")
if jax:
    jax.config.update("jax_enable_x64", True)


def programs_with(np_module: ModuleType) -> dict[str, Any]:
    """programs.py re-executed with `np` meaning `np_module` (autograd.numpy, jax.numpy).

    The np-swapping trick: the program functions look up the global `np` when
    they are called, not when they are defined. So we exec the unchanged source
    of programs.py (its `import numpy as np` line included) into a fresh
    namespace and then rebind `np` there. The new copies of the functions --
    reached through that namespace's own PROGRAMS dict -- now call autograd's
    or JAX's numpy, while the real `programs` module (used for the primal and
    for astad, which reads the source) keeps plain numpy. No rewriting needed.
    """
    namespace: dict[str, Any] = {"__name__": f"programs_as_{np_module.__name__}"}
    exec(compile(inspect.getsource(programs), programs.__file__, "exec"), namespace)
    namespace["np"] = np_module
    return namespace


AUTOGRAD_PROGRAMS = programs_with(autograd_np)["PROGRAMS"] if autograd_np else {}
JAX_PROGRAMS = programs_with(jax.numpy)["PROGRAMS"] if jax else {}


# ----------------------------------------------------------------- timing


@dataclass
class Timer:
    repeat: int
    warmup: int
    min_sample: float  # seconds; fast calls are looped so one sample lasts this long

    def median(self, call: Callable[[], Any]) -> float:
        """Median seconds per call over `repeat` samples, after `warmup` calls.

        The call that measures how many calls make one sample is a sample
        itself when one call is long enough, so slow cells cost no extra call.
        """
        for _ in range(self.warmup):
            call()
        start = time.perf_counter()
        call()
        first = time.perf_counter() - start
        number = max(1, int(self.min_sample / max(first, 1e-9)))
        samples = [first] if number == 1 else []
        while len(samples) < self.repeat:
            start = time.perf_counter()
            for _ in range(number):
                call()
            samples.append((time.perf_counter() - start) / number)
        return statistics.median(samples)


def timed_once(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


# ------------------------------------------------------------- per program

Args = tuple[Any, ...]
Argnums = int | tuple[int, ...]
PROGRAMS: dict[str, tuple[Callable[..., Any], Callable[[np.random.Generator], Args], Argnums]]
PROGRAMS = programs.PROGRAMS  # type: ignore[assignment]


@dataclass
class Row:
    name: str
    times: dict[str, float] = field(default_factory=dict)  # column key -> seconds
    notes: list[str] = field(default_factory=list)
    skipped: set[str] = field(default_factory=set)  # tool keys not run (see LIMITS)


@dataclass(frozen=True)
class Limits:
    """Caps for the cells of one program that are too slow for the default run.

    repeat: tool key -> at most this many timed samples, after a single
    warm-up call; skip: tool key -> why that tool is not run at all. Both are
    ignored with --no-limits.
    """

    repeat: dict[str, int] = field(default_factory=dict)
    skip: dict[str, str] = field(default_factory=dict)


# LIMITS keep the default run within ~5 minutes. The comments give seconds per
# call, measured on a 2-core x86 CPU. The loops cost autograd and JAX
# eager one operation per scalar op (~0.4 ms each for JAX eager here), and the
# first JAX eager call also compiles each x[i] separately (~40 s for 1000
# reads). jax.jit unrolls a Python loop: compiling scalar_loop_1000 takes ~90 s,
# scalar_loop_4000 over 400 s. huber and newton branch on values, which jax.jit
# refuses (TracerBoolConversionError, in the notes).
JIT_UNROLLED = "compiling the unrolled loop takes minutes"
LIMITS: dict[str, Limits] = {
    "scalar_loop_1000": Limits(repeat={"autograd": 5, "jax_eager": 1},  # 0.3 s; 8 s (first call 40 s)
                               skip={"jax_jit": JIT_UNROLLED}),
    "scalar_loop_4000": Limits(repeat={"autograd": 3},  # 1.6 s; JAX eager 32 s (first call 200 s)
                               skip={"jax_eager": "one call takes half a minute, the first minutes",
                                     "jax_jit": JIT_UNROLLED}),
    "scalar_loop_16000": Limits(repeat={"autograd": 1},  # 7 s
                                skip={"jax_eager": "one call takes minutes", "jax_jit": JIT_UNROLLED}),
    "huber": Limits(repeat={"jax_eager": 3}),  # 3 s
    "gmm": Limits(repeat={"jax_eager": 10}),  # 0.4 s
    "lstm": Limits(repeat={"jax_eager": 10}),  # 0.8 s
}


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


@dataclass(frozen=True)
class Tool:
    key: str
    label: str
    available: bool
    prepare: Callable[[str, Args, Argnums, Row], Callable[[], Any]]


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
    reference = next((t for t in TOOLS if t.key in ("autograd", "jax_eager") and t.available), None)
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


def bench_program(name: str, timer: Timer, limits: Limits) -> Row:
    _, make_inputs, argnums = PROGRAMS[name]
    args = make_inputs(np.random.default_rng(0))
    row = Row(name)
    warning = check_gradient(name, args, argnums)
    if warning:
        row.notes.append(warning)
    for tool in TOOLS:
        if not tool.available:
            continue
        if tool.key in limits.skip:
            row.skipped.add(tool.key)
            row.notes.append(f"{name}: {tool.label}: skipped, {limits.skip[tool.key]} (--no-limits runs it)")
            continue
        cell_timer = timer
        if tool.key in limits.repeat:
            cell_timer = dataclasses.replace(timer, repeat=min(timer.repeat, limits.repeat[tool.key]),
                                             warmup=min(timer.warmup, 1))
        try:
            row.times[tool.key] = cell_timer.median(tool.prepare(name, args, argnums, row))
        except Exception as e:
            row.notes.append(f"{name}: {tool.label}: {describe(e)}")
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
    forward = obj.transform(*args).forward
    return timer.median(lambda: obj(*args)) - timer.median(lambda: forward(*args))


# ----------------------------------------------------------------- output


@dataclass(frozen=True)
class Target:
    op: str  # "<=" or ">="
    value: float
    unit: str = "x"

    def check(self, x: float | None) -> str:
        if x is None:
            return "-"
        ok = x <= self.value if self.op == "<=" else x >= self.value
        return "PASS" if ok else "MISS"

    def __str__(self) -> str:
        return f"{self.op}{self.value:g}{self.unit}"


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


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    unit, scale = next(((u, s) for u, s in (("s", 1.0), ("ms", 1e-3)) if abs(seconds) >= s), ("us", 1e-6))
    value = seconds / scale
    return f"{value:.3g} {unit}" if abs(value) < 100 else f"{value:.0f} {unit}"


def ratio(row: Row, num: str, den: str) -> float | None:
    if num in row.times and den in row.times:
        return row.times[num] / row.times[den]
    return None


def fmt_ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}x"


def with_target(x: float | None, target: Target) -> str:
    return f"{fmt_ratio(x)} ({target}) {target.check(x)}"


def speedup(other: str) -> Callable[[Row], str]:
    return lambda row: fmt_ratio(ratio(row, other, "astad"))


def time_of(key: str, tool: str | None = None) -> Callable[[Row], str]:
    """The time in row.times[key]; "skip" if `tool` (default: key) was skipped."""
    return lambda row: "skip" if (tool or key) in row.skipped else fmt_time(row.times.get(key))


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


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    for r in [headers, ["-" * w for w in widths], *rows]:
        print("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                        for i, (cell, w) in enumerate(zip(r, widths, strict=True))))


def version(module: Any) -> str:
    if module is None:
        return "n/a"
    try:
        return importlib.metadata.version(module.__name__)
    except importlib.metadata.PackageNotFoundError:
        return getattr(module, "__version__", "(not installed)")


# (name, measure -> seconds, target, seconds per target unit)
ASTAD_ONLY: list[tuple[str, Callable[[Timer], float], Target, float]] = [
    ("transform_cold", transform_cold, Target("<=", 100, " ms"), 1e-3),
    ("call_overhead", call_overhead, Target("<=", 20, " us"), 1e-6),
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
    extras = [name for name, *_ in ASTAD_ONLY]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int,
                        help="timed samples per cell (default 25; 5 with --quick; LIMITS caps slow cells)")
    parser.add_argument("--only", action="append", choices=[*PROGRAMS, *extras],
                        metavar="NAME", help=f"run only NAME (repeatable): {', '.join([*PROGRAMS, *extras])}")
    parser.add_argument("--quick", action="store_true", help="few, short samples: a smoke test")
    parser.add_argument("--no-limits", action="store_true",
                        help="ignore the per-program caps on slow cells (LIMITS): every tool, full repeat; slow")
    parser.add_argument("--transform-time", action="store_true",
                        help="also time transformations over program size (bench/transform_time.py)")
    opts = parser.parse_args(argv)
    timer = Timer(repeat=opts.repeat or (5 if opts.quick else 25),
                  warmup=1 if opts.quick else 3, min_sample=0.001 if opts.quick else 0.01)
    selected = opts.only or [*PROGRAMS, *extras]

    print(f"python {platform.python_version()}, numpy {np.__version__}, astad {version(astad)}, "
          f"autograd {version(autograd)}, jax {version(jax)}"
          f"{f' (float64, {jax.default_backend()})' if jax else ''}; median of {timer.repeat} samples\n")

    rows = [bench_program(name, timer, Limits() if opts.no_limits else LIMITS.get(name, Limits()))
            for name in PROGRAMS if name in selected]
    if rows:
        print_table([h for h, _ in COLUMNS], [[cell(row) for _, cell in COLUMNS] for row in rows])
        print("speedups are other tool's time / astad's time; jit compile = first call\n")

    notes = IMPORT_NOTES + [note for row in rows for note in row.notes]
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
