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
    CoordinateKind,
    Guarantee,
    Surface,
    UnknownContract,
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
        assert contract.sources, f"{name} cites no sources"


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
