"""Known bugs the model can switch on, one at a time, to show the invariants have teeth.

Each mutant changes exactly one decision inside the model's transitions (the
places are marked ``mutant ==`` in :mod:`fencepost.model.machine`). The default
bounds of every part listed in :attr:`Mutant.expected` reach a counterexample
that breaks the named invariant; tests/model pins that.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Mutant:
    """A deliberately broken variant of the protocol.

    ``expected`` pairs each part whose transitions the bug lives in with the
    invariant its shortest counterexample breaks there.
    """

    name: str
    description: str
    field_bug: str
    expected: tuple[tuple[str, str], ...]

    @property
    def parts(self) -> tuple[str, ...]:
        """The parts whose transitions this mutant changes."""
        return tuple(part for part, _ in self.expected)


_ALL = (
    Mutant(
        "relabel",
        "the merge takes the smallest coordinate and labels it 'through' when any partition "
        "certified 'through' there, so before x published as through x when coordinates tie",
        "cockroach PR #41665 (resolved timestamp emitted before the rows at it)",
        (("publication", "no_relabeling"),),
    ),
    Mutant(
        "skip-missing",
        "partitions without a checkpoint are left out of the minimum instead of withholding",
        "FLINK-40094 / pingcap/tiflow #12598 (a minimum over the partitions that reported)",
        (("publication", "soundness"),),
    ),
    Mutant(
        "max-observed",
        "the ingest pass certifies 'through' the largest event it observed instead of the "
        "provider's final claim",
        "docs/semantics.md section 3: the largest event observed is never coverage",
        (("ingest", "checkpoint_truth"),),
    ),
    Mutant(
        "epsilon",
        "the merge normalizes 'through x' to 'before x+1' on an order without an exact "
        "successor (a manufactured successor)",
        "cockroach #82488 / Debezium DBZ-5915 (inclusive and exclusive confused)",
        (("publication", "soundness"),),
    ),
    Mutant(
        "blind-success",
        "a lost write response is taken as success: the attempt reports 'published' without "
        "an acknowledgement or an authoritative read",
        "amazon-kinesis-client #108 (the inverse: a success reported as failure)",
        (("publication", "lost_response_honesty"),),
    ),
    Mutant(
        "stale-cut-retry",
        "after a conflict the retry writes its old cut with the new revision, without "
        "rereading checkpoints or recomputing",
        "apache/beam #36470 (reordered watermark writes moved a watermark backwards)",
        (("publication", "monotone_publication"),),
    ),
    Mutant(
        "epoch-blind",
        "the merge ignores checkpoint epochs: each member's newest checkpoint from any epoch "
        "is used and the epoch field is not checked",
        "pingcap/tiflow #12598 (old coverage reused after the partition set changed)",
        (("publication", "soundness"),),
    ),
    Mutant(
        "provisional-ok",
        "non-final claims are accepted: the ingest pass certifies a provider's non-final "
        "claim and the merge accepts provisional checkpoints",
        "apache/beam #37326 (an unprocessed end timestamp was claimed)",
        (("ingest", "checkpoint_truth"), ("publication", "soundness")),
    ),
    Mutant(
        "scope-blind",
        "the merge accepts checkpoints certified for another query scope",
        "docs/semantics.md section 4 (scope_mismatch)",
        (("publication", "soundness"),),
    ),
    Mutant(
        "overwrite",
        "an ingest write that lost its generation race retries with the stored generation "
        "and its old cut, so a late retry overwrites a newer checkpoint",
        "amazon-kinesis-client #537 / cockroach PR #37009 (a stale high-water overwrote a "
        "newer one)",
        (("ingest", "checkpoint_monotonicity"),),
    ),
    Mutant(
        "cutover-regress",
        "under the monotone policy the record cuts over to a new epoch whose merged cut is "
        "below the current one",
        "pingcap/tiflow #12598 (a minimum over a grown set is not monotone)",
        (("publication", "monotone_publication"),),
    ),
    Mutant(
        "fence-blind",
        "when the authoritative reread after a lost response shows a newer epoch, the "
        "publisher retries in the epoch it already holds instead of applying the cutover "
        "rule",
        "KAFKA-20357 / Materialize #29432 (a lower epoch written over a higher one)",
        (("publication", "epoch_fence"),),
    ),
)

#: name -> mutant, in a stable order.
MUTANTS: dict[str, Mutant] = {m.name: m for m in _ALL}
