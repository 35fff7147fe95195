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
