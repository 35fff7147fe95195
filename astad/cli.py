"""``astad show-derivative module:func [--arg TYPE ...] [--mode forward]`` — the generated code, from the shell.

The parameters' types come from ``--arg`` (by position, or ``NAME=TYPE``; see
:mod:`astad.cli_types` for the syntax) and, for the parameters no ``--arg``
names, from their annotations or defaults (:mod:`astad.cli_annotations`).
Exit status: 0, 1 when astad cannot differentiate the function (its message
points at the source), 2 for a usage error (target, ``--arg``, annotation).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from . import cache, pipeline
from .api import Reverse, reverse
from .api_forward import forward
from .cli_annotations import annotated_type
from .cli_types import EXAMPLES, CliError, Described, arg_type, read_type, split_named
from .errors import AstadError, SourceUnavailableError
from .frontend import Parsed
from .ir import Type
from .pipeline import FORWARD_STAGES, STAGES, Derivative

__all__ = ["CliError", "arg_type", "derivative", "load_target", "main", "param_types", "show"]


def load_target(target: str) -> Any:
    """The object named by ``module:func`` or ``path/to/file.py:func`` (``func`` may be dotted: ``Class.method``)."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise CliError(f"expected module:function or path/to/file.py:function, got {target!r}")
    try:
        with contextlib.redirect_stdout(sys.stderr):  # what the module prints when imported is not the code shown
            module = _import(where)
    except CliError:
        raise
    except Exception as e:  # the user's module failed to import (syntax error, exception at import, ...)
        raise CliError(f"cannot import {target}: {type(e).__name__}: {e}".splitlines()[0]) from None
    except SystemExit as e:  # (its code would have been astad's exit status, with no message)
        raise CliError(f"cannot import {target}: the module called sys.exit({e.code!r}) when imported") from None
    found = module
    for part in name.split("."):  # module:Class.method, say
        if not hasattr(found, part):
            raise CliError(f"{where} has no attribute {name!r}")
        found = getattr(found, part)
    if not callable(found):  # (its repr may be long, over many lines: the message is one line)
        raise SourceUnavailableError(f"cannot differentiate {target}: it is not a function (its type: "
                                     f"{type(found).__name__})", hint="a function defined with `def` in a .py file")
    return found


def _import(where: str) -> Any:
    if where.endswith(".py") or os.sep in where or "/" in where:
        path = Path(where).resolve()
        if not path.is_file():
            raise CliError(f"no such file: {where}")
        sys.path.insert(0, str(path.parent))
        # (a file named like a module already imported, ast.py or json.py, must not replace it: astad uses it)
        name = path.stem if path.stem not in sys.modules else f"_astad_file_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise CliError(f"not a Python file: {where} (name it NAME.py, or give module:function)")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    sys.path.insert(0, os.getcwd())
    return importlib.import_module(where)


def param_types(rev: Reverse, specs: Sequence[str]) -> tuple[list[Type], dict[str, list[str]]]:
    """One type per parameter a call fills (positional, then keyword-only): from
    ``specs`` (by position in order, or ``NAME=TYPE``), else from the
    parameter's annotation or default.  Also the run-time sizes named, and where."""
    names = [p.name.value for p in rev._parsed.params]
    fn_name = rev._parsed.name
    given: dict[str, Described] = {}
    unnamed: list[str] = []
    for spec in specs:
        name, text = split_named(spec)
        if name is None:
            unnamed.append(text)
        elif name not in names:
            raise CliError(f"--arg {spec!r}: {fn_name} has no parameter {name!r} (its parameters: "
                           f"{', '.join(names) or 'none'})")
        elif name in given:
            raise CliError(f"--arg {spec!r}: the type of {name!r} is given twice")
        else:
            given[name] = read_type(text, name)
    free = [n for n in names if n not in given]
    if len(unnamed) > len(free):
        raise CliError(f"{fn_name} takes {len(names)} arguments ({', '.join(names)}), got {len(specs)} --arg")
    for name, text in zip(free, unnamed):
        given[name] = read_type(text, name)
    missing = []
    for name in names:
        if name not in given:
            found = annotated_type(rev.__astad_function__, name)
            if found is None:
                missing.append(name)
            else:
                given[name] = found
    if missing:
        raise CliError(f"the type of {', '.join(f'`{m}`' for m in missing)} of {fn_name} is not known: annotate "
                       f"it, or give --arg {missing[0]}=TYPE (TYPE e.g. {EXAMPLES})")
    sizes: dict[str, list[str]] = {}
    for name in names:
        for size, places in given[name].sizes.items():
            sizes.setdefault(size, []).extend(places)
    return [given[n].type for n in names], sizes


def derivative(parsed: Parsed, types: Sequence[Type]) -> Derivative:
    """The derivative at ``types`` (from the disk cache when it holds it), as
    ``reverse(fn)(*args)`` builds it for arguments of these types."""
    n = len(parsed.params)
    if len(types) != n:
        raise CliError(f"{parsed.name} takes {n} arguments, got {len(types)} types")
    d = cache.load(parsed, types)
    if d is None:
        d = pipeline.transform(parsed, types)
        cache.store(parsed, types, d)
    return d


def _sizes_note(source: str, sizes: dict[str, list[str]]) -> str:
    """The source with a comment after its header naming the run-time sizes (the code is polymorphic in them)."""
    if not sizes:
        return source
    lines = source.splitlines(keepends=True)
    head = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    named = "; ".join(f"{n}: {', '.join(places)}" for n, places in sizes.items())
    note = f"# Sizes known at run time ({named}): the code is shape-polymorphic in them.\n"
    return "".join(lines[:head]) + note + "".join(lines[head:])


def show_forward(target: str, stage: str, arg_specs: Sequence[str]) -> str:
    """Forward mode: the generated JVP code (tangents of every differentiable parameter) or a stage."""
    if stage != "source" and stage not in FORWARD_STAGES:
        raise CliError(f"forward mode has the stages {', '.join(FORWARD_STAGES)}, not {stage!r}")
    fwd = forward(load_target(target))
    types, sizes = param_types(fwd, arg_specs)
    d = fwd._full(tuple(types), fwd.all_wrt(types))
    if stage == "source":
        return _sizes_note(d.source, sizes)
    assert d.stages is not None
    return d.stages.text(stage) + "\n"


def show(target: str, stage: str, arg_specs: Sequence[str], mode: str = "reverse") -> str:
    """The generated code (``stage='source'``) or the IR after a stage, as text."""
    if mode == "forward":
        return show_forward(target, stage, arg_specs)
    if stage == "forward":
        raise CliError("the stage 'forward' is forward mode's: add --mode forward")
    rev = reverse(load_target(target))
    if not arg_specs and rev._last is not None:  # the module called it: its types are known
        return rev.source if stage == "source" else rev.ir(stage) + "\n"
    types, sizes = param_types(rev, arg_specs)
    d = derivative(rev._parsed, types)
    if stage == "source":
        return _sizes_note(d.source, sizes)
    if d.stages is None:
        d.stages = pipeline.stages_of(rev._parsed, d.arg_types, d.wrt, d.deps)
    return d.stages.text(stage) + "\n"


def highlighted(text: str, color: str) -> str:
    """``text`` with terminal colours (pygments) when ``color`` is 'always', or 'auto' on a terminal."""
    if color == "never" or (color == "auto" and (not sys.stdout.isatty() or os.environ.get("NO_COLOR"))):
        return text
    try:
        from pygments import highlight
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        if color == "always":
            print("astad: --color always needs pygments (pip install 'astad[highlight]'): printing plain text",
                  file=sys.stderr)
        return text
    return highlight(text, PythonLexer(), TerminalFormatter())


ARG_HELP = f"""\
the type of a parameter: TYPE (the parameters in order) or NAME=TYPE. TYPE is
  float | int | bool                 Python scalars
  f64 | f32 | int64 | int32          numpy scalars (also float64, float32, i64, i32)
  f64[256,64] | f32[n,3] | int[5]    arrays; a letter is a size known at run time
                                     (the code is shape-polymorphic in it)
  {{W: f64[3,4], b: f64[4]}}           a dict (keys: names, 'strings' or numbers)
  (f64, f64[3]) | tuple(f64, f64[3]) a tuple
  [f64[3], f64] | [f64[3]]*5         a list (*5: five of them)
Parameters no --arg names take their type from their annotation (float, int,
bool, np.float64, jaxtyping Float64[np.ndarray, "n 64"] (Float: float64),
tuple[...], NamedTuple, TypedDict) or their default value. E.g.: {EXAMPLES}"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="astad", description="astad: automatic differentiation by source "
                                     "transformation")
    sub = parser.add_subparsers(dest="command", required=True)
    sd = sub.add_parser("show-derivative", help="print the generated derivative code (or an IR stage)",
                        formatter_class=argparse.RawTextHelpFormatter,
                        description="Print the derivative astad generates for a function.",
                        epilog="examples:\n  astad show-derivative model.py:loss\n"
                               "  astad show-derivative model:loss --arg 'x=f64[n,64]' --arg 'params={W: f64[64,10], "
                               "b: f64[10]}'\n  astad show-derivative model:loss --mode forward --stage optimised\n"
                               "exit status: 0; 1 when the function cannot be differentiated; 2 for a usage error")
    sd.add_argument("target", help="module:function or path/to/file.py:function")
    sd.add_argument("--mode", choices=("reverse", "forward"), default="reverse",
                    help="reverse mode (the pullback, default) or forward mode (the JVP)")
    sd.add_argument("--stage", choices=("source",) + tuple(dict.fromkeys(STAGES + FORWARD_STAGES)), default="source",
                    help="what to print: the generated Python (default) or the IR after a stage")
    sd.add_argument("--arg", action="append", default=[], metavar="[NAME=]TYPE", help=ARG_HELP)
    sd.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                    help="colour the output (pygments): on a terminal (auto, unless NO_COLOR is set), always, never")
    ns = parser.parse_args(argv)
    try:
        text = show(ns.target, ns.stage, ns.arg, ns.mode)
    except CliError as e:
        print(f"astad: {e}", file=sys.stderr)
        return 2
    except AstadError as e:
        print(f"astad: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(highlighted(text, ns.color))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
