"""The implementation with one known bug each, for showing that every check has teeth.

One catalog (:data:`CATALOG`, :mod:`fencepost.mutants.catalog`): each bug is one
:class:`Variant` (:mod:`fencepost.mutants.variant`) with one behaviour and one
name, used alike by the refinement check, the scenario runner and
``fencepost sut --mutant``. The bugs themselves are written once each, as merge
rules and publisher subclasses (:mod:`~fencepost.mutants.decisions`), store-call
mixins (:mod:`~fencepost.mutants.stores`) and reader subclasses
(:mod:`~fencepost.mutants.readers`), never by editing ``fencepost.impl``.
"""

from fencepost.mutants.catalog import CATALOG, variant_named
from fencepost.mutants.variant import CORRECT, LEVELS, CompareRule, MergeRule, Variant

__all__ = ["CATALOG", "CORRECT", "LEVELS", "CompareRule", "MergeRule", "Variant", "variant_named"]
