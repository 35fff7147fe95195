"""The call table's family of elementwise numpy functions and ufuncs (and `math` functions mapped to them): each entry maps a name a user calls
to the primitive(s) it lowers to (see :mod:`.api_specs` for the spec makers)."""

from __future__ import annotations

from typing import Any, Callable

from .api_specs import ApiSpec

#: numpy functions by name (as ``np.<name>``), merged into ``numpy_api.API``
FUNCTIONS: dict[str, Callable[[str], ApiSpec]] = {}
#: array methods by name (``x.<name>()``), merged into ``numpy_api.METHODS``
METHODS: dict[str, Callable[[str], ApiSpec]] = {}
#: builtins by object (looked up by identity), merged into ``numpy_api.BUILTINS``
BUILTINS: dict[Any, ApiSpec] = {}
