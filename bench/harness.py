"""What the benchmark runners share: the tools (astad, autograd, JAX; each
optional), the programs re-executed with autograd's and JAX's numpy, timing,
the caps on slow cells, targets and table printing.  See bench/README.md."""

from __future__ import annotations

import os

# Before astad is imported: keep the disk cache off, so "transform cold" really
# transforms from scratch and no run is influenced by an earlier one.
os.environ["ASTAD_DISK_CACHE"] = "0"

import dataclasses
import importlib
import importlib.metadata
import inspect
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any


ROOT = Path(__file__).resolve().parent.parent
for _path in (str(ROOT / "bench"), str(ROOT)):  # this checkout's astad; programs.py
    if _path not in sys.path:
        sys.path.insert(0, _path)

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


# programs.py as autograd and JAX run it (empty where the tool is missing)
AUTOGRAD_NS = programs_with(autograd_np) if autograd_np else {}
JAX_NS = programs_with(jax.numpy) if jax else {}
AUTOGRAD_PROGRAMS = AUTOGRAD_NS.get("PROGRAMS", {})
JAX_PROGRAMS = JAX_NS.get("PROGRAMS", {})


# ----------------------------------------------------------------- timing


# --clock: wall time, or CPU time of this process (all its threads), which a
# machine busy with other work disturbs less (time spent waiting for a core is not counted)
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


@dataclass
class Timer:
    repeat: int
    warmup: int
    min_sample: float  # seconds; fast calls are looped so one sample lasts this long
    clock: Callable[[], float] = time.perf_counter  # one of CLOCKS

    def sampler(self, call: Callable[[], Any]) -> "Sampler":
        """`call` warmed up and calibrated: the call that measures how many calls make one
        sample is a sample itself when one call is long enough, so slow cells cost no extra call."""
        clock = self.clock
        for _ in range(self.warmup):
            call()
        start = clock()
        call()
        first = clock() - start
        number = max(1, int(self.min_sample / max(first, 1e-9)))
        return Sampler(call, clock, number, self.repeat, [first] if number == 1 else [])

    def median(self, call: Callable[[], Any]) -> float:
        """Median (``statistic``) seconds per call over `repeat` samples, after `warmup` calls."""
        sampler = self.sampler(call)
        while sampler.wants_more():
            sampler.take()
        return sampler.median()


@dataclass
class Sampler:
    """Samples of one calibrated call (see Timer.sampler): `number` calls per sample."""

    call: Callable[[], Any]
    clock: Callable[[], float]
    number: int
    repeat: int
    samples: list[float]

    def wants_more(self) -> bool:
        return len(self.samples) < self.repeat

    def take(self) -> None:
        clock, call = self.clock, self.call
        start = clock()
        for _ in range(self.number):
            call()
        self.samples.append((clock() - start) / self.number)

    def median(self) -> float:
        return statistics.median(self.samples)


def interleaved(samplers: dict[str, Sampler]) -> tuple[dict[str, float], dict[str, BaseException]]:
    """Median seconds per call of each sampler, its samples taken in rounds (one sample of each
    cell per round, a cell leaving once it has its `repeat`), so that a machine that speeds up or
    slows down over the run (frequency scaling, neighbours) moves every cell of a row alike and
    their ratios stay put. A cell whose call raises leaves with its exception."""
    failed: dict[str, BaseException] = {}
    live = dict(samplers)
    while any(s.wants_more() for s in live.values()):
        for key, sampler in list(live.items()):
            if not sampler.wants_more():
                continue
            try:
                sampler.take()
            except Exception as e:
                failed[key] = e
                del live[key]
    return {key: sampler.median() for key, sampler in live.items()}, failed


def timed_once(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


# ------------------------------------------------------------ rows, caps

Args = tuple[Any, ...]
Argnums = int | tuple[int, ...]


@dataclass
class Row:
    name: str
    times: dict[str, float] = field(default_factory=dict)  # column key -> seconds
    notes: list[str] = field(default_factory=list)
    skipped: set[str] = field(default_factory=set)  # tool keys not run (see LIMITS)
    peak: dict[str, int] = field(default_factory=dict)  # tool key -> peak bytes of one call (tracemalloc)
    transform: float | None = None  # seconds: astad's transformation from scratch (best of a few)


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
    "gmm_64_100": Limits(repeat={"autograd": 10, "jax_eager": 5}),
    # XLA warns "Very slow compile" on the 500 statements: minutes on a busy 2-core machine
    "straight_line_500": Limits(skip={"jax_jit": "XLA takes minutes to compile the 500 statements"}),
}

# --quick: a smoke test of astad in ~2 minutes. autograd and JAX run only on the
# straight-line programs (their cells on loops cost seconds to minutes, JAX's
# first eager and jit calls most); astad's value and gradient are still checked.
QUICK_OTHERS = ("mlp", "logsumexp", "least_squares")
QUICK_SKIP = Limits(skip={key: "--quick runs the other tools only on " + ", ".join(QUICK_OTHERS)
                          for key in ("autograd", "jax_eager", "jax_jit")})


#: tool-key prefixes not run (run.py --skip): "autograd", "jax"
SKIP: set[str] = set()


def wanted(tool: "Tool") -> bool:
    return tool.available and not any(tool.key.startswith(prefix) for prefix in SKIP)


@dataclass(frozen=True)
class Tool:
    """One cell of a row: ``prepare(name, args, argnums, row)`` gives the call to time.
    ``limit``: the key its caps are found under in LIMITS (default: ``key``)."""

    key: str
    label: str
    available: bool
    prepare: Callable[[str, Args, Argnums, Row], Callable[[], Any]]
    limit: str = ""


def time_tools(row: Row, tools: list[Tool], args: Args, argnums: Argnums, timer: Timer, limits: Limits) -> None:
    """Time each available tool's call into ``row.times[tool.key]``; an exception becomes a note.
    Each cell is prepared and warmed up in turn, then the samples are taken in interleaved rounds."""
    samplers: dict[str, Sampler] = {}
    labels = {tool.key: tool.label for tool in tools}
    for tool in tools:
        if not wanted(tool):
            continue
        cap = tool.limit or tool.key
        if cap in limits.skip:
            row.skipped.add(tool.key)
            row.notes.append(f"{row.name}: {tool.label}: skipped, {limits.skip[cap]} (--no-limits runs it)")
            continue
        cell_timer = timer
        if cap in limits.repeat:
            cell_timer = dataclasses.replace(timer, repeat=min(timer.repeat, limits.repeat[cap]),
                                             warmup=min(timer.warmup, 1))
        try:
            samplers[tool.key] = cell_timer.sampler(tool.prepare(row.name, args, argnums, row))
        except Exception as e:
            row.notes.append(f"{row.name}: {tool.label}: {describe(e)}")
    times, failed = interleaved(samplers)
    row.times.update(times)
    row.notes += [f"{row.name}: {labels[key]}: {describe(e)}" for key, e in failed.items()]


# ----------------------------------------------------------------- output


COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<=": lambda x, v: x <= v, ">=": lambda x, v: x >= v, "<": lambda x, v: x < v, ">": lambda x, v: x > v}


@dataclass(frozen=True)
class Target:
    op: str  # one of COMPARE
    value: float
    unit: str = "x"

    def check(self, x: float | None) -> str:
        if x is None:
            return "-"
        return "PASS" if COMPARE[self.op](x, self.value) else "MISS"

    def __str__(self) -> str:
        return f"{self.op}{self.value:g}{self.unit}"


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


def speedup(other: str, base: str = "astad") -> Callable[[Row], str]:
    """The cell ``other``'s time / ``base``'s time."""
    return lambda row: fmt_ratio(ratio(row, other, base))


def time_of(key: str, tool: str | None = None) -> Callable[[Row], str]:
    """The time in row.times[key]; "skip" if `tool` (default: key) was skipped."""
    return lambda row: "skip" if (tool or key) in row.skipped else fmt_time(row.times.get(key))


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




def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "n/a"
    unit, scale = next(((u, s) for u, s in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)) if n >= s), ("B", 1))
    return f"{n / scale:.3g} {unit}"


# ----------------------------------------------------------- results file

RESULTS = ROOT / "bench" / "results" / "latest.json"
REGRESSION = 1.10  # a grad/primal ratio this many times the saved one is flagged


#: the reference workload of :func:`reference_ms`: pure Python (no numpy, no astad), like most of a transform
REFERENCE_N = 10**6


def reference_ms(clock: Callable[[], float], samples: int = 5) -> float:
    """Milliseconds (``clock``'s) of a fixed pure-Python loop, median of ``samples``: how fast this machine runs
    Python just now. Printed at the start and the end of a run and saved with it, so that a reader can tell a
    run on a busy machine (a shared VM's host can halve its speed for minutes) from a regression of astad."""

    def once() -> float:
        start = clock()
        total = 0
        for i in range(REFERENCE_N):
            total += i
        return clock() - start

    return statistics.median(once() for _ in range(samples)) * 1e3


def machine_info(clock: str, timer: Timer) -> dict[str, Any]:
    """Where and how the numbers were taken (saved with them)."""
    import platform
    import subprocess

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": commit,
        "machine": platform.machine(), "processor": platform.processor(), "system": platform.platform(),
        "cpus": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "versions": {m.__name__: version(m) for m in (sys.modules["numpy"], astad, autograd, jax) if m},
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
        "clock": clock, "repeat": timer.repeat, "statistic": "median",
    }


def load_results(path: Path) -> dict[str, Any]:
    """The saved results at ``path`` ({} if there are none or they cannot be read)."""
    import json

    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def save_results(path: Path, previous: dict[str, Any], machine: dict[str, Any],
                 programs: dict[str, Any], astad_only: dict[str, Any]) -> None:
    """Write this run's results over ``path``, keeping the previous entries of the programs not run."""
    import json

    merged = {"machine": machine,
              "programs": {**previous.get("programs", {}), **programs},
              "astad_only": {**previous.get("astad_only", {}), **astad_only}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")


def change(now: float | None, before: float | None) -> tuple[str, bool]:
    """``now`` against ``before`` as a percentage, and whether it is a regression (> REGRESSION)."""
    if now is None or not before:
        return "-", False
    worse = now > before * REGRESSION
    return f"{(now / before - 1) * 100:+.0f}%{' REGR' if worse else ''}", worse
