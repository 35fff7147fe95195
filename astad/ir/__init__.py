"""The IR shared by every stage: types, atoms, computations, blocks.

A small typed λ-calculus in A-normal form.  A :class:`Block` is a sequence of
:class:`Bind` (``let targets = rhs``) followed by a result atom.  The same
data structures carry the core IR (from the frontend), the core IR with
explicit ``dup``/``drop`` (structural pass), and the target IR produced by the
AD macro, which adds linear operations (cotangent ``zero``, ``plus``) as
ordinary primitives from the same table.

:mod:`.types` holds the types, :mod:`.nodes` the syntax, :mod:`.walk` the
walks over it, :mod:`.interp` an interpreter (imported on its own: it reads the
primitive table).
"""

from .types import (BOOL, CopowerT, Dim, FLOAT, FunT, INT, ListT, NoneT, Num, StructT, TupleT, Type,
                    is_scalar, leaf_counts, tuple_items)
from .nodes import (App, AppBack, Atom, Bind, Block, CaseCopower, Comp, Const, Copower, Copy, Drop, Dup,
                    Function, If, KeyFunction, Lam, Loc, Loop, LoopBack, MakeTuple, Plus, Prim, ReverseProgram, Unpack,
                    Var, Zero, nested_blocks, trip_count)
from .walk import (all_binds, as_var, atoms_of, bound_names, bound_set, bound_var_names, bound_vars,
                   free_vars, function_values, if_free_vars, kinds, lam_free_vars, loop_free_vars, map_atoms,
                   map_block, read_names, read_set, substitute, substitute_block, use_counts, vars_of)

__all__ = ["App", "AppBack", "Atom", "BOOL", "Bind", "Block", "CaseCopower", "Comp", "Const", "Copower",
           "CopowerT", "Copy", "Dim", "Drop", "Dup", "FLOAT", "FunT", "Function", "INT", "If", "KeyFunction", "Lam",
           "ListT", "Loc", "Loop", "LoopBack", "MakeTuple", "NoneT", "Num", "Plus", "Prim", "ReverseProgram",
           "StructT", "TupleT", "Type", "Unpack", "Var", "Zero", "all_binds", "as_var", "atoms_of",
           "bound_names", "bound_set", "bound_var_names", "bound_vars", "free_vars", "function_values",
           "if_free_vars", "is_scalar", "kinds", "lam_free_vars", "leaf_counts", "loop_free_vars", "map_atoms",
           "map_block", "nested_blocks", "read_names", "read_set", "substitute", "substitute_block",
           "trip_count", "tuple_items", "use_counts", "vars_of"]
