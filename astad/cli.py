"""``astad show-derivative module:func [--mode forward]`` — the generated code, from the shell."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Any, Sequence

from . import cache, pipeline
from .api import reverse
from .api_forward import forward
from .errors import AstadError, AstadTypeError
from .frontend import Parsed
from .ir import BOOL, FLOAT, INT, Num, Type
from .pipeline import FORWARD_STAGES, STAGES, Derivative

_SPEC = re.compile(r"^(f64|f32|float64|float32|int|float|bool)(?:\[([0-9, ]*)\])?$")
_DTYPES = {"f64": "float64", "float64": "float64", "f32": "float32", "float32": "float32", "float": "float64",
           "int": "int64", "bool": "bool"}
_PYTHON = {"float": FLOAT, "int": INT, "bool": BOOL}  # Python scalars (numpy's "weak" types)


class CliError(Exception):
    pass


def arg_type(spec: str) -> Type:
    """The type a spec names: ``float``, ``int``, ``bool``, ``f64``, ``f64[3,4]``, ``f32[10]`` (no array is made)."""
    m = _SPEC.match(spec.strip())
    if m is None:
        raise CliError(f"cannot read the argument type {spec!r}: write e.g. float, int, f64[256,64] or f32[10]")
    kind, dims = m.groups()
    if dims is None and kind in _PYTHON:
        return _PYTHON[kind]
    shape = tuple(int(d) for d in (dims or "").replace(" ", "").split(",") if d)
    return Num(shape, _DTYPES[kind])


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


def _from_annotations(parsed: Parsed) -> list[Type] | None:
    types = []
    for p in parsed.funcdef.params.params:
        ann = p.annotation
        text = ann.annotation.value if ann is not None and hasattr(ann.annotation, "value") else None
        if not isinstance(text, str) or text not in _PYTHON:
            return None
        types.append(_PYTHON[text])
    return types


def derivative(parsed: Parsed, types: Sequence[Type]) -> Derivative:
    """The derivative at ``types`` (from the disk cache when it holds it), as
    ``reverse(fn)(*args)`` builds it for arguments of these types."""
    n = len(parsed.funcdef.params.params)
    if len(types) != n:
        raise AstadTypeError(f"{parsed.name} takes {n} positional arguments, got {len(types)} --arg")
    d = cache.load(parsed, types)
    if d is None:
        d = pipeline.transform(parsed, types)
        cache.store(parsed, types, d)
    return d


def show_forward(target: str, stage: str, arg_specs: Sequence[str]) -> str:
    """Forward mode: the generated JVP code (tangents of every differentiable parameter) or a stage."""
    fwd = forward(load_target(target))
    if arg_specs:
        types: list[Type] | None = [arg_type(s) for s in arg_specs]
    else:
        types = _from_annotations(fwd._parsed)
    if types is None:
        n = len(fwd._parsed.funcdef.params.params)
        raise CliError(f"the argument types of {target} are not known: give one --arg per parameter ({n}), "
                       "e.g. --arg f64[256,64] --arg float --arg int")
    n = len(fwd._parsed.funcdef.params.params)
    if len(types) != n:
        raise AstadTypeError(f"{fwd._parsed.name} takes {n} positional arguments, got {len(types)} --arg")
    d = fwd._full(tuple(types), fwd.all_wrt(types))
    if stage == "source":
        return d.source
    if stage not in FORWARD_STAGES:
        raise CliError(f"forward mode has the stages {', '.join(FORWARD_STAGES)}, not {stage!r}")
    assert d.stages is not None
    return d.stages.text(stage) + "\n"


def show(target: str, stage: str, arg_specs: Sequence[str], mode: str = "reverse") -> str:
    if mode == "forward":
        return show_forward(target, stage, arg_specs)
    if stage == "forward":
        raise CliError("the stage 'forward' is forward mode's: add --mode forward")
    rev = reverse(load_target(target))
    if arg_specs:
        types: list[Type] | None = [arg_type(s) for s in arg_specs]
    elif rev._last is not None:  # the module called it: its types are known
        return rev.source if stage == "source" else rev.ir(stage) + "\n"
    else:
        types = _from_annotations(rev._parsed)
    if types is None:
        n = len(rev._parsed.funcdef.params.params)
        raise CliError(f"the argument types of {target} are not known: give one --arg per parameter ({n}), "
                       "e.g. --arg f64[256,64] --arg float --arg int")
    d = derivative(rev._parsed, types)
    if stage == "source":
        return d.source
    if d.stages is None:
        d.stages = pipeline.run_stages(rev._parsed, d.arg_types, d.wrt)[0]
    return d.stages.text(stage) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="astad", description="astad: automatic differentiation by source "
                                     "transformation")
    sub = parser.add_subparsers(dest="command", required=True)
    sd = sub.add_parser("show-derivative", help="print the generated derivative code (or an IR stage)")
    sd.add_argument("target", help="module:function or path/to/file.py:function")
    sd.add_argument("--mode", choices=("reverse", "forward"), default="reverse",
                    help="reverse mode (the pullback, default) or forward mode (the JVP)")
    sd.add_argument("--stage", choices=("source",) + STAGES + ("forward",), default="source",
                    help="what to print: the generated Python (default) or the IR after a stage")
    sd.add_argument("--arg", action="append", default=[], metavar="TYPE",
                    help="the type of each positional argument, in order: float, int, bool, f64[3,4], f32[10]; "
                         "not needed when the parameters are annotated float/int")
    ns = parser.parse_args(argv)
    try:
        sys.stdout.write(show(ns.target, ns.stage, ns.arg, ns.mode))
    except (AstadError, CliError) as e:
        print(f"astad: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # the user's module failed to import (syntax error, exception at import, ...)
        print(f"astad: cannot import {ns.target}: {type(e).__name__}: {e}".splitlines()[0], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
