"""The worlds ``fencepost conform`` can put an implementation in (the vocabulary names them).

- ``frontier`` (the default): the world of docs/conformance-protocol.md's first
  three levels: providers whose pages carry final claims, stores of
  checkpoints and a publication record; the levels ``algebra``,
  ``checkpointer`` and ``publisher`` are tested (``fencepost.harness.conformance``);
- ``late-commits``: a table with several writers that commit out of cursor
  order within a declared bound, rows sharing cursor values, a query
  granularity coarser than the stored precision, partitions that appear
  mid-run, and no finality claim; only the level ``sync`` is tested
  (``fencepost.harness.late_search``).

Each world lists the levels it tests. Cost: nothing (constants).
"""

from __future__ import annotations

from collections.abc import Mapping

from fencepost.harness.transport import DEFAULT_STARTUP
from fencepost.vocabulary.conformance import WORLDS as VOCABULARY_WORLDS
from fencepost.vocabulary.conformance import WorldName

#: One world: its name on the command line, the levels it tests, and what it is.
WorldInfo = WorldName

#: The worlds, by the name ``--world`` takes: the vocabulary's (one home of the names).
WORLDS: Mapping[str, WorldInfo] = VOCABULARY_WORLDS

FRONTIER = "frontier"
LATE_COMMITS = "late-commits"

DEFAULT_WORLD = FRONTIER

#: The cursor types of the late-commit world, with the granularity a query bound takes.
CURSORS: dict[str, int] = {"timestamp": 1000, "integer": 1}

#: The default late-commit bound D, in the cursor's own units (seconds for timestamps).
DEFAULT_MAX_COMMIT_DELAY = 10

#: How partitions exist in the late-commit world (``--partitions``): the one home of this set.
PARTITIONINGS: dict[str, str] = {
    "appearing": "several partitions, some appearing mid-run holding old rows",
    "fixed": "several partitions, all present from the start",
    "one": "an unpartitioned source: partition main only",
}
DEFAULT_PARTITIONS = "appearing"
#: How the pages of one query are read (``--reads``; the wire's values are
#: ``fencepost.harness.protocol.READS``): the default is a paginated API.
DEFAULT_READS = "live"

#: Seconds a SUT process gets from its start to its answer to ``hello`` (``--startup-timeout``):
#: start-up (importing a library) is paid once and may take seconds on a loaded machine; every
#: later message has the per-message ``--timeout``.
DEFAULT_STARTUP_TIMEOUT = DEFAULT_STARTUP

#: Milliseconds per unit of ``--max-commit-delay`` for each cursor type (the wire's unit).
WIRE_UNITS: dict[str, int] = {"timestamp": 1000, "integer": 1}
