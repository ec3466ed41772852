"""fencepost.harness: the JSON-lines conformance harness for any implementation.

The SUT is a program speaking docs/conformance-protocol.md over stdin/stdout; the
harness starts one process per worker, plays the stores, the provider and the
network, chooses every interleaving, and checks docs/semantics.md section 7 and the
protocol's rules after every step.

The API other tools use (the scenario library runs scripted schedules with it):

- :func:`run_schedule` (``fencepost.harness.runner``): run one schedule in one
  world against fresh SUT workers; returns a :class:`RunResult`;
- :class:`Run`: the same step by step, with the state as data
  (:meth:`Run.pending_call` -> :class:`PendingCall`, :meth:`Run.last_end` ->
  :class:`RequestEnd`, :meth:`Run.snapshot` -> :class:`Snapshot`,
  :meth:`Run.busy`), and the steps scenarios need beyond the search's
  (:class:`Certify` an explicit cut, :class:`Serve` a scripted page,
  :class:`Inject` at a cut, :class:`Crash` one worker mid-request);
- :class:`WorldSetup` and friends (``fencepost.harness.world``): the world as
  plain data; the schedule steps (``fencepost.harness.schedule``);
- SUT factories: :class:`SubprocessSut` (any command); fencepost's own
  implementation runs in-process with :class:`fencepost.sut.InProcessSut`.
  The harness never imports the implementation it judges: verdicts come from
  :mod:`fencepost.judge`;
- :func:`conform` (``fencepost.harness.conformance``): the whole search.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fencepost.harness.conformance import (
        ConformOptions,
        ConformReport,
        Failure,
        conform,
        replay,
    )
    from fencepost.harness.results import (
        PendingCall,
        RequestEnd,
        RunResult,
        Snapshot,
        StepRecord,
        TranscriptLine,
    )
    from fencepost.harness.rules import Rule, Violation
    from fencepost.harness.runner import Run, run_schedule
    from fencepost.harness.schedule import (
        Action,
        Advance,
        Answer,
        Certify,
        Crash,
        Finalize,
        Ingest,
        Inject,
        Publish,
        Reshard,
        Serve,
    )
    from fencepost.harness.transport import SubprocessSut, SutFactory
    from fencepost.harness.world import (
        ClaimStyle,
        EpochSetup,
        EventSpec,
        PartitionSetup,
        WorldSetup,
    )

#: public name -> the module that defines it. Imported on first use, so a SUT
#: process that needs only the adapter does not pay for the search and reports.
_HOMES: dict[str, str] = {
    "ConformOptions": "conformance",
    "ConformReport": "conformance",
    "Failure": "conformance",
    "conform": "conformance",
    "replay": "conformance",
    "Rule": "rules",
    "Violation": "rules",
    "PendingCall": "results",
    "RequestEnd": "results",
    "Run": "runner",
    "RunResult": "results",
    "Snapshot": "results",
    "StepRecord": "results",
    "TranscriptLine": "results",
    "run_schedule": "runner",
    "Action": "schedule",
    "Advance": "schedule",
    "Answer": "schedule",
    "Certify": "schedule",
    "Crash": "schedule",
    "Finalize": "schedule",
    "Ingest": "schedule",
    "Inject": "schedule",
    "Publish": "schedule",
    "Reshard": "schedule",
    "Serve": "schedule",
    "SubprocessSut": "transport",
    "SutFactory": "transport",
    "ClaimStyle": "world",
    "EpochSetup": "world",
    "EventSpec": "world",
    "PartitionSetup": "world",
    "WorldSetup": "world",
}

__all__ = [
    "Action",
    "Advance",
    "Answer",
    "Certify",
    "ClaimStyle",
    "ConformOptions",
    "ConformReport",
    "Crash",
    "EpochSetup",
    "EventSpec",
    "Failure",
    "Finalize",
    "Ingest",
    "Inject",
    "PartitionSetup",
    "PendingCall",
    "Publish",
    "RequestEnd",
    "Reshard",
    "Rule",
    "Run",
    "RunResult",
    "Serve",
    "Snapshot",
    "StepRecord",
    "SubprocessSut",
    "SutFactory",
    "TranscriptLine",
    "Violation",
    "WorldSetup",
    "conform",
    "replay",
    "run_schedule",
]


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'fencepost.harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"fencepost.harness.{home}"), name)
    globals()[name] = value
    return value
