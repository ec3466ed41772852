"""`ingest_report`: what an ingest pass may report at its end (docs/conformance.md).

A pass may report the checkpoint the store holds, or the greatest valid checkpoint it
was shown stored in its key, even after another reader replaced that one (a pass that
starts over replaces a misfiled checkpoint, docs/semantics.md section 8). A computed cut
that was never stored is still a violation.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fencepost.harness.checks import judge_ingest_ok
from fencepost.harness.protocol import IngestOk
from fencepost.harness.rules import Rule
from fencepost.harness.world import EpochSetup, EventSpec, PartitionSetup, World, WorldSetup
from fencepost.judge.values import Checkpoint, Cut, Finality, Order

ROOT = Path(__file__).resolve().parents[2]
OFFSETS = Order.integer("offsets", True)


def _world() -> World:
    events = tuple(EventSpec(f"A{i}", i) for i in range(1, 6))
    setup = WorldSetup(
        order=OFFSETS,
        epochs=(EpochSetup(1, (PartitionSetup("A", events),)),),
        readers=("r1",),
        env_checkpoints=True,
    )
    return World(setup)


def _store(world: World, cut: Cut) -> None:
    checkpoint = Checkpoint("A", cut, "t", 1, world.setup.scope, 1, Finality.FINAL)
    world.store_checkpoint((1, "A"), checkpoint)


def test_a_report_of_what_the_pass_was_shown_stored_holds_after_a_replacement() -> None:
    world = _world()
    _store(world, Cut.through(2))  # another reader replaced the pass's through 4
    reply = IngestOk(1, Cut.through(4))
    assert judge_ingest_ok(world, (1, "A"), reply, Cut.through(4)) == []
    # Never shown stored (its write failed): the report exceeds what the store holds.
    found = judge_ingest_ok(world, (1, "A"), reply, Cut.through(3))
    assert [rule for rule, _ in found] == [Rule.INGEST_REPORT]
    assert [rule for rule, _ in judge_ingest_ok(world, (1, "A"), reply)] == [Rule.INGEST_REPORT]


def test_the_replayed_schedule_that_judged_fencepost_sut_falsely_is_conformant() -> None:
    """Seed 3514937443766: a pass certified before '😀', an operator misfiled a checkpoint,
    a second pass started over and stored before 'U+FFEE'; the first pass then reported
    before '😀'. Found by `conform --schedules 100000` on a loaded machine."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "fencepost",
            "conform",
            "--replay",
            "3514937443766",
            "--",
            sys.executable,
            "-m",
            "fencepost",
            "sut",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "CONFORMANT" in done.stdout
