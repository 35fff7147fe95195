"""Transform time per stage: where astad's cold transformation of a bench program goes.

Run from the repository root:  python bench/stages.py NAME [NAME ...]   (names of programs.PROGRAMS)

For each program: ``astad.clear_caches()``, then the gradient's transformation
(``astad.api.Reverse(fn).derivative(args, argnums)``, as the bench's "transform
cold" column), three times; the fastest run's process time in ms, total and per
stage (parse with the subset check, lower, structural, activity, reverse,
remove_functions, optimise, codegen, compile), and what is left (``other``:
types, the call path, the collector).  The stages are timed by wrapping the
pipeline's functions for this process only.
"""

from __future__ import annotations

import os

os.environ["ASTAD_DISK_CACHE"] = "0"

import functools
import importlib
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

import astad  # noqa: E402
from astad import api, frontend, pipeline  # noqa: E402
from programs import PROGRAMS  # noqa: E402

TIMES: dict[str, float] = {}


def _timed(owner: Any, attr: str, stage: str) -> None:
    f: Callable = getattr(owner, attr)

    @functools.wraps(f)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return f(*args, **kwargs)
        finally:
            TIMES[stage] = TIMES.get(stage, 0.0) + (time.process_time() - start) * 1e3

    setattr(owner, attr, timed)


def _wrap_stages() -> None:
    parse = importlib.import_module("astad.frontend.parse")
    for owner, attr, stage in [
        (parse, "_parse", "parse"), (frontend.Lowerer, "lower_function", "lower"),
        (pipeline.structural, "make_explicit", "structural"), (pipeline.activity, "analyse", "activity"),
        (pipeline.reverse, "reverse", "reverse"), (pipeline.copowers, "remove_functions", "copowers"),
        (pipeline.optimise, "optimise", "optimise"), (pipeline.codegen, "generate", "codegen"),
        (pipeline, "compile_source", "compile"),
    ]:
        _timed(owner, attr, stage)


def stages(name: str, repeat: int = 3) -> tuple[float, dict[str, float]]:
    """The fastest of ``repeat`` cold transformations of ``name``'s gradient: total ms and ms per stage."""
    fn, make_inputs, argnums = PROGRAMS[name]
    args = make_inputs(np.random.default_rng(0))
    wrt = frozenset((argnums,) if isinstance(argnums, int) else argnums)
    runs = []
    for _ in range(repeat):
        TIMES.clear()
        astad.clear_caches()
        start = time.process_time()
        api.Reverse(fn).derivative(args, wrt)
        runs.append(((time.process_time() - start) * 1e3, dict(TIMES)))
    return min(runs, key=lambda run: run[0])


def main(names: list[str]) -> None:
    _wrap_stages()
    for name in names or ["straight_line_500", "tree", "lstm"]:
        total, per_stage = stages(name)
        cells = " ".join(f"{stage}={ms:.0f}" for stage, ms in per_stage.items())
        print(f"{name}: total {total:.0f} ms  {cells}  other={total - sum(per_stage.values()):.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
