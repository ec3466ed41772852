"""A variant of the implementation: the pieces a run is made of, with at most one known bug.

Every consumer builds its workers from a :class:`Variant` and nothing else, so a
known bug is one definition with one behaviour under one name wherever it runs:

- ``fencepost sut --mutant NAME`` (:mod:`fencepost.sut.adapter`) gives the
  variant's publisher and reader its wire-backed stores, and answers the algebra
  level's ``compare`` and ``merge`` with the variant's rules;
- the scenario runner (:mod:`fencepost.scenarios.impl_runner`) gives them its
  scheduled views of a real store;
- the refinement check (:mod:`fencepost.properties.refinement`) gives them its
  gated stores, in lockstep with the model.

A variant's publisher and reader are the production classes or subclasses of
them (:mod:`fencepost.mutants.decisions`, :mod:`fencepost.mutants.stores`,
:mod:`fencepost.mutants.readers`): they take any store the consumer hands them
and bend one decision or one call, never copying production code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from fencepost.impl.cuts import Cut, compare_cuts
from fencepost.impl.merge import Withheld, merge
from fencepost.impl.orders import Order
from fencepost.impl.publisher import Publisher
from fencepost.impl.reader import PartitionReader
from fencepost.impl.records import Checkpoint, Membership

# The protocol levels a variant can answer (docs/conformance-protocol.md).
from fencepost.vocabulary.conformance import LEVELS as LEVELS

#: The algebra level's ``compare``: -1, 0 or 1 for two cuts of one order.
CompareRule = Callable[[Order, Cut, Cut], int]

#: The algebra level's ``merge`` (and the publisher's, docs/semantics.md section 4).
MergeRule = Callable[[Membership, Sequence[Checkpoint]], Cut | Withheld]


@dataclass(frozen=True)
class Variant:
    """The implementation with at most one known bug; :data:`CORRECT` is fencepost as shipped.

    ``publisher`` and ``reader`` are the classes a consumer instantiates with its
    own stores (same constructor as :class:`~fencepost.impl.publisher.Publisher`
    and :class:`~fencepost.impl.reader.PartitionReader`); ``compare`` and
    ``merge`` answer the algebra level. ``bug`` says what is wrong, in domain
    words, and ``source`` where the bug was seen (docs/field-bugs.md) or which
    rule it misreads. ``caught_by`` maps a protocol level to the names of the
    conformance rules that count as catching the bug when only that level is
    tested; ``shows_as`` names the refinement check's findings that expose it
    (empty when the refinement check cannot see the bug; the catalog says why).
    """

    name: str = "fencepost"
    bug: str = ""
    source: str = ""
    publisher: type[Publisher] = Publisher
    reader: type[PartitionReader] = PartitionReader
    compare: CompareRule = compare_cuts
    merge: MergeRule = merge
    levels: tuple[str, ...] = LEVELS
    caught_by: Mapping[str, frozenset[str]] = field(default_factory=lambda: MappingProxyType({}))
    shows_as: frozenset[str] = frozenset()

    @property
    def changes_workers(self) -> bool:
        """True when the bug is in the publisher or the reader (not only in the algebra's
        answers): the refinement check and the scenario runner can see it."""
        return self.publisher is not Publisher or self.reader is not PartitionReader


CORRECT = Variant()
