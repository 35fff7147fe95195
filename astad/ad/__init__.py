"""The AD macros, one module each, one rule per IR construct:
:mod:`astad.ad.reverse` (CHAD's reverse macro) and :mod:`astad.ad.forward`
(its forward-mode mirror image)."""
