"""Transform time over program size: how astad's time to transform a function
grows with the function's size, for five kinds of growth.

Run from the repository root:  python bench/transform_time.py [--quick] [--repeat N]

Each family makes a program of size n; the time is the best of --repeat
transformations from scratch (parse, lower, AD, optimise, generate, compile:
``astad.clear_caches()`` then ``astad.reverse(f).transform(*args)``).  The
fitted exponent is the slope of log(time) against log(n) (least squares);
n log n over these sizes has a slope of about 1 + 1/ln(n) (~1.2), so the
target is an exponent <= 1.3.
"""

from __future__ import annotations

import os

os.environ["ASTAD_DISK_CACHE"] = "0"

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import astad  # noqa: E402

TARGET = 1.3


def straight_line(n: int) -> str:
    body = "\n".join(f"    x = np.sin(x) * {1 + k % 7 / 10} + x" for k in range(n))
    return f"import numpy as np\n\ndef f(x):\n{body}\n    return np.sum(x)\n"


def nesting(n: int) -> str:
    return f"import numpy as np\n\ndef f(x):\n    return np.sum({'np.sin(0.5 * ' * n}x{')' * n})\n"


def chain(n: int) -> str:
    lines = ["import numpy as np", "", "def f(x):", "    def f0(y):", "        return np.sin(y)"]
    for i in range(1, n):
        lines += [f"    def f{i}(y):", f"        return f{i - 1}(y) * 0.9 + y"]
    lines.append(f"    return np.sum(f{n - 1}(x))")
    return "\n".join(lines) + "\n"


def nested_ifs(n: int) -> str:
    lines = ["import numpy as np", "", "def f(x):", "    s = x * 1.0"]
    for k in range(n):
        indent = "    " * (k + 1)
        lines += [f"{indent}if np.sum(s) > {-100 - k}.0:", f"{indent}    s = np.sin(s) + 0.1"]
    lines.append("    return np.sum(s)")
    return "\n".join(lines) + "\n"


def loop_body(n: int) -> str:
    body = "\n".join(f"        s = s + np.sin(x[i] * {1 + k % 7 / 10}) * s" for k in range(n))
    return f"import numpy as np\n\ndef f(x):\n    s = 1.0\n    for i in range(x.shape[0]):\n{body}\n    return s\n"


#: family -> (program of size n, sizes, sizes with --quick)
FAMILIES: dict[str, tuple[Callable[[int], str], list[int], list[int]]] = {
    "straight-line length": (straight_line, [25, 50, 100, 200, 400], [25, 50, 100, 200]),
    "nesting depth (calls)": (nesting, [10, 20, 40, 80, 160], [10, 20, 40, 80]),
    "nesting depth (ifs)": (nested_ifs, [5, 10, 20, 40, 80], [5, 10, 20, 40]),
    "chain of local functions": (chain, [8, 16, 32, 64], [8, 16, 32]),
    "loop body size": (loop_body, [25, 50, 100, 200, 400], [25, 50, 100, 200]),
}


def load(source: str, directory: str, name: str) -> Callable[..., Any]:
    path = Path(directory) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


def transform_time(fn: Callable[..., Any], args: list[Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        astad.clear_caches(disk=False)
        start = time.perf_counter()
        astad.reverse(fn).transform(*args)
        best = min(best, time.perf_counter() - start)
    return best


def exponent(sizes: list[int], times: list[float]) -> float:
    """The slope of log(time) against log(size), least squares."""
    return float(np.polyfit(np.log(sizes), np.log(times), 1)[0])


def run(quick: bool = False, repeat: int = 3, out: Any = sys.stdout) -> dict[str, float]:
    """Time every family; print a table and each fitted exponent; return the exponents."""
    x = np.linspace(0.1, 0.9, 5)
    exponents: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as directory:
        for k, (family, (make, sizes, quick_sizes)) in enumerate(FAMILIES.items()):
            sizes = quick_sizes if quick else sizes
            times = [transform_time(load(make(n), directory, f"astad_transform_time_{k}_{n}"), [x], repeat)
                     for n in sizes]
            exponents[family] = e = exponent(sizes, times)
            cells = "  ".join(f"n={n}: {t * 1e3:.0f} ms" for n, t in zip(sizes, times))
            verdict = "PASS" if e <= TARGET else "FAIL"
            print(f"{family:<26} {cells}", file=out)
            print(f"{'':<26} fitted exponent {e:.2f} (target <= {TARGET}, n log n) {verdict}", file=out, flush=True)
    return exponents


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, one sample each")
    parser.add_argument("--repeat", type=int, default=3, help="transformations per size; the best is kept")
    args = parser.parse_args(argv)
    exponents = run(args.quick, 1 if args.quick else args.repeat)
    return 0 if all(e <= TARGET for e in exponents.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
