"""The implementation with one known bug each, for showing that every check has teeth.

One catalog (:data:`CATALOG`, :mod:`fencepost.mutants.catalog`): each bug is one
:class:`Variant` (:mod:`fencepost.mutants.variant`) with one behaviour and one
name, used alike by the refinement check, the scenario runner and
``fencepost sut --mutant``. The bugs themselves are written once each, as merge
rules and publisher subclasses (:mod:`~fencepost.mutants.decisions`), store-call
mixins (:mod:`~fencepost.mutants.stores`) and reader subclasses
(:mod:`~fencepost.mutants.readers`), never by editing ``fencepost.impl``.

The catalog (and the bugs' modules) load on first use of :data:`CATALOG` or
:func:`variant_named`: ``fencepost sut`` without ``--mutant`` needs only
:data:`CORRECT`, and is started once per process the conformance harness runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fencepost.mutants.variant import CORRECT, LEVELS, CompareRule, MergeRule, Variant

if TYPE_CHECKING:
    from fencepost.mutants.catalog import CATALOG, variant_named

__all__ = ["CATALOG", "CORRECT", "LEVELS", "CompareRule", "MergeRule", "Variant", "variant_named"]


def __getattr__(name: str) -> Any:
    if name in ("CATALOG", "variant_named"):
        from fencepost.mutants import catalog

        return getattr(catalog, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
