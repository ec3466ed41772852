"""Loading contracts: typed data, and errors that name the file, the line and the field."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from review_data import MINIMAL, variant

from fencepost.contracts import (
    Adjust,
    ContractError,
    ContractErrors,
    CoordinateKind,
    Delay,
    Evidence,
    Guarantee,
    Surface,
    Ties,
    UnknownContract,
    every_error,
    load_contract,
    parse_contract,
    read_contract_file,
    shipped_contract_names,
)
from fencepost.impl.cuts import Endpoint
from fencepost.inputs.tomllines import format_path, index_lines, parse_path

REQUIRED_PROVIDERS = {
    "kafka",
    "kinesis",
    "dynamodb-streams",
    "spanner",
    "cockroachdb",
    "postgresql",
    "mongodb",
    "event-hubs",
    "stripe",
    "pubsub",
    "elasticsearch",
}

BASE = MINIMAL.read_text(encoding="utf-8")


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the first line containing ``needle`` (computed by the test)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in text")


def error_of(text: str) -> ContractError:
    with pytest.raises(ContractError) as info:
        parse_contract(text, "c.toml")
    return info.value


def test_every_required_provider_ships_and_loads() -> None:
    names = set(shipped_contract_names())
    assert names >= REQUIRED_PROVIDERS
    for name in names:
        contract = load_contract(name)
        assert contract.provider.name == name
        assert contract.origin == f"contracts/{name}.toml"
        # a contract with no source is an example whose every fact is assumed
        facts = [contract.order_facts.assumed, contract.partitions.assumed]
        facts += [b.assumed for b in contract.boundaries.values()]
        facts += [c.assumed for c in contract.claims.values()]
        assert contract.sources or all(facts), f"{name} cites no sources"


def test_shipped_urls_are_https_and_sources_are_all_cited() -> None:
    for name in shipped_contract_names():
        contract = load_contract(name)
        for source in contract.sources.values():
            assert source.url is None or source.url.startswith("https://"), source
        text = (Path(__file__).parents[2] / "contracts" / f"{name}.toml").read_text()
        for sid in contract.sources:
            # every source is named by some cite list, or it is dead weight
            assert re.search(rf'"{re.escape(sid)}"', text), f"{name}: source {sid} never cited"


def test_minimal_contract_typed_data() -> None:
    c = parse_contract(BASE, "m.toml")
    assert c.order_facts.kind is CoordinateKind.INTEGER and c.order_facts.successor
    assert c.boundaries["next-offset"].surface is Surface.RECORD
    assert c.boundaries["from"].cut is Endpoint.BEFORE
    claim = c.claims["durable"]
    assert claim.guarantee is Guarantee.FINAL and claim.as_kind is Endpoint.BEFORE
    assert c.resume[Endpoint.THROUGH].adjust is Adjust.SUCCESSOR
    assert c.line_of(("claims", "durable", "guarantee")) == line_of(BASE, 'guarantee = "final"')


def test_toml_syntax_error_names_the_line() -> None:
    text = variant(BASE, ('resolution = "one offset per entry"', "resolution = one offset"))
    err = error_of(text)
    assert err.line == line_of(text, "resolution = one offset")
    assert str(err).startswith(f"c.toml:{err.line}: TOML syntax:")


def test_unknown_top_level_field_suggests_the_close_name() -> None:
    text = variant(BASE, ("[partitions]", "[partitons]"))
    err = error_of(text)
    assert err.field == "partitons"
    assert "did you mean 'partitions'?" in err.problem
    assert err.line == line_of(text, "[partitons]")
    # and, in the same run, what the typo leaves missing
    assert [e.field for e in every_error(err)] == ["partitons", "partitions"]


def test_unknown_field_in_a_named_table_names_its_line() -> None:
    text = variant(
        BASE,
        (
            'meaning = "read from this offset (inclusive)"',
            'meaning = "read from this offset (inclusive)"\nsurfce = "x"',
        ),
    )
    err = error_of(text)
    assert err.field == "boundaries.from.surfce"
    assert "did you mean 'surface'?" in err.problem
    assert err.line == line_of(text, 'surfce = "x"')
    assert str(err).startswith(f"c.toml:{err.line}: boundaries.from.surfce: unknown field")


@pytest.mark.parametrize(
    ("old", "new", "field", "needle"),
    [
        ("successor = true", 'successor = "yes"', "order.successor", 'successor = "yes"'),
        ("successor = true", "successor = 1", "order.successor", "successor = 1"),
        ('version = "example 1"', "version = true", "provider.version", "version = true"),
        ('guarantee = "final"', 'guarantee = "finall"', "claims.durable.guarantee", "finall"),
        (
            'cut = "before"\nmeaning = "every',
            'cut = "after"\nmeaning = "every',
            "boundaries.next-offset.cut",
            'cut = "after"',
        ),
        ('name = "ledger"', 'name = "Ledger Log"', "provider.name", 'name = "Ledger Log"'),
        (
            'cite = ["ledger-docs"]\n\n[boundaries.next-offset]',
            'cite = ["ledger-dox"]\n\n[boundaries.next-offset]',
            "order.cite",
            "ledger-dox",
        ),
        (
            'cite = ["ledger-docs"]\n\n[boundaries.next-offset]',
            'cite = "ledger-docs"\n\n[boundaries.next-offset]',
            "order.cite",
            'cite = "ledger-docs"',
        ),
        ("example = 100", "example = nan", "order.example", "example = nan"),
        ("example = 100", 'example = "12a"', "order.example", 'example = "12a"'),
        ("example = 100", "example = true", "order.example", "example = true"),
        (
            'boundary = "next-offset"',
            'boundary = "from"',
            "claims.durable.boundary",
            'boundary = "from"',
        ),
        (
            '[resume.before]\nboundary = "from"',
            '[resume.before]\nboundary = "next-offset"  # a record',
            "resume.before.boundary",
            "# a record",
        ),
        (
            'boundary = "next-offset"',
            'boundary = "next-ofset"',
            "claims.durable.boundary",
            "next-ofset",
        ),
        (
            "shared_positions = false",
            'shared_positions = false\nties = "atomic"',
            "order.ties",
            'ties = "atomic"',
        ),
        ('kind = "integer"', 'kind = "int"', "order.kind", 'kind = "int"'),
        (
            'epochs = "none"',
            'epochs = "none"\nlineage = "parents-first"',
            "membership.lineage",
            "lineage =",
        ),
        ('overlap = "possible"', 'overlap = "sometimes"', "pagination.overlap", "sometimes"),
    ],
)
def test_bad_values_are_located(old: str, new: str, field: str, needle: str) -> None:
    text = variant(BASE, (old, new))
    err = error_of(text)
    assert err.field == field
    assert err.line == line_of(text, needle)
    assert str(err).startswith(f"c.toml:{err.line}: {field}: ")


def test_did_you_mean_for_enum_values() -> None:
    err = error_of(variant(BASE, ('guarantee = "final"', 'guarantee = "caughtup"')))
    assert "did you mean 'caught-up'?" in err.problem


def test_missing_required_field_points_at_its_table() -> None:
    text = variant(BASE, ('resolution = "one offset per entry"\n', ""))
    err = error_of(text)
    assert err.field == "order.resolution"
    assert err.problem == "missing required field"
    assert err.line == line_of(text, "[order]")


def test_missing_required_table() -> None:
    text = variant(BASE, ('[pagination]\ntoken = "position"', '[paging]\ntoken = "position"'))
    err = error_of(text)
    assert err.field == "paging"  # the unknown table is reported first, with a suggestion
    assert "did you mean 'pagination'?" in err.problem
    (_, missing) = every_error(err)
    assert missing.field == "pagination" and missing.problem == "missing required field"


def test_every_mistake_of_a_file_is_reported_at_once() -> None:
    """Three mistakes in three places (a choice, an unknown key, a citation): all three,
    each with its own line, in the order of the file; the first fix is not a precondition
    for seeing the second."""
    text = variant(
        BASE,
        ('guarantee = "final"', 'guarantee = "finale"'),
        ('meaning = "read from this offset (inclusive)"', 'meening = "read from this offset"'),
        (
            'unit = "log"\norder = "shared"\nfrontier = "scalar"\ncite = ["ledger-docs"]',
            'unit = "log"\norder = "shared"\nfrontier = "scalar"\ncite = ["ledger-doc"]',
        ),
    )
    err = error_of(text)
    errors = every_error(err)
    assert isinstance(err, ContractErrors)
    assert [(e.field, e.line) for e in errors] == [
        ("boundaries.from.meening", line_of(text, "meening")),
        ("boundaries.from.meaning", line_of(text, "[boundaries.from]")),
        ("claims.durable.guarantee", line_of(text, '"finale"')),
        ("partitions.cite", line_of(text, '"ledger-doc"]')),
    ]
    assert "did you mean 'final'?" in errors[2].problem
    assert "did you mean 'ledger-docs'?" in errors[3].problem
    assert str(err).count("\n") == 3 and str(err).startswith("c.toml:")


def test_two_mistakes_in_one_table_are_both_reported() -> None:
    text = variant(
        BASE,
        ('guarantee = "final"', 'guarantee = "finale"'),
        ('as = "before"', 'as = "thru"'),
    )
    assert [e.field for e in every_error(error_of(text))] == [
        "claims.durable.guarantee",
        "claims.durable.as",
    ]


def test_a_broken_boundary_is_not_also_reported_as_unknown_by_its_claims() -> None:
    text = variant(BASE, ('surface = "record"', 'surface = "recrod"'))
    assert [e.field for e in every_error(error_of(text))] == ["boundaries.next-offset.surface"]


def test_string_orders_refuse_successor_and_adjust() -> None:
    text = variant(
        BASE,
        ('kind = "integer"\nsuccessor = true', 'kind = "string"\nsuccessor = false'),
        ("example = 100", 'example = "m"'),
    )
    err = error_of(text)
    assert err.field == "resume.through.adjust"
    assert "string coordinates cannot be adjusted" in err.problem
    err = error_of(variant(BASE, ('kind = "integer"', 'kind = "string"')))
    assert err.field == "order.successor"


def test_encoding_must_fit_the_kind() -> None:
    err = error_of(variant(BASE, ('kind = "integer"', 'kind = "integer"\nencoding = "string"')))
    assert err.field == "order.encoding"


def test_unconfirmed_field_must_exist() -> None:
    text = BASE + '\n[[unconfirmed]]\nfield = "order.sucessor"\nquestion = "q"\n'
    err = error_of(text)
    assert err.field == "unconfirmed[0].field"
    assert err.line == line_of(text, 'field = "order.sucessor"')
    ok = parse_contract(BASE + '\n[[unconfirmed]]\nfield = "order.successor"\nquestion = "q"\n')
    assert ok.unconfirmed[0].field == ("order", "successor")


def test_quoted_boundary_names_with_dots_are_located() -> None:
    text = (Path(__file__).parents[2] / "contracts" / "spanner.toml").read_text()
    broken = variant(
        text,
        (
            'cut = "through"\nmeaning = "all records of the partition',
            'cut = "thru"\nmeaning = "all records of the partition',
        ),
    )
    err = error_of(broken)
    assert err.field == 'boundaries."HeartbeatRecord.timestamp".cut'
    assert err.line == line_of(broken, 'cut = "thru"')


def test_files_missing_unreadable_or_not_utf8(tmp_path: Path) -> None:
    with pytest.raises(ContractError) as info:
        read_contract_file(tmp_path / "absent.toml")
    assert info.value.line is None and "no such file" in str(info.value)
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(b'[provider]\nname = "caf\xe9"\n')
    with pytest.raises(ContractError) as info:
        load_contract(str(bad))
    assert info.value.line == 2 and "not UTF-8" in str(info.value)
    with pytest.raises(ContractError) as info:
        load_contract(str(tmp_path) + "/")
    assert "directory" in str(info.value) or "no such file" in str(info.value)


def test_unknown_shipped_name_suggests() -> None:
    with pytest.raises(UnknownContract) as info:
        load_contract("kafak")
    assert info.value.suggestion == "kafka"
    assert "kafka" in str(info.value)


def test_line_index_handles_multiline_values_and_arrays_of_tables() -> None:
    text = (
        '[provider]\nsummary = """\n[not.a.table]\nkey = 1\n"""\nname = "x"\n'
        "list = [\n  1,\n  2,\n]\nafter = 3\n"
        "[[caveats]]\ntext = 'one'\n[[caveats]]\ntext = \"two\"\n"
        '[boundaries."a.b"]\ncut = "before"\n'
    )
    lines = index_lines(text)
    assert lines.line_of(("provider", "name")) == 6
    assert lines.line_of(("provider", "after")) == 11
    assert ("not", "a", "table") not in lines.lines
    assert lines.line_of(("caveats", 1, "text")) == 15
    assert lines.line_of(("boundaries", "a.b", "cut")) == 17
    assert lines.line_of(("boundaries", "a.b", "missing")) == 16  # falls back to the table


@given(
    st.lists(
        st.one_of(st.integers(min_value=0, max_value=9), st.text(min_size=1, max_size=8)),
        min_size=1,
        max_size=5,
    ).filter(lambda parts: isinstance(parts[0], str))
)
def test_paths_round_trip(parts: list[int | str]) -> None:
    assert parse_path(format_path(tuple(parts))) == tuple(parts)


def test_infinity_is_never_a_coordinate() -> None:
    err = error_of(variant(BASE, ("example = 100", "example = inf")))
    assert err.field == "order.example"
    assert err.value == math.inf


# --- evidence and the [cursor] facts ----------------------------------------------------------

TIME_ORDER = (
    'kind = "integer"\nsuccessor = true\nresolution = "one offset per entry"',
    'kind = "integer"\nsuccessor = false\nresolution = "nanoseconds"\nencoding = "rfc3339"',
)
EXAMPLE_TIME = ("example = 100", 'example = "2024-05-01T12:00:00Z"')
NO_SUCCESSOR_RESUME = ('[resume.through]\nboundary = "from"\nadjust = "successor"\n', "")


#: The template without its [cursor] tables, so a test can write its own.
NO_CURSOR = BASE[: BASE.index("# What a sync tool")]


def with_cursor(cursor: str, *, time: bool = True) -> str:
    edits = [TIME_ORDER, EXAMPLE_TIME, NO_SUCCESSOR_RESUME] if time else []
    return variant(NO_CURSOR, *edits) + "\n" + cursor


def test_cursor_facts_with_durations_on_a_timestamp_order() -> None:
    contract = parse_contract(
        with_cursor(
            '[cursor]\nfield = "updated_at"\n'
            '[cursor.late_commits]\nmax_delay = "10s"\ncite = ["ledger-docs"]\n'
            '[cursor.precision]\nstored = "1ms"\nquery = "1s"\nassumed = true\n'
            '[cursor.mutability]\nmutable = "unknown"\n'
            "[cursor.new_partitions]\nold_rows = true\n"
            '[cursor.horizon]\nboundary = "next-offset"\nassumed = true\n'
            "[cursor.reads]\nsnapshot = false\n"
        ),
        "c.toml",
    )
    c = contract.cursor
    assert c.field == "updated_at"
    assert c.late_commits is not None and c.late_commits.max_delay == 10 * 10**9
    assert c.late_commits.evidence == Evidence(("ledger-docs",), False)
    assert c.precision is not None and (c.precision.stored, c.precision.query) == (10**6, 10**9)
    assert c.precision.finer and c.precision.evidence.assumed
    assert c.mutability is not None and c.mutability.mutable is None
    assert c.new_partitions is not None and c.new_partitions.old_rows is True
    assert c.horizon is not None and c.horizon.boundary == "next-offset"
    assert c.reads is not None and c.reads.snapshot is False


def test_late_commits_unbounded_unknown_and_integer_bounds() -> None:
    for word in ("unbounded", "unknown"):
        c = parse_contract(with_cursor(f'[cursor.late_commits]\nmax_delay = "{word}"\n')).cursor
        assert c.late_commits is not None and c.late_commits.delay is Delay(word)
        assert c.late_commits.max_delay is None and c.late_commits.possible is (word != "unknown")
    c = parse_contract(with_cursor("[cursor.late_commits]\nmax_delay = 5\n", time=False)).cursor
    assert c.late_commits is not None and c.late_commits.max_delay == 5
    zero = parse_contract(with_cursor("[cursor.late_commits]\nmax_delay = 0\n")).cursor
    assert zero.late_commits is not None and not zero.late_commits.possible


@pytest.mark.parametrize(
    ("cursor", "time", "field", "problem"),
    [
        ("[cursor.late_commits]\nmax_delay = 10\n", True, "max_delay", "with its unit"),
        ('[cursor.late_commits]\nmax_delay = "10 sec"\n', True, "max_delay", "with its unit"),
        ('[cursor.late_commits]\nmax_delay = "10s"\n', False, "max_delay", "timestamp orders"),
        ('[cursor.precision]\nstored = "0.5ns"\nquery = "1s"\n', True, "stored", "nanoseconds"),
        ('[cursor.mutability]\nmutable = "yes"\n', True, "mutable", '"unknown"'),
        ('[cursor.horizon]\nboundary = "from"\n', True, "boundary", "is a parameter"),
        ('[cursor.reads]\nsnapshot = true\ncite = "ledger-docs"\n', True, "cite", "source ids"),
        (
            '[cursor.late_commits]\nmax_delay = "1s"\ncite = ["ledger-docs"]\nassumed = true\n',
            True,
            "assumed",
            "not both",
        ),
        ('[cursor.late_commit]\nmax_delay = "1s"\n', True, "late_commit", "late_commits"),
    ],
)
def test_cursor_mistakes_name_the_field(cursor: str, time: bool, field: str, problem: str) -> None:
    err = error_of(with_cursor(cursor, time=time))
    assert err.field.startswith("cursor.") and err.field.endswith(field), err
    assert problem in str(err)


def test_a_fact_can_carry_its_own_evidence() -> None:
    text = variant(
        BASE,
        (
            "shared_positions = false",
            'shared_positions = true\nties = { value = "atomic", cite = ["ledger-docs"] }',
        ),
        ("successor = true", "successor = { value = true, assumed = true }"),
    )
    order = parse_contract(text).order_facts
    assert order.ties is Ties.ATOMIC and order.successor is True
    assert order.evidence_of("ties", own_only=True) == Evidence(("ledger-docs",), False)
    assert order.evidence_of("successor") == Evidence((), True)
    # without its own evidence, ties has none: the order's cite documents the coordinate
    plain = parse_contract(
        variant(BASE, ("shared_positions = false", 'shared_positions = true\nties = "atomic"'))
    )
    assert plain.order_facts.evidence_of("ties", own_only=True) == Evidence()
    assert plain.order_facts.evidence_of("shared_positions").cite == ("ledger-docs",)


def test_a_fact_table_without_evidence_is_refused() -> None:
    err = error_of(variant(BASE, ("successor = true", "successor = { value = true }")))
    assert err.field == "order.successor" and "cite" in err.problem


def test_assumed_replaces_cite_in_every_fact_table() -> None:
    text = variant(
        BASE,
        (
            'statement = "entries before the next offset are durable and will never change"\n'
            'cite = ["ledger-docs"]',
            'statement = "entries before the next offset are durable and will never change"\n'
            "assumed = true",
        ),
    )
    claim = parse_contract(text).claims["durable"]
    assert claim.cite == () and claim.assumed and claim.evidence.supported
