"""The error-handling probes: malformed messages must get an ``error`` and leave the SUT running.

docs/conformance-protocol.md ("Errors"): a SUT that cannot parse a message
answers ``{"type": "error", "id": <id or null>, "message": ...}`` and keeps
running. One worker is sent, in turn:

- a line that is not JSON (the answer's ``id`` must be null);
- for each level under test, a request of that level with one bad field (the
  answer must carry the request's id): a ``compare`` whose cut kind is
  ``sideways``, a ``merge`` whose vector holds two checkpoints for one member
  (docs/semantics.md section 8: refused as a bad value, never merged: taking
  the first or the last of the two is a finding), a ``publish`` whose policy is
  ``sometimes``, an ``ingest`` whose order kind is ``sideways``.

Each answer must be an ``error``; that the next probe is answered at all shows the
SUT kept running. The probes are a phase of their own (``error_handling``), so a
SUT that handles bad input poorly is told so without its semantic phases being
hidden.

Cost: one process, 2 + (levels tested) messages each way (3 + levels with ``algebra``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fencepost.harness.results import TranscriptLine
from fencepost.harness.rules import SutFailure, Violation
from fencepost.harness.session import LineSession
from fencepost.harness.transport import SutFactory
from fencepost.inputs.jsonlines import (
    encode,
)


@dataclass(frozen=True)
class ProbeResult:
    """What the probes found: the first broken rule (if any) and the transcript."""

    violations: tuple[Violation, ...]
    transcript: tuple[TranscriptLine, ...]
    messages: int
    stderr: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.violations


_DUPLICATE = (
    "a merge whose vector holds two checkpoints for member A (through 7, then through 3; "
    "docs/semantics.md section 8: a bad value)"
)


def _duplicate_member_merge(request_id: int) -> dict[str, object]:
    """A merge request whose vector has two valid, different checkpoints for member A.

    Each alone merges (B holds ``through 5``): a program that keeps the first
    answers ``through 5``, one that keeps the last ``through 3``; only an error
    is right.
    """

    def checkpoint(partition: str, at: int, token: str) -> dict[str, object]:
        return {
            "partition": partition,
            "cut": {"at": at, "kind": "through"},
            "token": token,
            "generation": 1,
            "scope": "q1",
            "epoch": 1,
            "finality": "final",
        }

    return {
        "type": "merge",
        "id": request_id,
        "membership": {
            "epoch": 1,
            "scope": "q1",
            "partitions": {"A": "offsets", "B": "offsets"},
            "orders": {"offsets": {"name": "offsets", "kind": "integer", "successor": True}},
        },
        "checkpoints": [
            checkpoint("A", 7, "a-7"),
            checkpoint("B", 5, "b-5"),
            checkpoint("A", 3, "a-3"),
        ],
    }


def _bad_requests(
    levels: frozenset[str], first_id: int
) -> list[tuple[int, dict[str, object], str]]:
    out: list[tuple[int, dict[str, object], str]] = []
    request_id = first_id
    offsets = {"name": "offsets", "kind": "integer", "successor": True}
    if "algebra" in levels:
        request_id += 1
        out.append(
            (
                request_id,
                {
                    "type": "compare",
                    "id": request_id,
                    "order": offsets,
                    "a": {"at": 1, "kind": "sideways"},
                    "b": None,
                },
                "a compare whose cut kind is 'sideways'",
            )
        )
        request_id += 1
        out.append((request_id, _duplicate_member_merge(request_id), _DUPLICATE))
    if "publisher" in levels:
        request_id += 1
        out.append(
            (
                request_id,
                {
                    "type": "publish",
                    "id": request_id,
                    "worker": "probe",
                    "stream": "s",
                    "policy": "sometimes",
                },
                "a publish whose policy is 'sometimes'",
            )
        )
    if "checkpointer" in levels:
        request_id += 1
        out.append(
            (
                request_id,
                {
                    "type": "ingest",
                    "id": request_id,
                    "worker": "probe",
                    "partition": "A",
                    "scope": "q1",
                    "epoch": 1,
                    "order": {"name": "x", "kind": "sideways"},
                },
                "an ingest whose order kind is 'sideways'",
            )
        )
    return out


def run_probes(factory: SutFactory, levels: frozenset[str], *, timeout: float) -> ProbeResult:
    """Send every probe to one worker (see the module docstring)."""
    session = LineSession(factory, timeout, "probe")
    violations: list[Violation] = []
    try:
        session.open()
        session.send("this line is not JSON")
        session.expect_error(None, "a line that is not JSON")
        for request_id, message, what in _bad_requests(levels, 0):
            session.case_no += 1
            session.send(encode(message))
            session.expect_error(request_id, what)
    except SutFailure as failure:
        violations.append(Violation(failure.rule, failure.message, session.case_no, "probe"))
        session.note("**", f"VIOLATION {failure.rule.value}: {failure.message}")
    closing = session.close(clean=not violations)
    if closing is not None:
        violations.append(closing)
    stderr = {}
    if violations and session.channel is not None:
        stderr["probe"] = session.channel.stderr_tail()
    return ProbeResult(tuple(violations), tuple(session.lines), session.messages, stderr)
