"""Jupyter's rich display of a decorated function (``_repr_html_`` of
:class:`~astad.api.Reverse` and :class:`~astad.api_forward.Forward`): the
generated code, highlighted (pygments when installed, plain text otherwise),
then the IR after each stage, one ``<details>`` each (a stage picker without
JavaScript widgets)."""

from __future__ import annotations

import html
from typing import Any


def highlighted(code: str) -> str:
    """``code`` as HTML, coloured by pygments when it is installed."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return f"<pre>{html.escape(code)}</pre>"
    return highlight(code, PythonLexer(), HtmlFormatter(noclasses=True))


def html_of(obj: Any) -> str:
    """The HTML of a Reverse or Forward: its generated code and every stage's IR
    (for the argument types of its most recent call; its source before one)."""
    title = f"astad.{obj._MODE}({html.escape(obj._parsed.name)})"
    if obj._last is None:
        return (f"<div><b>{title}</b> (not called yet: showing the source; the generated code appears after "
                f"the first call){highlighted(obj._parsed.source)}</div>")
    d = obj._current(())
    types = ", ".join(map(str, d.arg_types))
    stages = "".join(f"<details><summary>IR after the stage <code>{html.escape(stage)}</code></summary>"
                     f"{highlighted(obj.ir(stage))}</details>" for stage in obj.stages)
    return (f"<div><b>{title}</b> at ({html.escape(types)}): generated code{highlighted(d.source)}"
            f"{stages}</div>")
