"""A batch of checkpoint writes is one atomic commit, even when its process is killed -9.

A child process moves every partition of a 2,000-partition epoch one generation
at a time, each move one ``write_checkpoints`` batch, and says so after each
commit; the test kills it with SIGKILL right after a random number of commits,
while it writes the next batch, several times, restarting it from the durable
state. After each kill every partition must hold the same generation (the batch
in flight committed entirely or not at all), at least the last generation the
child reported committed (a commit is durable), every stored cut must be the one
written with its generation, and the store's summary must still be exact. The
kills follow the child's reports, never the clock, so a loaded machine changes
nothing but the duration.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pg_server import drop_schema, fresh_schema

from fencepost.impl.cuts import Cut
from fencepost.impl.merge import merge_summary, summarize
from fencepost.impl.open import open_store
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.records import Membership
from fencepost.impl.stores import Store

PARTITIONS = 2000
ORDER = IntegerOrder("offsets", successor_exact=True)
MEMBERSHIP = Membership(
    1, "q", {f"p{i:05d}": "offsets" for i in range(PARTITIONS)}, {"offsets": ORDER}
)

#: The child: every generation g is one batch moving every partition to ``through g``.
CHILD = """
import sys
from fencepost.impl.cuts import Cut
from fencepost.impl.open import open_store
from fencepost.impl.records import Checkpoint

store = open_store(sys.argv[1])
stored = {c.partition: c.generation for c in store.read_checkpoints("s", 1)}
partitions = [f"p{i:05d}" for i in range(int(sys.argv[2]))]
generation = max(stored.values(), default=0)
print("ready", flush=True)
while True:
    batch = [
        (stored.get(p), Checkpoint(p, Cut.through(generation + 1), None, generation + 1, "q", 1))
        for p in partitions
    ]
    results = store.write_checkpoints("s", batch)
    assert all(type(r).__name__ == "CheckpointApplied" for r in results), results[:3]
    generation += 1
    stored = dict.fromkeys(partitions, generation)
    print("committed", generation, flush=True)
"""


def generations(store: Store) -> set[int]:
    checkpoints = store.read_checkpoints("s", 1)
    for c in checkpoints:
        assert c.cut == Cut.through(c.generation), c  # the cut written with that generation
    assert len(checkpoints) in (0, PARTITIONS), len(checkpoints)
    return {c.generation for c in checkpoints}


def kill_mid_batch(location: str, kills: int, seed: int) -> list[int]:
    setup = open_store(location)
    setup.create_stream("s", MEMBERSHIP)
    setup.close()
    rng = random.Random(seed)
    seen = []
    for _ in range(kills):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, location, str(PARTITIONS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        committed = 0
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
            # Kill it after a random number of commits: it is then writing the next batch.
            for _ in range(rng.randint(1, 3)):
                line = child.stdout.readline().split()
                assert line[:1] == [b"committed"], line
                committed = int(line[1])
            alive = child.poll() is None
        finally:
            child.send_signal(signal.SIGKILL)
            _, err = child.communicate()
        assert alive, f"the child stopped by itself: {err.decode()[-2000:]}"
        store = open_store(location)
        try:
            found = generations(store)
            assert len(found) <= 1, f"a batch committed in part: generations {sorted(found)}"
            assert max(found, default=0) >= committed, "a reported commit was lost"
            summary = store.read_merge_summary("s", 1)
            assert summary == summarize(MEMBERSHIP, store.read_checkpoints("s", 1))
            reached = max(found, default=0)
            if reached:
                assert merge_summary(MEMBERSHIP, summary) == Cut.through(reached)
        finally:
            store.close()
        seen.append(reached)
    return seen


def test_a_killed_sqlite_batch_commits_entirely_or_not_at_all(tmp_path: Path) -> None:
    seen = kill_mid_batch(str(tmp_path / "batch.db"), kills=3, seed=1)
    # batches did commit between the kills, each life resuming where the last one stopped
    assert seen[0] >= 1 and all(b > a for a, b in itertools.pairwise(seen)), seen


@pytest.mark.postgres
def test_a_killed_postgres_batch_commits_entirely_or_not_at_all(pg_dsn: str) -> None:
    schema = fresh_schema(pg_dsn, "batchcrash")
    sep = "&" if "?" in pg_dsn else "?"
    try:
        seen = kill_mid_batch(f"{pg_dsn}{sep}fencepost_schema={schema}", kills=3, seed=2)
        assert seen[0] >= 1 and all(b > a for a, b in itertools.pairwise(seen)), seen
    finally:
        drop_schema(pg_dsn, schema)
