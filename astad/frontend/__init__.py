"""Frontend: Python source (via libcst) -> typed core IR in A-normal form.

Two steps.  :func:`parse` reads and parses a function's source and checks it
against the supported subset (done at decoration time).  :func:`lower` turns
the parsed function, given the abstract types of its arguments (known at the
first call), into a :class:`~astad.ir.Function`: every intermediate value gets
a ``let``, reassignment makes a new variable, calls to the user's other
functions are inlined, and every primitive's type is inferred from the table.

The modules, in the order a function goes through them:

- :mod:`.parse`: the source, parsed and checked against the subset; positions
  (:mod:`.from_ast` and :mod:`.from_ast_expr` make libcst's nodes and their
  positions from Python's parser, libcst's parser reads what they do not know);
  :mod:`.syntax`: facts about the syntax tree the other modules ask for;
- :mod:`.abstract`: the abstract types of arguments and literals;
- :mod:`.lowerer`: the :class:`Lowerer`, assembled from one class per room:
  :mod:`.core` (its state and shared steps), :mod:`.statements`,
  :mod:`.conditionals`, :mod:`.loops`, :mod:`.expressions`, :mod:`.indexing`,
  :mod:`.calls` (with the table of numpy functions in :mod:`.numpy_api`) and
  :mod:`.lookup` (names, globals, constants); :mod:`.scopes` holds what it
  knows of names while it runs.
"""

from .abstract import _NUMPY_SCALARS, abstract, literal_type  # noqa: F401 (_NUMPY_SCALARS: api.py's cache keys)
from .lowerer import Lowerer, drop_dead_temporaries, lower
from .parse import Parsed, check_subset, clear_parse_cache, parse

__all__ = ["Lowerer", "Parsed", "abstract", "check_subset", "clear_parse_cache", "drop_dead_temporaries",
           "literal_type", "lower", "parse"]
