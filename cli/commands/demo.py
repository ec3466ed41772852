"""``fencepost demo``: ingest a simulated paginated source into a store and publish.

Each round reads up to ``--pages`` pages of every partition (recording every
event's outcome, certifying only final claims), then makes one publication
attempt and prints the frontier: epoch, cut with its endpoint kind, revision,
outcome, and how many events have durable outcomes. The simulated source is
rebuilt from ``--seed``, so a demo killed at any moment (``kill -9``) and
restarted with the same ``--db`` resumes where the durable state says: the
frontier never goes back and no recorded outcome is lost. The demo checks both
itself after every round and exits 1 if either ever failed.

``--record LOG`` writes every store call of the readers and the publisher to an
audit log (docs/audit.md) for ``fencepost audit LOG*``; ``--lose-responses
RATE`` loses that share of their store responses (half after the call applied),
so the log holds indefinite operations to audit.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from typing import NoReturn

import click

from fencepost.impl.cuts import Cut, compare_cuts, minimum, same_claim
from fencepost.impl.errors import InvalidValue
from fencepost.impl.faults import OPERATIONS, FaultyStore
from fencepost.impl.open import open_store
from fencepost.impl.provider import Event, ProviderTimeout
from fencepost.impl.publisher import Publisher, PublishResult
from fencepost.impl.reader import PartitionReader
from fencepost.impl.recording import LogWriter, RecordingStore
from fencepost.impl.records import PublicationRecord
from fencepost.impl.simulated import SimulatedSource
from fencepost.impl.stores import (
    CorruptStore,
    IndefiniteStoreError,
    Store,
    StoreBehind,
    StoreError,
    StoreFull,
    StoreLocked,
    StoreOpenError,
    StreamConflict,
    require_not_behind,
)

STREAM = "demo"

#: The most events a demo holds (partitions x events): the simulated source keeps every
#: event in memory (about 200 bytes each, the store's copy aside), so 1,000,000 stays
#: well under a gigabyte.
MAX_EVENTS = 1_000_000

#: Rounds in a row with a store failure and no progress after which the demo stops: a
#: store that fails every write (a disk that stays broken) is reported, never retried
#: for ever.
STUCK_ROUNDS = 20

#: Exit status when the store is unusable (corrupt, foreign, unreachable, failed
#: mid-run after its retries): bad input or environment, not a finding.
EXIT_STORE = 2


def _finite(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """A FloatRange lets NaN through (every comparison with it is false): refuse it."""
    if value != value:
        unit = "a share of responses" if param.name == "lose_responses" else "a number of seconds"
        raise click.BadParameter(f"{unit}, not NaN", ctx, param)
    return value


def _handle(event: Event) -> str:
    """The demo's terminal outcome: deterministic, so a replayed event gets the same one."""
    return f"processed@{event.at}"


def _describe(cut: Cut) -> str:
    return "nothing" if cut.is_nothing else f"{cut.endpoint.value} {cut.at}"


def _emit(as_json: bool, line: dict[str, object], text: str) -> None:
    # Flushed per line: whoever reads a pipe sees each round as it happens.
    click.echo(json.dumps(line, sort_keys=True) if as_json else text)
    sys.stdout.flush()


@click.command(name="demo")
@click.option(
    "--db",
    default="fencepost-demo.db",
    show_default=True,
    help="Store location: a SQLite file path, sqlite:PATH, memory:, or a registered URL.",
)
@click.option("--partitions", type=click.IntRange(1, 10_000), default=4, show_default=True)
@click.option(
    "--events",
    type=click.IntRange(1, 1_000_000),
    default=200,
    show_default=True,
    help="Events per partition.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="The seed of the simulated source, or of the outbox writers.",
)
@click.option(
    "--interval",
    type=click.FloatRange(0, 60),
    callback=_finite,
    default=0.2,
    show_default=True,
    help="Seconds to sleep between rounds.",
)
@click.option(
    "--pages",
    type=click.IntRange(1, 1000),
    default=2,
    show_default=True,
    help="Pages read per partition per round.",
)
@click.option(
    "--seen-revision",
    type=click.IntRange(min=0),
    default=None,
    help="The record's revision a previous run reported: refuse to resume (exit 1) from a "
    "store whose record is older (rolled back underneath).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@click.option(
    "--source",
    "source_kind",
    type=click.Choice(["simulated", "postgres-outbox"]),
    default="simulated",
    show_default=True,
    help="simulated: a seeded paginated source. postgres-outbox: writer processes on a real "
    "PostgreSQL outbox, fencepost beside a naive poller (docs/outbox.md); --db is then a "
    "postgresql:// URL, or omitted for an embedded throwaway server.",
)
@click.option(
    "--writers",
    type=click.IntRange(1, 64),
    default=4,
    show_default=True,
    help="postgres-outbox: writer processes.",
)
@click.option(
    "--seconds",
    type=click.FloatRange(0.1, 3600),
    default=5.0,
    show_default=True,
    callback=_finite,
    help="postgres-outbox: how long the writers write.",
)
@click.option(
    "--layout",
    type=click.Choice(["hash", "tables"]),
    default="hash",
    show_default=True,
    help="postgres-outbox: one table hash-partitioned by id, or one table per partition.",
)
@click.option("--keep", is_flag=True, help="postgres-outbox: keep the demo's schema at the end.")
@click.option(
    "--record",
    "record_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Append every store call to this audit log (docs/audit.md; rotated as LOG.1, ...).",
)
@click.option(
    "--lose-responses",
    type=click.FloatRange(0, 0.5),
    callback=_finite,
    default=0.0,
    show_default=True,
    help="Share of store responses lost (half after the call applied).",
)
def command(
    db: str,
    partitions: int,
    events: int,
    seed: int,
    interval: float,
    pages: int,
    seen_revision: int | None,
    as_json: bool,
    source_kind: str,
    writers: int,
    seconds: float,
    layout: str,
    keep: bool,
    record_path: str | None,
    lose_responses: float,
) -> None:
    """Ingest a simulated paginated source into a store and publish its frontier.

    Kill it at any moment and run it again with the same --db: it resumes from
    the durable state with no regression and no lost outcome. Exit 0 when every
    event has an outcome and the frontier is final, 1 on a regression (also a
    store behind --seen-revision), 2 on bad options or an unusable store.

    With --source postgres-outbox: writer processes insert into an outbox on a
    real PostgreSQL while fencepost's readers and publisher run beside a naive
    poller; the rows each skipped are counted at the end.
    """
    given = _given_options()
    if source_kind == "postgres-outbox":
        from fencepost.commands.outbox_demo import run

        if "events" in given:
            raise click.UsageError(
                "--events applies to --source simulated; the outbox's rows come from "
                "--writers and --seconds"
            )
        simulated_only = sorted({"record_path", "lose_responses", "seen_revision"} & given)
        if simulated_only:
            flag = {
                "record_path": "--record",
                "lose_responses": "--lose-responses",
                "seen_revision": "--seen-revision",
            }
            raise click.UsageError(f"{flag[simulated_only[0]]} applies to --source simulated only")
        raise SystemExit(
            run(
                db if "db" in given else None,
                partitions=partitions,
                seed=seed,
                interval=interval,
                pages=pages,
                as_json=as_json,
                writers=writers,
                seconds=seconds,
                keep=keep,
                layout=layout,
            )
        )
    outbox_only = sorted({"writers", "seconds", "layout", "keep"} & given)
    if outbox_only:
        raise click.UsageError(f"--{outbox_only[0]} applies to --source postgres-outbox only")
    if partitions * events > MAX_EVENTS:
        raise click.BadParameter(
            f"--partitions x --events is {partitions * events:,} events; the demo holds "
            f"every event in memory and takes at most {MAX_EVENTS:,}",
            param_hint="--events",
        )
    source = SimulatedSource(seed, partitions, events)
    membership = source.membership()
    try:
        store = open_store(db)
    except (StoreFull, StoreLocked) as exc:  # the environment, not the path: say it as it is
        _store_failed(str(exc))
    except (StoreOpenError, InvalidValue) as exc:
        raise click.BadParameter(str(exc), param_hint="--db") from None
    worker = f"demo-{os.getpid()}-{secrets.token_hex(2)}"
    work: Store = store
    if lose_responses:
        ops = [op for op in OPERATIONS if op != "create_stream"]
        rate = lose_responses / 2
        work = FaultyStore(store, seed, lose_after=rate, lose_before=rate, ops=ops)
    log: LogWriter | None = None
    if record_path is not None:
        log = LogWriter(record_path)
        work = RecordingStore(work, log, worker)
    try:
        work.create_stream(STREAM, membership)
        if seen_revision is not None:
            require_not_behind(store, STREAM, seen_revision)
        code = _run(store, work, worker, source, db, interval, pages, as_json)
    except StreamConflict as exc:
        raise click.BadParameter(
            f"{db} holds a demo of another source ({exc}); use the same --seed, "
            "--partitions and --events as before, or another --db",
            param_hint="--db",
        ) from None
    except StoreBehind as exc:
        click.echo(f"REGRESSION on open: {db}: {exc}", err=True)
        code = 1
    except (CorruptStore, StoreFull, StoreLocked) as exc:
        _store_failed(str(exc))
    except StoreError as exc:
        # Durable state is intact (every write is atomic); say what failed, no traceback.
        _store_failed(
            f"the store failed: {exc}; nothing acknowledged was lost: run the demo again "
            "to resume once the store works"
        )
    finally:
        store.close()
        if log is not None:
            log.close()
            lost = sum(log.dropped.values())
            if lost:
                click.echo(f"warning: {lost} audit line(s) dropped (disk full?)", err=True)
    raise SystemExit(code)


def _given_options() -> set[str]:
    """The options the user gave (on the command line or from the environment)."""
    ctx = click.get_current_context()
    return {
        name
        for name in ctx.params
        if name != "source_kind"
        and ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
    }


def _store_failed(message: str) -> NoReturn:
    click.echo(f"Error: {message}", err=True)
    raise SystemExit(EXIT_STORE)


def _run(
    store: Store,
    work: Store,
    worker: str,
    source: SimulatedSource,
    db: str,
    interval: float,
    pages: int,
    as_json: bool,
) -> int:
    """Rounds of ingest and publish through ``work`` (recorded, faulty), checked on ``store``."""
    membership = store.read_membership(STREAM)
    order = source.order
    all_ids = source.all_event_ids()
    start = store.read_publication(STREAM)
    start_outcomes = len(store.outcomes(STREAM, all_ids))
    _emit(
        as_json,
        {
            "event": "start",
            "db": db,
            "epoch": start.epoch,
            "cut": _describe(start.cut),
            "revision": start.revision,
            "outcomes": start_outcomes,
            "events": len(all_ids),
        },
        f"{'resuming' if start.revision or start_outcomes else 'starting'} {db}: "
        f"epoch {start.epoch}, {_describe(start.cut)}, revision {start.revision}, "
        f"{start_outcomes}/{len(all_ids)} outcomes",
    )
    readers = [
        PartitionReader(work, source, STREAM, p, membership.epoch, membership.scope, order, _handle)
        for p in source.partitions
    ]
    publisher = Publisher(work, STREAM, worker)
    target = minimum(order, [source.final_cut(p) for p in source.partitions])
    previous: PublicationRecord = start
    previous_outcomes = start_outcomes
    round_number = stuck = 0
    while True:
        round_number += 1
        failed: str | None = None
        for reader in readers:
            try:
                reader.run_pass(max_pages=pages)
            except IndefiniteStoreError as exc:
                failed = str(exc)  # nothing certified past what is durable; retried next round
            except ProviderTimeout:
                continue
        result = (
            work.attempt(publisher) if isinstance(work, RecordingStore) else publisher.attempt()
        )
        record = store.read_publication(STREAM)
        outcomes = len(store.outcomes(STREAM, all_ids))
        problem = _check(store, source, previous, record)
        _report(as_json, round_number, result, record, outcomes, len(all_ids), problem)
        if problem:
            return 1
        progressed = record != previous or outcomes > previous_outcomes
        stuck = 0 if progressed or failed is None else stuck + 1
        if stuck >= STUCK_ROUNDS:  # a store that fails every time is reported, not retried
            raise IndefiniteStoreError(
                f"the store failed in each of the last {stuck} rounds and nothing moved "
                f"(last failure: {failed})"
            )
        previous, previous_outcomes = record, outcomes
        if same_claim(order, record.cut, target) and outcomes == len(all_ids):
            _emit(
                as_json,
                {"event": "done", "rounds": round_number, "revision": record.revision},
                f"done: every event has an outcome and the frontier is {_describe(record.cut)}",
            )
            return 0
        if interval:
            time.sleep(interval)


def _check(
    store: Store, source: SimulatedSource, previous: PublicationRecord, record: PublicationRecord
) -> str:
    """The oracle: the record never goes back and covers only events with outcomes."""
    if record.epoch < previous.epoch or (
        record.epoch == previous.epoch and compare_cuts(source.order, record.cut, previous.cut) < 0
    ):
        return f"REGRESSION: {_describe(previous.cut)} -> {_describe(record.cut)}"
    covered = source.covered_ids(record.cut)
    missing = len(covered) - len(store.outcomes(STREAM, covered))
    if missing:
        return f"UNSOUND: {missing} covered events have no outcome"
    return ""


def _report(
    as_json: bool,
    round_number: int,
    result: PublishResult,
    record: PublicationRecord,
    outcomes: int,
    total: int,
    problem: str,
) -> None:
    line: dict[str, object] = {
        "event": "round",
        "round": round_number,
        "epoch": record.epoch,
        "cut": None
        if record.cut.is_nothing
        else {"at": record.cut.at, "kind": record.cut.endpoint.value},
        "revision": record.revision,
        "outcome": result.outcome.value,
        "reason": None if result.reason is None else result.reason.value,
        "outcomes": outcomes,
        "events": total,
    }
    if problem:
        line["problem"] = problem
    reason = f" ({result.reason.value})" if result.reason is not None else ""
    text = (
        f"round {round_number:4d}  epoch {record.epoch}  {_describe(record.cut):>22}  "
        f"revision {record.revision:4d}  {result.outcome.value}{reason}  "
        f"outcomes {outcomes}/{total}"
    )
    _emit(as_json, line, text + (f"  {problem}" if problem else ""))
