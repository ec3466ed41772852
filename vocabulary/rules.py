"""What must always hold, and what the messages must obey: every rule the house names.

Three closed sets, each name with its one-line meaning (what breaking it means,
in domain words; reports show it beside the name):

- :data:`PROPERTIES`: docs/semantics.md section 7, plus ``checkpoint_truth`` and
  ``certified_support`` that make it checkable from outside an implementation.
  A property is a statement about durable state and ground truth that must
  hold after every step.
- :data:`ROW_PROPERTIES`: the sync level's properties (docs/conformance-protocol.md,
  "Level sync"): rows lost, duplicated, coverage overclaimed.
- :data:`PROTOCOL_RULES`: rules about the messages themselves. ``honest_outcome``
  and ``ingest_report`` are protocol rules: they judge what an attempt's reply
  *says* against what the attempt was told, not the durable state (the judge
  checks them beside the properties; docs/conformance.md's table says
  "protocol" for both).

Meanings live here once; the judge (:mod:`fencepost.judge.properties`,
:mod:`fencepost.judge.rows`) and the harness (:mod:`fencepost.harness.rules`)
read them. What a rule *decides* stays in each home. Cost: constants only.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: property -> what breaking it means.
PROPERTIES: Mapping[str, str] = MappingProxyType(
    {
        "soundness": (
            "the publication record (e, c) claims an event of a member of epoch e whose "
            "position is in D(c) but which is not final or has no durable terminal outcome"
        ),
        "no_relabeling": (
            "a 'through x' was published while some member had certified only 'before x': "
            "the endpoint kind was relabeled because the coordinates matched"
        ),
        "certified_support": (
            "a published cut is ahead of what some member of its epoch ever certified in a "
            "final checkpoint of that epoch and scope (a claim nobody certified)"
        ),
        "monotone_publication": (
            "the record's cut decreased within an epoch, or at a cutover under the monotone policy"
        ),
        "epoch_fence": "the record's epoch decreased: a claim for an older epoch was written",
        "checkpoint_truth": (
            "an accepted final checkpoint is not true: the provider never made a final claim "
            "covering its cut, an event in its downset has no recorded outcome, its labels "
            "(partition, epoch, scope) are not those of the ingest, or its token was never "
            "issued"
        ),
        "checkpoint_monotonicity": (
            "a partition's stored cut decreased within one (partition, epoch) key: a late "
            "retry overwrote a newer checkpoint"
        ),
        "lost_response_honesty": (
            "'published' without an acknowledged write in this attempt, or 'confirmed' "
            "without a read in this attempt, after the lost write, that showed the claim "
            "present"
        ),
    }
)

#: Properties the model states no invariant for, and why (the totality test reads this).
WITHOUT_MODEL_INVARIANT: Mapping[str, str] = MappingProxyType(
    {
        "certified_support": (
            "the model knows every certification, so no_relabeling and soundness state "
            "the same guarantee directly; certified_support is their form checkable from "
            "outside an implementation"
        ),
    }
)

#: the sync level's properties -> what breaking each means.
ROW_PROPERTIES: Mapping[str, str] = MappingProxyType(
    {
        "no_lost_rows": (
            "after the world quiesced and the tool ran to completion, a row of the source "
            "has no copy in the destination: the pipeline lost it for good"
        ),
        "honest_coverage": (
            "the tool's state claimed coverage of a row the destination did not hold when "
            "the claim was made (a row that commits later counts): a tool resuming from "
            "that claim never reads the row"
        ),
        "exactly_once": (
            "the tool declared exactly-once delivery, and the destination holds a row more "
            "than once"
        ),
    }
)

#: protocol rule -> what breaking it means, in report order (the most serious first).
PROTOCOL_RULES: Mapping[str, str] = MappingProxyType(
    {
        "honest_outcome": (
            "the attempt's outcome does not follow from what it was told: 'unchanged' while "
            "the merge of its latest view (the latest record it was shown, by a read, a "
            "conflict or an acknowledged write, and its latest membership and checkpoint "
            "reads) was ahead of that record, 'withheld' with a reason other than the first "
            "documented one, 'gave_up' without any conflict or lost response, or "
            "publish_ok's epoch/cut not those of that record"
        ),
        "ingest_report": "ingest_ok reports a cut ahead of the checkpoint the store holds",
        "algebra_compare": "compare_ok disagrees with the downset order of the two cuts",
        "algebra_merge": (
            "merge_ok disagrees with the merge of docs/semantics.md section 4: a different "
            "claim, or a different withheld reason (reasons are checked in the documented "
            "order)"
        ),
        "op_id_reuse": (
            "a write carries an op_id already used by another attempt: writer attribution breaks"
        ),
        "opaque_token": (
            "fetch_page named a token the provider never issued for this partition and epoch"
        ),
        "query_granularity": (
            "a sync query bound names a value the source cannot express (not a multiple of "
            "its granularity), as an API refuses a timestamp finer than it takes"
        ),
        "query_token": (
            "a sync query continues with a token the source never issued, or one issued for "
            "another query (another partition or other bounds)"
        ),
        "invented_row": "a commit names a row id the source never returned to any query",
        "call_pairing": (
            "a message does not belong where it arrived: a reply with the wrong id, a call "
            "of another level, another stream or partition, or an unsolicited message"
        ),
        "message_schema": (
            "a message is not well formed: not JSON, an unknown or missing field, a wrong type"
        ),
        "error_handling": (
            "the SUT did not answer an unparsable message with an error message and keep running"
        ),
        "sut_error": "the SUT answered a well-formed message with an error",
        "runaway": "one request made more store or provider calls than the harness allows",
        "handshake": "the SUT did not answer hello with hello_ok for protocol 1",
        "line_too_long": "the SUT wrote a line longer than the protocol's line limit",
        "sut_hang": "the SUT did not answer within the per-call time limit",
        "sut_crash": "the SUT process exited or closed its output while an answer was due",
        "shutdown": "the SUT did not exit with status 0 after shutdown",
        "reset": (
            "a SUT that declared the reset capability did not answer reset with reset_ok, or "
            "behaved differently after a reset than a freshly started process"
        ),
    }
)

#: Every rule the harness can report, in report order: properties, row properties,
#: protocol rules (a false published claim outranks a malformed message).
RULES: Mapping[str, str] = MappingProxyType({**PROPERTIES, **ROW_PROPERTIES, **PROTOCOL_RULES})
