"""Batched checkpoint writes and summary reads, recorded and audited.

``RecordingStore.write_checkpoints`` writes one ``write_checkpoint`` operation per
write of the batch (announced ``pending`` first, completed together), and
``read_merge_summary`` records the ``read_checkpoints`` it summarises: the audit
reads both, and a MultiPartitionReader and publishers under lost batch responses
and crashes leave a history with no violation. The teeth: a recorder that marks
a lost batch ``ok`` is caught by the audit.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from fencepost.audit.run import audit
from fencepost.impl.faults import Crash, FaultyStore
from fencepost.impl.memory import MemoryStore
from fencepost.impl.multi_reader import MultiPartitionReader
from fencepost.impl.provider import ProviderTimeout
from fencepost.impl.publisher import Publisher
from fencepost.impl.recording import LogWriter, RecordingStore
from fencepost.impl.simulated import SimulatedSource
from fencepost.impl.stores import IndefiniteStoreError

STREAM = "s"


def run(log: LogWriter, recorder: type[RecordingStore] = RecordingStore) -> None:
    source = SimulatedSource(5, 6, 30)
    memory = MemoryStore()
    recorder(memory, log, "setup").create_stream(STREAM, source.membership())
    for incarnation in range(1, 25):
        name = f"w{incarnation}"
        inner = FaultyStore(
            memory,
            incarnation,
            lose_after=0.15,
            lose_before=0.1,
            crash_before=0.02,
            crash_after=0.02,
            ops=["write_checkpoints", "read_checkpoints", "write_publication"],
        )
        store = recorder(inner, log, name)
        reader = MultiPartitionReader(
            store, source, STREAM, source.membership(), lambda e: "ok", batch_size=4
        )
        try:
            with contextlib.suppress(IndefiniteStoreError, ProviderTimeout):
                reader.run_pass(max_pages=2)
            store.attempt(Publisher(store, STREAM, name))
        except Crash:
            continue


def lines(log: LogWriter) -> list[dict[str, Any]]:
    return [json.loads(x) for p in log.segments() for x in p.read_text().splitlines()]


def test_batches_and_summary_reads_are_audited(tmp_path: Path) -> None:
    log = LogWriter(tmp_path / "audit.log")
    run(log)
    log.close()
    seen = lines(log)
    writes = [x for x in seen if x["op"] == "write_checkpoint" and x["status"] != "pending"]
    # a batch's writes complete together: several completions share one t1
    assert max(sum(1 for y in writes if y["t1"] == x["t1"]) for x in writes) > 1
    assert {"ok", "indefinite"} <= {x["status"] for x in writes}
    assert any(x["op"] == "read_checkpoints" and "attempt" in x for x in seen)
    report = audit([tmp_path / "audit.log"])
    assert report.operations > 100
    assert report.exit_code == 0, [v.message for v in report.violations]


class BlindBatchRecorder(RecordingStore):
    """Broken: records a batch whose response was lost as applied."""

    def write_checkpoints(self, stream: str, writes: Any) -> Any:
        try:
            return super().write_checkpoints(stream, writes)
        except IndefiniteStoreError:
            t = self.log.clock()
            for expected, checkpoint in writes:
                seq = self._seq
                self._seq += 1
                args = json.dumps(
                    {"expected_generation": expected, "checkpoint": _json(checkpoint)}
                )
                head = self._head(seq, stream, "write_checkpoint", args, t)
                result = json.dumps(_json(checkpoint, expected))
                self.log.write_text(stream, f'{head},"t1":{t},"status":"ok","result":{result}}}\n')
            raise


def _json(checkpoint: Any, expected: int | None = None) -> dict[str, Any]:
    from fencepost.impl.codec import checkpoint_to_json

    data = checkpoint_to_json(checkpoint)
    if expected is not None or "generation" in data:
        data["generation"] = (expected or 0) + 1
    return dict(data)


def test_the_audit_catches_a_recorder_that_says_a_lost_batch_applied(tmp_path: Path) -> None:
    log = LogWriter(tmp_path / "audit.log")
    run(log, BlindBatchRecorder)
    log.close()
    report = audit([tmp_path / "audit.log"])
    assert report.exit_code == 1, "a lost batch recorded as applied went unnoticed"
