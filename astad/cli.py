"""``astad show-derivative module:func`` — the generated code, from the shell."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .api import Reverse, reverse
from .errors import AstadError
from .pipeline import STAGES

_SPEC = re.compile(r"^(f64|f32|float64|float32|int|float|bool)(?:\[([0-9, ]*)\])?$")
_DTYPES = {"f64": "float64", "float64": "float64", "f32": "float32", "float32": "float32", "float": "float64",
           "int": "int64", "bool": "bool"}


class CliError(Exception):
    pass


def example_arg(spec: str) -> Any:
    """An example value of the type a spec names: ``float``, ``int``, ``f64[3,4]``, ``f32[10]``."""
    m = _SPEC.match(spec.strip())
    if m is None:
        raise CliError(f"cannot read the argument type {spec!r}: write e.g. float, int, f64[256,64] or f32[10]")
    kind, dims = m.groups()
    if dims is None:
        return {"float": 0.5, "int": 1, "bool": True}.get(kind, np.ones((), _DTYPES[kind]))
    shape = tuple(int(d) for d in dims.replace(" ", "").split(",") if d)
    return np.ones(shape, _DTYPES[kind])


def load_target(target: str) -> Any:
    """The object named by ``module:func`` or ``path/to/file.py:func``."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise CliError(f"expected module:function or path/to/file.py:function, got {target!r}")
    if where.endswith(".py") or os.sep in where or "/" in where:
        path = Path(where).resolve()
        if not path.is_file():
            raise CliError(f"no such file: {where}")
        sys.path.insert(0, str(path.parent))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        module = importlib.import_module(where)
    if not hasattr(module, name):
        raise CliError(f"{where} has no attribute {name!r}")
    return getattr(module, name)


def _from_annotations(rev: Reverse) -> list[Any] | None:
    args = []
    for p in rev._parsed.funcdef.params.params:
        ann = p.annotation
        text = ann.annotation.value if ann is not None and hasattr(ann.annotation, "value") else None
        if not isinstance(text, str) or text not in ("float", "int", "bool"):
            return None
        args.append(example_arg(text))
    return args


def show(target: str, stage: str, arg_specs: Sequence[str]) -> str:
    rev = reverse(load_target(target))
    if arg_specs:
        args: list[Any] | None = [example_arg(s) for s in arg_specs]
    elif rev._last is not None:
        args = []
    else:
        args = _from_annotations(rev)
        if args is None:
            n = len(rev._parsed.funcdef.params.params)
            raise CliError(f"the argument types of {target} are not known: give one --arg per parameter ({n}), "
                           "e.g. --arg f64[256,64] --arg float --arg int")
    if stage == "source":
        return rev.transform(*args).source if args else rev.source
    return rev.ir(stage, *args) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="astad", description="astad: automatic differentiation by source "
                                     "transformation")
    sub = parser.add_subparsers(dest="command", required=True)
    sd = sub.add_parser("show-derivative", help="print the generated derivative code (or an IR stage)")
    sd.add_argument("target", help="module:function or path/to/file.py:function")
    sd.add_argument("--stage", choices=("source",) + STAGES, default="source",
                    help="what to print: the generated Python (default) or the IR after a stage")
    sd.add_argument("--arg", action="append", default=[], metavar="TYPE",
                    help="the type of each positional argument, in order: float, int, bool, f64[3,4], f32[10]; "
                         "not needed when the parameters are annotated float/int")
    ns = parser.parse_args(argv)
    try:
        sys.stdout.write(show(ns.target, ns.stage, ns.arg))
    except (AstadError, CliError) as e:
        print(f"astad: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # the user's module failed to import (syntax error, exception at import, ...)
        print(f"astad: cannot import {ns.target}: {type(e).__name__}: {e}".splitlines()[0], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
