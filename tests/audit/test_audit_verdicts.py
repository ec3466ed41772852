"""The three wrong audit verdicts of issue 22, each on a constructed log, with its teeth.

- **Rotated logs**: the kept segments of a correct store's log are judged from where the
  log's knowledge starts (the first kept segment's line), without the phantom a read
  straddling the deleted segments made.
- **Phantom checkpoints**: in a log that holds the stream's creation, a checkpoint no
  write made is a linearizability violation, and it certifies nothing.
- **Misfiled checkpoints**: an answer is checked against the partition and epoch it was
  asked for (reads, lists and writes), and credits nobody's certification.

Each verdict is also asked of the brute-force store checker
(:mod:`fencepost.audit.brute_store`), which shares no code with the audit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from audit_histories import INITIAL, M1, H, kinds, rec, run, through

from fencepost.audit import brute_store
from fencepost.audit.log import op_to_json
from fencepost.audit.ops import Op, Status
from fencepost.audit.run import audit
from fencepost.audit.verdict import LINEARIZABILITY
from fencepost.judge.values import Checkpoint, Cut, Finality

# --- rotation -------------------------------------------------------------------------


def segment_line(number: int, opened: int, log: str = "audit.log") -> dict[str, Any]:
    return {
        "v": 1,
        "worker": "recorder-1-1",
        "seq": 0,
        "stream": "",
        "op": "segment",
        "args": {"log": log, "segment": number},
        "t0": opened,
        "t1": opened,
        "status": "ok",
        "result": {"dropped": {}, "unnamed": 0},
    }


def write_segment(path: Path, header: dict[str, Any] | None, ops: list[Op]) -> Path:
    lines = ([header] if header else []) + [op_to_json(op) for op in ops]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def straddling() -> list[Op]:
    """What the kept segment holds once segments 0-2 are deleted at time 100.

    A write of revision 5 completed at 95 (its lines were in segment 2, deleted).
    ``early`` read revision 4 over [90, 120]: it took effect before that write, yet
    completes in the kept segment. ``late`` reads revision 5 over [105, 110].
    """
    h = H(created=False)
    h.read("early", 90, 120, rec(1, through(4), 4, "w-4"))
    h.read("late", 105, 110, rec(1, through(5), 5, "w-5"))
    h.read("later", 130, 131, rec(1, through(5), 5, "w-5"))
    return h.ops


def test_kept_segments_are_judged_from_where_the_log_starts(tmp_path: Path) -> None:
    kept = write_segment(tmp_path / "audit.log.3", segment_line(3, 100), straddling())
    report = audit([kept])
    assert report.exit_code == 0, [v.message for v in report.violations]
    assert brute_store.linearizable(straddling(), held=False, start=100)
    # Teeth: the same calls without the segment line (the log taken as whole) are the
    # phantom of the field report.
    bare = write_segment(tmp_path / "bare.log", None, straddling())
    [v] = audit([bare]).violations
    assert v.property == LINEARIZABILITY and "phantom" in v.message
    assert not brute_store.linearizable(straddling(), held=False, start=None)


def test_calls_after_the_start_are_still_judged_exactly(tmp_path: Path) -> None:
    """A stale read invoked after the start is a violation in a rotated log too."""
    h = H(created=False)
    h.read("early", 90, 120, rec(1, through(4), 4, "w-4"))
    h.write("w", 130, 131, 5, through(6), "w-6")
    h.read("stale", 140, 141, rec(1, through(5), 5, "w-5"))
    kept = write_segment(tmp_path / "audit.log.3", segment_line(3, 100), h.ops)
    [v] = audit([kept]).violations
    assert v.property == LINEARIZABILITY and "stale read" in v.message
    assert not brute_store.linearizable(h.ops, held=False, start=100)


def test_an_attempt_begun_in_a_deleted_segment_is_not_judged(tmp_path: Path) -> None:
    """Its calls were deleted with their segment: 'published' cannot be checked."""
    h = H(created=False)
    h.membership("m", 101, 102, M1)
    h.attempt("p", 90, 120, "p/1", "published", 1, through(5), op_id="p-1")
    kept = write_segment(tmp_path / "audit.log.3", segment_line(3, 100), h.ops)
    report = audit([kept])
    notes = [n for verdict in report.verdicts for n in verdict.notes]
    assert report.exit_code == 0 and any("attempt begun before" in n for n in notes)
    bare = write_segment(tmp_path / "bare.log", None, h.ops)
    assert "lost_response_honesty" in {v.property for v in audit([bare]).violations}


def test_a_missing_middle_segment_is_a_hole_and_undecided(tmp_path: Path) -> None:
    h = H(created=False)
    h.read("r", 110, 111, rec(1, through(4), 4, "w-4"))
    first = write_segment(tmp_path / "audit.log.3", segment_line(3, 100), h.ops[:1])
    last = write_segment(tmp_path / "audit.log.5", segment_line(5, 300), [])
    report = audit([first, last])
    assert report.exit_code == 4 and report.holes == [("audit.log", 4)]
    assert "segment 4 of log audit.log is missing" in report.doubts[0]


def test_the_recorder_rotating_with_keep_writes_what_the_audit_needs(tmp_path: Path) -> None:
    """LogWriter(keep=2): each kept segment starts with its segment line, numbered on."""
    from fencepost.impl.memory import MemoryStore
    from fencepost.impl.recording import LogWriter, RecordingStore
    from fencepost.impl.simulated import SimulatedSource

    clock = iter(range(10**6))
    log = LogWriter(tmp_path / "audit.log", max_bytes=2048, keep=2, clock=lambda: next(clock))
    store = RecordingStore(MemoryStore(), log, "w")
    store.create_stream("s", SimulatedSource(1, 2, 5).membership())
    for _ in range(40):
        store.read_publication("s")
    log.close()
    kept = sorted(tmp_path.glob("audit.log*"))
    assert len(kept) == 2
    heads = [json.loads(p.read_text().splitlines()[0]) for p in kept]
    assert [h["op"] for h in heads] == ["segment", "segment"]
    report = audit(kept)
    assert report.exit_code == 0
    numbers = sorted(h["args"]["segment"] for h in heads)
    assert numbers[1] == numbers[0] + 1 and numbers[0] > 0


# --- phantom checkpoints -----------------------------------------------------------------


def cp(partition: str, at: int, generation: int, *, epoch: int = 1, token: str = "t") -> Checkpoint:
    return Checkpoint(partition, Cut.through(at), token, generation, "q", epoch, Finality.FINAL)


def read_cp(h: H, w: str, t0: int, t1: int, partition: str, answer: Checkpoint | None) -> Op:
    return h.add(
        w, "read_checkpoint", t0, t1, Status.OK, {"epoch": 1, "partition": partition}, answer
    )


def phantom(created: bool) -> H:
    """p reads a checkpoint of A at generation 2, through 9, that no write in the log made."""
    h = H(created=created)
    read_cp(h, "p", 20, 21, "A", cp("A", 9, 2))
    return h


def test_a_checkpoint_no_write_made_is_a_violation_when_the_log_holds_the_creation() -> None:
    h = phantom(created=True)
    [v] = run(h).violations
    assert v.property == LINEARIZABILITY
    assert "the checkpoint of A in epoch 1 is not linearizable" in v.message
    assert "phantom" in v.message
    assert not brute_store.linearizable(h.ops, held=True)
    # Without the creation in the log, an earlier write may have made it: not decidable.
    unknown = phantom(created=False)
    assert run(unknown).exit_code == 0
    assert brute_store.linearizable(unknown.ops, held=False)


def test_a_phantom_checkpoint_certifies_nothing() -> None:
    """The publication through 9 rests on A's phantom: certified_support is broken."""
    h = phantom(created=True)
    h.checkpoint("r", 22, 23, "A", None, through(5))
    h.checkpoint("r", 22, 23, "B", None, through(9))
    h.membership("p", 24, 25, M1)
    h.write("p", 30, 31, 0, through(9), "p-1")
    found = kinds(h)
    assert LINEARIZABILITY in found and "certified_support" in found
    # Teeth: the same log with A's write made through 9 passes.
    honest = H()
    honest.checkpoint("r", 10, 11, "A", None, through(9))
    read_cp(honest, "p", 20, 21, "A", cp("A", 9, 1, token="t"))
    honest.checkpoint("r", 22, 23, "B", None, through(9))
    honest.membership("p", 24, 25, M1)
    honest.write("p", 30, 31, 0, through(9), "p-1")
    assert kinds(honest) == set()


def test_a_log_that_begins_with_a_creation_of_a_stream_that_existed_is_not_held() -> None:
    """create_stream on a stream that already had a record (revision > 0) created nothing."""
    h = H(created=False)
    h.add("setup", "create_stream", 0, 0, Status.OK, {"membership": M1}, rec(1, through(2), 3, "x"))
    read_cp(h, "p", 20, 21, "A", cp("A", 9, 2))
    assert run(h).exit_code == 0


# --- misfiled checkpoints ------------------------------------------------------------------


def test_a_read_answered_with_another_partitions_checkpoint_is_caught() -> None:
    """read_checkpoint(1, A) answered with B's checkpoint: caught, and B credited nothing."""
    h = H()
    h.checkpoint("r", 10, 11, "A", None, through(9))
    read_cp(h, "p", 20, 21, "A", cp("B", 9, 1))  # B never wrote a checkpoint
    h.membership("p", 24, 25, M1)
    h.write("p", 30, 31, 0, through(9), "p-1")
    violations = run(h).violations
    misfiled = [v for v in violations if "asked for the checkpoint of A" in v.message]
    assert misfiled and misfiled[0].property == LINEARIZABILITY
    assert "got B's of epoch 1" in misfiled[0].message
    assert "certified_support" in {v.property for v in violations}  # B's is not credited
    assert not brute_store.linearizable(h.ops, held=True)


def test_a_misfiled_answer_is_caught_in_a_log_without_the_creation_too() -> None:
    h = H(created=False)
    read_cp(h, "p", 20, 21, "A", cp("A", 9, 1, epoch=2))  # asked epoch 1, got epoch 2's
    [v] = run(h).violations
    assert "got A's of epoch 2" in v.message
    assert not brute_store.linearizable(h.ops, held=False)


def test_a_list_of_checkpoints_is_checked_against_its_epoch_and_partitions() -> None:
    other_epoch = H()
    other_epoch.checkpoints("p", 20, 21, 1, (cp("A", 3, 1, epoch=2),))
    assert any("got A's of epoch 2" in v.message for v in run(other_epoch).violations)
    twice = H()
    twice.checkpoint("r", 10, 11, "A", None, through(3))
    twice.checkpoints("p", 20, 21, 1, (cp("A", 3, 1), cp("A", 3, 1)))
    assert any("two checkpoints of A" in v.message for v in run(twice).violations)


def test_a_write_answered_with_another_keys_checkpoint_is_caught() -> None:
    h = H()
    written = cp("A", 3, 1)
    h.add(
        "r",
        "write_checkpoint",
        10,
        11,
        Status.OK,
        {"expected_generation": None, "checkpoint": written},
        cp("B", 3, 1),
    )
    assert any("asked for the checkpoint of A" in v.message for v in run(h).violations)


@pytest.mark.parametrize("created", [True, False])
def test_a_correct_read_of_the_partition_asked_passes(created: bool) -> None:
    h = H(created=created)
    h.checkpoint("r", 10, 11, "A", None, through(9))
    read_cp(h, "p", 20, 21, "A", cp("A", 9, 1))
    read_cp(h, "p", 22, 23, "B", None)
    assert run(h).exit_code == 0
    assert brute_store.linearizable(h.ops, held=created)


def test_initial_record_helper_is_the_first_epoch() -> None:
    assert INITIAL.epoch == M1.epoch
