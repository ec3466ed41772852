"""The known bugs, by one name each: what is wrong and where it was seen.

A mutant is one bug with one name wherever it runs: the model's mutants
(:mod:`fencepost.model.mutants`, switched on inside the model's transitions),
the implementation's catalog (:mod:`fencepost.mutants.catalog`, the production
classes with one decision bent), the Z3 protocol relation
(:mod:`fencepost.properties.protocol_publishers` and ``protocol_readers``) and
the scenario library's ``variant``. Each home builds the bug its own way; the
name, the bug text and the source are these. ``in_model`` says whether the
model and the Z3 relation carry it (the others exist only on the
implementation side: the model has no wire, no reasons order and no compare).

tests/vocabulary/test_totality.py fails while a name lacks a home. Cost:
constants only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class MutantName:
    """One known bug: its name, what is wrong in domain words, where it was seen
    (docs/field-bugs.md) or which rule it misreads, and whether the model has it."""

    name: str
    bug: str
    source: str
    in_model: bool = True


_ALL = (
    MutantName(
        "relabel",
        "the merge labels the minimum 'through x' when some member certified 'through x' "
        "and another only 'before x' (the coordinates matched)",
        "cockroach PR #41665 (resolved timestamp emitted before the rows at it)",
    ),
    MutantName(
        "skip-missing",
        "the merge leaves members without a checkpoint out of the minimum instead of "
        "withholding missing_checkpoint",
        "FLINK-40094 / pingcap/tiflow #12598 (a minimum over the partitions that reported)",
    ),
    MutantName(
        "max-observed",
        "the ingest pass certifies 'through' the greatest event it observed instead of the "
        "provider's final claim",
        "docs/semantics.md section 3: the greatest event observed is never coverage",
    ),
    MutantName(
        "epsilon",
        "the merge normalizes 'through x' to 'before x+1' on an order without an exact "
        "successor (a manufactured successor)",
        "cockroach #82488 / Debezium DBZ-5915 (inclusive and exclusive confused)",
    ),
    MutantName(
        "blind-success",
        "a lost write response is taken as success: the attempt reports 'published' without "
        "an acknowledgement or an authoritative read",
        "amazon-kinesis-client #108 (the inverse: a success reported as failure)",
    ),
    MutantName(
        "stale-cut-retry",
        "after a conflict the attempt writes its old cut on the new revision without "
        "rereading the checkpoints or recomputing",
        "apache/beam #36470 (reordered watermark writes moved a watermark backwards)",
    ),
    MutantName(
        "epoch-blind",
        "the epoch of a checkpoint is never checked: a member keeps the newest checkpoint "
        "read in any epoch",
        "pingcap/tiflow #12598 / Materialize #29432 (old coverage reused after the "
        "partition set changed)",
    ),
    MutantName(
        "provisional-ok",
        "non-final claims are trusted: the ingest pass certifies a provider's non-final "
        "claim and the merge accepts provisional checkpoints",
        "apache/beam #37326 (an unprocessed end timestamp was claimed)",
    ),
    MutantName(
        "scope-blind",
        "the merge accepts checkpoints certified for another query scope",
        "docs/semantics.md section 4 (scope_mismatch)",
    ),
    MutantName(
        "overwrite",
        "a checkpoint write that lost its generation race is written again on top of the "
        "newer checkpoint: last writer wins",
        "amazon-kinesis-client #537 / cockroach PR #37009 (a stale high-water overwrote a "
        "newer one)",
    ),
    MutantName(
        "cutover-regress",
        "under the monotone policy the record cuts over to a new epoch whose merged cut is "
        "below the current one",
        "pingcap/tiflow #12598 (a minimum over a grown set is not monotone)",
    ),
    MutantName(
        "fence-blind",
        "when the reread after a lost write shows a newer epoch, the attempt keeps the "
        "membership it held and retries in the old epoch",
        "KAFKA-20357 / Materialize #29432 (a lower epoch written over a higher one)",
    ),
    MutantName(
        "confirm-revision",
        "after a lost write, a moved revision alone is taken as proof that the claim is present",
        "Materialize PR #14003",
        in_model=False,
    ),
    MutantName(
        "reason-order",
        "the merge checks scope before epoch: with both wrong it reports scope_mismatch",
        "docs/semantics.md section 4 (the order of the reasons)",
        in_model=False,
    ),
    MutantName(
        "compare-swap",
        "every comparison of cuts reads 'before' as 'through' and 'through' as 'before'",
        "docs/semantics.md section 2",
        in_model=False,
    ),
)

#: name -> the known bug, in a stable order.
MUTANTS: Mapping[str, MutantName] = MappingProxyType({m.name: m for m in _ALL})
