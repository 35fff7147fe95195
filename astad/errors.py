"""astad's exceptions: one base class, each error pointing at the user's source."""

from __future__ import annotations

from .ir import Loc


class AstadError(Exception):
    """Base class of every error astad raises on user input."""

    def __init__(self, message: str, loc: Loc | None = None, hint: str | None = None) -> None:
        self.message = message
        self.loc = loc
        self.hint = hint
        super().__init__(self._format())

    def _format(self) -> str:
        parts = []
        if self.loc is not None:
            parts.append(f"{self.loc.file}:{self.loc.line}:{self.loc.col}: {self.message}")
            if self.loc.text:
                line = self.loc.text.rstrip("\n")
                stripped = line.lstrip()
                parts.append(f"    {stripped}")
                caret = max(self.loc.col - 1 - (len(line) - len(stripped)), 0)
                parts.append("    " + " " * caret + "^")
        else:
            parts.append(self.message)
        if self.hint:
            parts.append(f"supported instead: {self.hint}")
        return "\n".join(parts)


class UnsupportedSyntaxError(AstadError):
    """A Python construct outside the subset astad differentiates."""


class UnsupportedFunctionError(AstadError):
    """A call to a function (numpy or other) that astad does not know."""


class AstadTypeError(AstadError):
    """Types or shapes that do not fit (found when the function is first called)."""


class SourceUnavailableError(AstadError):
    """The function's source code cannot be read (REPL, builtin, lambda, ...)."""


class NonScalarOutputError(AstadError):
    """``grad`` of a function whose output is not a real scalar."""


class InternalError(AstadError):
    """A bug in astad itself: please report it with the function that caused it."""


def generated_too_nested(source: str, error: SyntaxError) -> UnsupportedSyntaxError | None:
    """The user's error for generated code that Python refuses as nested too deeply (its
    blocks past CPython's 100 levels of indentation or 20 nested blocks: a long if/elif
    chain nests one ``else: if`` a branch), pointing at the user's line whose code the
    refused line is part of (the ``# line N:`` comment above it); None for any other error."""
    import linecache
    import re

    message = str(error.msg)
    if "too many" not in message or not error.lineno:
        return None
    lines = source.splitlines()
    loc = None
    defined = re.search(r"^# defined at (.*):\d+\.$", source, re.MULTILINE)
    comments = [m for m in (re.match(r"\s*# line (\d+): (\w*)", t) for t in reversed(lines[:error.lineno])) if m]
    headers = [m for m in comments if m.group(2) in ("if", "elif", "else", "for", "while", "with", "def")]
    if defined and (headers or comments):
        file, line = defined.group(1), int((headers or comments)[0].group(1))
        quoted = linecache.getline(file, line)
        loc = Loc(file, line, len(quoted) - len(quoted.lstrip()) + 1, quoted)
    return UnsupportedSyntaxError(
        f"the derivative's code would nest too deeply for Python ({message}); it nests a block "
        "for each `elif` or nested block, here", loc,
        "fewer nested blocks: a long if/elif chain as a lookup (`y = x * scale[k]`) or as "
        "separate `if` statements, each assigning")
