"""Refinement check: the production implementation, step for step inside the formal model.

A Hypothesis :class:`~hypothesis.stateful.RuleBasedStateMachine` runs the
model's ``composed`` configuration (ingest and publication together,
:mod:`fencepost.model.machine`) and the implementation
(:class:`~fencepost.impl.publisher.Publisher`,
:class:`~fencepost.impl.reader.PartitionReader` and a real store) in lockstep.
Entry point: :func:`run_refinement`; backends: :func:`memory_backend`,
:func:`sqlite_backend`, :func:`postgres_backend` (any store factory).

The check is split by concept: :mod:`~fencepost.properties.coordinates` (the
coordinate map), :mod:`~fencepost.properties.backends` (where the durable state
lives), :mod:`~fencepost.properties.refinement_report` (findings and reports),
:mod:`~fencepost.properties.refinement_base` (shared state and helpers),
:mod:`~fencepost.properties.refinement_publishers` and
:mod:`~fencepost.properties.refinement_readers` (each side in lockstep),
:mod:`~fencepost.properties.refinement_abstraction` (the abstraction function)
and :mod:`~fencepost.properties.refinement_machine` (the Hypothesis rules).
This module runs it.

**How the two are driven.** Every publication attempt and every ingest pass
runs in its own thread over a gated store (:mod:`fencepost.properties.lockstep`):
each store call it makes waits until a rule releases exactly that call, so
only one thread runs at a time and a run is reproducible call for call. The
controller performs a released call on that process's own store connection
and takes the one model transition that stands for it: a publisher's
``read_publication`` / ``read_membership`` / ``read_checkpoints`` /
``write_publication``, a reader's ``read_checkpoint`` / ``fetch_page`` /
``record_outcomes`` / ``write_checkpoint``. The provider *is* the model: a
``fetch_page`` is answered with a page the model's provider may give at that
point (Hypothesis draws among all of them: several events at one coordinate,
empty pages, pages overlapping the previous one, final claims of both endpoint
kinds, non-final claims, no claim), translated to the implementation's events
and order (:class:`Coordinates`: integers with an exact successor, dense
integers, strings). Environment steps are model steps: the source finalizing
an event, and a reshard (a new membership epoch, written to the store first,
that moves an event into a partition below what it certified before).

**Rules.** ``publisher_step`` releases one store call of one publisher, or
crashes its process before the call (:class:`~fencepost.impl.faults.Crash`
raised into its thread; a SQLite connection is reopened from the file; the
restarted process drives a spare model publisher, the crashed one taking no
further step, as the model treats a stopped process). ``reader_step`` serves a
pass one page: a new pass first reads its checkpoint; the page's outcomes are
recorded and the checkpoint write its final claim leads to is released in the
same step (nothing durable happens in between; late retries arise from two
readers' passes interleaving page by page). ``source_finalizes``,
``reshard``, ``deliver_in_flight`` (a timed-out publication write reaching the
store late, or never). Faults are drawn per write: acknowledged, response lost
after the write applied, lost before, or (publication) still in flight.

**What is compared after every step** (the abstraction function maps the
implementation's durable state onto the model's state; they must agree):

- the current membership epoch, and every epoch's membership (all partitions,
  the stream's scope, the run's order);
- the publication record: epoch, cut (exactly, endpoint kind included),
  revision, and the writer named by its op_id (op_id counters differ: the
  implementation counts writes, the model attempts);
- for every (partition, epoch): whether a checkpoint is stored and then its
  cut, token, scope, epoch, finality and generation;
- the set of events with a durable terminal outcome.

**What must hold after every step:** every invariant of docs/semantics.md section 7
(:data:`fencepost.model.invariants.INVARIANTS`) evaluated on the *abstracted
implementation state*: ground truth (positions, source finality, moved
events) is the harness's, durable outcomes, checkpoints and the record are the
store's, and the observer memory (the record's and each checkpoint's peaks) is
kept from the store's own history. For ``lost_response_honesty`` each reported
outcome is judged from what the gate told that attempt: ``published`` needs an
acknowledged write, ``confirmed`` a record read after the lost response that
showed the claim. The model's own state is checked too (a broken model is
reported as such, never blamed on the implementation).

**Per call**, the implementation must do what the model allows in the same
interleaving: the next store call of a publisher or reader, its arguments
(the cut proposed, the revision or generation expected, the token fetched
from and written), the store's answer (applied or conflict), and every
attempt's reported outcome (published, confirmed, unchanged, withheld with its
reason, gave_up, with the claim). A difference stops the example with a
:class:`RefinementFailure` naming it, plus any invariant the store's state now
breaks.

**Bookkeeping where the implementation is finer or coarser than the model**
(equivalent on durable state):

- after a conflict, or an authoritative read that sends the attempt round
  again, the implementation rereads the record while the model keeps the
  record it was just given: the reread is released in the same step;
- the model's reader records a page's outcomes in one step, the
  implementation one event at a time: they are released together.

**The implementation runs with its production settings.** Readers are
:class:`PartitionReader` with ``max_retries`` and ``save_progress`` left at
their defaults, and the model's reader is configured from them
(``reader_retries``, ``save_progress``): its pass goes on after a settled
write, rewrites after a lost race while its claim is still strictly ahead,
rereads after a lost response, rereads again after giving up, and closes with
a token-only progress write, each a call of its own. What remains fixed: one
:class:`PartitionReader` per pass (as ``fencepost sut`` runs it; a reader
object reused across passes may resume from its own position when nobody else
wrote since, which the model does not represent), and no read timeouts are
injected (the model's publisher gives up on one, the implementation's retries).

**Steering** (what keeps 50 steps interesting; it narrows nothing the model
allows): a publisher starts an attempt when what it reads changed since its
last one or that one gave up; slots are drawn among those able to act; pages
with a final claim are offered twice; some events may be final from the start;
a reshard comes once the epoch has a published claim and ends the old epoch's
passes (at their next fetch); Hypothesis' target phase climbs the number of
distinct kinds of transitions and the record's epoch.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.reporting import with_reporter
from hypothesis.stateful import run_state_machine_as_test

from fencepost.properties.backends import (
    BACKENDS,
    StoreBackend,
    memory_backend,
    open_backend,
    postgres_backend,
    shared_backend,
    sqlite_backend,
)
from fencepost.properties.coordinates import ORDERS, Coordinates
from fencepost.properties.refinement_base import DEFAULT_STEPS, Planted
from fencepost.properties.refinement_machine import RefinementMachine, refinement_machine
from fencepost.properties.refinement_report import (
    FailureReport,
    Finding,
    RefinementFailure,
    RefinementReport,
    RunStats,
    coverage_key,
)

__all__ = [
    "BACKENDS",
    "ORDERS",
    "Coordinates",
    "FailureReport",
    "Finding",
    "RefinementFailure",
    "RefinementMachine",
    "RefinementReport",
    "RunStats",
    "StoreBackend",
    "coverage_key",
    "memory_backend",
    "open_backend",
    "planted_mutant",
    "postgres_backend",
    "refinement_machine",
    "refinement_settings",
    "run_machine",
    "run_refinement",
    "shared_backend",
    "sqlite_backend",
]


def planted_mutant(name: str) -> Planted:
    """The implementation mutant ``name`` (the one place that reads the mutant catalog).

    Raises ``ValueError`` naming the choices when there is none by that name.
    """
    from fencepost.mutants import CATALOG

    # Only the bugs the refinement check can see (the catalog says why for the others).
    seen = {n: v for n, v in CATALOG.items() if v.shows_as}
    if name not in seen:
        raise ValueError(f"unknown mutant {name!r}; choose one of {', '.join(sorted(seen))}")
    return seen[name]


def refinement_settings(
    examples: int, steps: int = DEFAULT_STEPS, *, shrink: bool = True, derandomize: bool = True
) -> settings:
    """Hypothesis settings for a run: bounded, no example database, deterministic by default."""
    phases = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
    if shrink:
        phases.append(Phase.shrink)
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=derandomize,
        database=None,
        print_blob=False,
        report_multiple_bugs=False,
        phases=phases,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


def run_machine(
    machine: type[RefinementMachine],
    examples: int,
    seed: int | None,
    *,
    steps: int = DEFAULT_STEPS,
    shrink: bool = True,
) -> tuple[FailureReport | None, float]:
    """Run ``machine`` for ``examples`` examples; the shrunk failure, if any, and the seconds."""
    runnable: type[RefinementMachine] = machine
    if seed is not None:
        runnable = hypothesis_seed(seed)(machine)
    started = time.perf_counter()
    failure: FailureReport | None = None
    try:
        with with_reporter(lambda _: None):  # the program comes back on the exception
            run_state_machine_as_test(
                runnable,
                settings=refinement_settings(
                    examples, steps, shrink=shrink, derandomize=seed is None
                ),
            )
    except RefinementFailure as exc:
        notes = [n for n in getattr(exc, "__notes__", ()) if isinstance(n, str)]
        failure = FailureReport(
            tuple(str(f) for f in exc.findings),
            frozenset(f.name for f in exc.findings),
            "\n".join(_program(notes)),
            exc.trace,
        )
    except Exception as exc:  # the harness itself broke: report it, never pass silently
        notes = [n for n in getattr(exc, "__notes__", ()) if isinstance(n, str)]
        finding = Finding("harness", "harness-error", f"{type(exc).__name__}: {exc}")
        failure = FailureReport(
            (str(finding),), frozenset({finding.name}), "\n".join(_program(notes)), ()
        )
    return failure, time.perf_counter() - started


def _program(notes: Sequence[str]) -> list[str]:
    """The Hypothesis program among an exception's notes (without the invariant-check lines)."""
    keep = []
    for note in notes:
        if note.startswith(("Failing test case", "Highest target scores")):
            if note.startswith("Highest"):
                break
            continue
        if note.strip() and not note.endswith(".implementation_refines_model()"):
            keep.append(note)
    return keep


def run_refinement(
    backend: str,
    examples: int,
    seed: int | None,
    *,
    steps: int = DEFAULT_STEPS,
    mutant: str | None = None,
    shrink: bool = True,
    database_url: str | None = None,
) -> RefinementReport:
    """Run the refinement check on ``backend`` (``memory``, ``sqlite`` or ``postgres``).

    ``examples`` Hypothesis examples of at most ``steps`` rules each; ``seed``
    None derandomizes (the same examples every run, for CI), an int seeds the
    search. ``mutant`` plants one of the implementation mutants into the
    implementation (the run should then fail). ``database_url`` is the
    PostgreSQL URL (default ``$FENCEPOST_DATABASE_URL``).
    """
    for label, value, low in (("examples", examples, 1), ("steps", steps, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{label} must be a positive integer, got {value!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ValueError(f"seed must be an integer or None, got {seed!r}")
    planted = None if mutant is None else planted_mutant(mutant)
    stats = RunStats()
    with open_backend(backend, database_url) as store_backend:
        machine = refinement_machine(store_backend, mutant=planted, stats=stats)
        failure, seconds = run_machine(machine, examples, seed, steps=steps, shrink=shrink)
    return RefinementReport(
        backend,
        stats.examples,
        stats.steps,
        seed,
        mutant,
        seconds,
        () if failure is None else (failure,),
        dict(stats.coverage),
    )
