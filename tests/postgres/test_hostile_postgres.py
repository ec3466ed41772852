"""PostgreSQL failures told apart: a lost read is retried, a permanent refusal fails at once.

- ``pg_terminate_backend`` on the connection of a read in progress (arranged, not
  timed: the read waits on a lock the test holds until the backend is gone): the
  read is answered from another connection. Teeth: with one attempt it fails.
- A database or role that does not exist, a closed port, an unknown host, a bad
  sslmode: refused in well under the 30 s connect timeout the pool used to spend
  retrying them.
"""

from __future__ import annotations

import threading
import time
import uuid

import psycopg
import pytest
from click.testing import CliRunner
from pg_server import drop_schema, fresh_schema
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from fencepost.cli import main
from fencepost.impl import postgres
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.postgres import PostgresStore, open_postgres
from fencepost.impl.postgres_schema import quote_ident
from fencepost.impl.records import Membership, PublicationRecord
from fencepost.impl.stores import IndefiniteStoreError, StoreOpenError

pytestmark = pytest.mark.postgres

MEMBERSHIP = Membership(1, "q", {"A": "offsets"}, {"offsets": IntegerOrder("offsets", True)})


def _read_while_terminated(pg_dsn: str, schema: str) -> object:
    """Start a read, kill its backend while it runs, let it finish; what it returned/raised."""
    name = f"victim-{uuid.uuid4().hex[:8]}"
    store = PostgresStore(pg_dsn, schema=schema, application_name=name)
    store.create_stream("s", MEMBERSHIP)
    outcome: dict[str, object] = {}

    def read() -> None:
        try:
            outcome["value"] = store.read_publication("s")
        except Exception as exc:
            outcome["value"] = exc

    with (
        psycopg.connect(pg_dsn, connect_timeout=10) as locker,
        psycopg.connect(pg_dsn, autocommit=True, connect_timeout=10) as admin,
    ):
        locker.execute(f"LOCK TABLE {quote_ident(schema)}.publications IN ACCESS EXCLUSIVE MODE")
        reader = threading.Thread(target=read)
        reader.start()
        victims: list[tuple[int]] = []
        deadline = time.monotonic() + 60
        while not victims and time.monotonic() < deadline:
            victims = admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s "
                "AND wait_event_type = 'Lock'",
                (name,),
            ).fetchall()
            time.sleep(0.01)
        assert victims, "the read never reached the server"
        admin.execute("SELECT pg_terminate_backend(%s)", (victims[0][0],))
        locker.commit()  # the lock goes; a retried read can now run
    reader.join(60)
    store.close()
    return outcome.get("value")


def test_a_read_whose_backend_is_terminated_is_retried(pg_dsn: str, pg_schema: str) -> None:
    assert _read_while_terminated(pg_dsn, pg_schema) == PublicationRecord(1)


def test_teeth_without_retries_the_same_read_is_lost(
    pg_dsn: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres, "READ_ATTEMPTS", 1)
    assert isinstance(_read_while_terminated(pg_dsn, pg_schema), IndefiniteStoreError)


def _changed(dsn: str, **params: str) -> str:
    base = conninfo_to_dict(dsn)
    base.update(params)
    return make_conninfo("", **base)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"dbname": "fencepost_no_such_db"}, "the database or the role does not exist"),
        ({"user": "fencepost_no_such_role"}, "the database or the role does not exist"),
        ({"host": "127.0.0.1", "port": "1"}, "nothing listens on that host and port"),
        ({"host": "no-such-host.invalid"}, "the host name does not resolve"),
        ({"sslmode": "bogus"}, "the sslmode is not one libpq knows"),
    ],
    ids=["database", "role", "port", "dns", "sslmode"],
)
def test_permanent_refusals_fail_at_once(pg_dsn: str, change: dict[str, str], says: str) -> None:
    # The pool used to retry these for the whole connect timeout, then report a timeout.
    # Told apart by what is said, not by how long it took: a refusal retried would end,
    # after the (long) timeout, as a timeout, without "retrying cannot help".
    with pytest.raises(StoreOpenError) as info:
        PostgresStore(_changed(pg_dsn, **change), schema=fresh_schema(pg_dsn), connect_timeout=120)
    assert says in str(info.value) and "retrying cannot help" in str(info.value)


def test_a_repeated_or_empty_schema_parameter_is_refused(pg_dsn: str) -> None:
    schema = fresh_schema(pg_dsn)
    url = make_conninfo("", **conninfo_to_dict(pg_dsn))
    try:
        with pytest.raises(StoreOpenError, match="given 2 times"):
            open_postgres(
                f"postgresql://?{url.replace(' ', '&')}&fencepost_schema={schema}"
                f"&fencepost_schema=other"
            )
        with pytest.raises(StoreOpenError, match="1 to 63 characters"):
            open_postgres(f"postgresql://?{url.replace(' ', '&')}&fencepost_schema=")
    finally:
        drop_schema(pg_dsn, schema)


def test_the_demo_exits_2_on_a_permanent_refusal(pg_dsn: str) -> None:
    bad = _changed(pg_dsn, dbname="fencepost_no_such_db")
    result = CliRunner().invoke(main, ["demo", "--db", f"postgresql://?{bad.replace(' ', '&')}"])
    assert result.exit_code == 2, result.output
    assert "does not exist" in result.output and "Traceback" not in result.output
