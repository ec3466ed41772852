"""How a publication attempt ends, and why a frontier is withheld (docs/semantics.md
sections 4-6).

The implementation (:class:`fencepost.impl.publisher.Outcome`,
:class:`fencepost.impl.merge.WithheldReason`), the judge
(:class:`fencepost.judge.merge.WithheldReason`), the model
(:mod:`fencepost.model.state`), the Z3 relation
(:mod:`fencepost.properties.protocol_state`) and the wire
(:mod:`fencepost.harness.protocol`) each decide when an outcome or a reason
applies; the names, and the order the reasons are checked in, are these.
tests/vocabulary/test_totality.py checks every home spells exactly them.
Cost: constants only.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: attempt outcome -> when an attempt ends with it (section 5).
OUTCOMES: Mapping[str, str] = MappingProxyType(
    {
        "published": "its conditional write was acknowledged",
        "confirmed": "after a lost response, an authoritative read showed the claim present",
        "unchanged": "the merged cut is not ahead of the record in the same epoch",
        "withheld": "the merge gave no cut (with the first reason), or a cutover is pending",
        "gave_up": "conflicts or lost responses persisted past the attempt's retry budget",
    }
)

#: withheld reason -> what it means, the merge's in the order they are checked
#: (section 4), then the publisher's ``cutover_pending`` (section 6).
WITHHELD_REASONS: Mapping[str, str] = MappingProxyType(
    {
        "missing_checkpoint": "some member of the membership has no checkpoint",
        "epoch_mismatch": "some checkpoint's epoch is not the membership's",
        "scope_mismatch": "some checkpoint's scope is not the membership's",
        "unsupported_finality": "some checkpoint's finality is not final",
        "incomparable": "the members' orders differ (the vector is kept and returned)",
        "no_coverage": "the minimum is nothing (or the membership has no members)",
        "cutover_pending": (
            "under the monotone policy, the new epoch's merged cut is still below the record"
        ),
    }
)

#: Reasons the model and the Z3 relation do not have, and why.
WITHOUT_MODEL_REASON: Mapping[str, str] = MappingProxyType(
    {"incomparable": "the model's members share one order, so no two orders can differ"}
)
