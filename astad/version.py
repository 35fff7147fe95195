"""astad's version (its own module: the cache and the generated code read it, and
the package imports them)."""

__version__ = "0.1.0"
