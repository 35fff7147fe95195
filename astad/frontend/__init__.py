"""Frontend: Python source (via libcst) -> typed core IR in A-normal form.

Two steps.  :func:`parse` reads and parses a function's source and checks it
against the supported subset (done at decoration time).  :func:`lower` turns
the parsed function, given the abstract types of its arguments (known at the
first call), into a :class:`~astad.ir.Function`: every intermediate value gets
a ``let``, reassignment makes a new variable, calls to the user's other
functions are inlined, and every primitive's type is inferred from the table.
"""

from .lowering import (_NUMPY_SCALARS, Lowerer, Parsed, abstract, check_subset, clear_parse_cache,
                       drop_dead_temporaries, literal_type, lower, parse)

__all__ = ["Lowerer", "Parsed", "abstract", "check_subset", "clear_parse_cache", "drop_dead_temporaries",
           "literal_type", "lower", "parse"]
