"""The contract configures the runtime: orders, memberships, claim checks, resume positions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from review_data import DATA, MINIMAL, minimal_variant, variant

from fencepost.contracts import (
    ContractError,
    Encoding,
    decode,
    encode,
    load_contract,
    parse_contract,
    read_contract_file,
    shipped_contract_names,
)
from fencepost.impl.cuts import Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.merge import Withheld, WithheldReason, merge
from fencepost.impl.orders import IntegerOrder, StringOrder
from fencepost.impl.provider import Claim
from fencepost.impl.records import Checkpoint, Finality
from fencepost.review.findings import Severity
from fencepost.review.rules import review_contract


def checkpoint(partition: str, cut: Cut) -> Checkpoint:
    return Checkpoint(partition, cut, None, 1, "q", 1, Finality.FINAL)


def test_orders_follow_the_contract() -> None:
    assert load_contract("kafka").order() == IntegerOrder("kafka-offset", True)
    assert load_contract("kinesis").order() == IntegerOrder("kinesis-sequence", False)
    with pytest.raises(ContractError) as info:
        load_contract("stripe").order()
    assert info.value.field == "order.comparable"
    assert info.value.line is not None


def test_membership_withholds_across_per_partition_orders() -> None:
    kafka = load_contract("kafka")
    membership = kafka.membership(1, "q", ["p0", "p1"])
    result = merge(membership, [checkpoint("p0", Cut.before(5)), checkpoint("p1", Cut.before(9))])
    assert isinstance(result, Withheld) and result.reason is WithheldReason.INCOMPARABLE
    # teeth: the same vector on a shared-order provider merges to the minimum
    spanner = load_contract("spanner")
    shared = spanner.membership(1, "q", ["a", "b"])
    assert merge(shared, [checkpoint("a", Cut.through(5)), checkpoint("b", Cut.through(9))]) == (
        Cut.through(5)
    )
    assert set(shared.orders) == {"spanner-commit-timestamp"}


def test_membership_refuses_bad_partition_names() -> None:
    with pytest.raises(InvalidValue):
        load_contract("spanner").membership(1, "q", ["a", ""])


def test_single_partition_membership_of_a_per_partition_provider_merges() -> None:
    kafka = load_contract("kafka")
    membership = kafka.membership(2, "q", ["only"])
    cp = Checkpoint("only", Cut.before(7), None, 1, "q", 2, Finality.FINAL)
    assert merge(membership, [cp]) == Cut.before(7)


@pytest.mark.parametrize(
    ("provider", "claim", "value", "cut"),
    [
        ("kafka", "last-stable-offset", 42, Cut.before(42)),
        ("kinesis", "shard-end", "4960000000000000000017", Cut.through(4960000000000000000017)),
        ("dynamodb-streams", "EndingSequenceNumber", "000000000000000000000123", Cut.through(123)),
        ("spanner", "heartbeat", "1970-01-01T00:00:01.5Z", Cut.through(1_500_000_000)),
        (
            "cockroachdb",
            "resolved",
            "1700000000000000000.0000000002",
            Cut.before(1700000000000000000 * 10**10 + 2),
        ),
        ("postgresql", "confirmed_flush_lsn", "16/B374D848", Cut.before((0x16 << 32) | 0xB374D848)),
        ("mongodb", "post-batch-resume-token", [1700000000, 3], Cut.before((1700000000 << 32) | 3)),
        ("elasticsearch", "pit-complete", [5, 9], Cut.through(5 * 2**64 + 9)),
        ("postgres-outbox", "snapshot-xmin", 21474836583, Cut.before(21474836583)),
    ],
)
def test_final_claims_certify_as_the_boundary_marks(
    provider: str, claim: str, value: object, cut: Cut
) -> None:
    decision = load_contract(provider).check_claim(claim, value)
    assert decision.final, decision.reason
    assert decision.cut == cut
    assert decision.as_claim() == Claim(cut, True)


def test_caught_up_and_observed_claims_never_certify() -> None:
    kinesis = load_contract("kinesis")
    decision = kinesis.check_claim("MillisBehindLatest", "17")
    assert not decision.final and "caught-up" in decision.reason
    assert decision.as_claim() == Claim(Cut.through(17), False)
    assert not load_contract("event-hubs").check_claim("checkpoint", 3).final
    assert not load_contract("kafka").check_claim("position", 3).final


def test_bad_contracts_are_refused_at_runtime() -> None:
    for name in (
        "timestamp-successor-bad",
        "resolved-through-bad",
        "clustertime-through-bad",
        "kinesis-caught-up-bad",
        "outbox-greatest-id-bad",
    ):
        contract = read_contract_file(DATA / f"{name}.toml")
        anchor = contract.order_facts.example
        decisions = [contract.check_claim(c, anchor) for c in contract.claims]
        assert decisions and not any(d.final for d in decisions), name


def test_runtime_and_review_agree_on_every_claim() -> None:
    """A certifying claim is final at runtime exactly when the review finds no error on it.

    Except one kind: the runtime takes the contract's facts as declared (it cannot read the
    sources), so a declaration without evidence (``declaration-unsupported``) is the review's
    question, not a refusal at runtime.
    """
    contracts = [load_contract(n) for n in shipped_contract_names()]
    contracts += [read_contract_file(p) for p in sorted(DATA.glob("*.toml"))]
    checked = 0
    for contract in contracts:
        errors = {
            f.where.split(".")[1]
            for f in review_contract(contract)
            if f.severity is Severity.ERROR
            and f.where.startswith("claims.")
            and f.rule != "declaration-unsupported"
        }
        blanket = any(
            f.severity is Severity.ERROR and f.rule == "opaque-coordinates"
            for f in review_contract(contract)
        )
        anchor = contract.order_facts.example or 100
        for name, claim in contract.claims.items():
            if not claim.certifies:
                continue
            checked += 1
            final = contract.check_claim(name, anchor).final
            assert final == (name not in errors and not blanket), (contract.origin, name)
    assert checked >= 15


def test_unknown_claim_names_suggest() -> None:
    with pytest.raises(InvalidValue) as info:
        load_contract("kinesis").check_claim("shard-closd", "1")
    assert "did you mean 'shard-closed'?" in info.value.problem


def test_claim_values_are_decoded_strictly() -> None:
    spanner = load_contract("spanner")
    for bad in (True, 1.5, "2024-02-30T00:00:00Z", "yesterday"):
        with pytest.raises(InvalidValue):
            spanner.check_claim("heartbeat", bad)


def test_resume_positions() -> None:
    kafka = load_contract("kafka")
    assert kafka.resume_from(Cut.before(10)).at == 10  # type: ignore[union-attr]
    through = kafka.resume_from(Cut.through(10))
    assert through is not None and through.at == 11 and not through.redelivers
    assert kafka.resume_from(Cut.nothing()) is None
    kinesis = load_contract("kinesis")
    position = kinesis.resume_from(Cut.before(7))
    assert position is not None and position.boundary == "AT_SEQUENCE_NUMBER"
    spanner = load_contract("spanner")
    again = spanner.resume_from(Cut.through(7))
    assert again is not None and again.boundary == "start_timestamp" and again.redelivers
    with pytest.raises(ContractError) as info:
        load_contract("cockroachdb").resume_from(Cut.before(7))
    assert "resume" in info.value.field
    with pytest.raises(ContractError):  # exclusive cursor at a before cut: would lose rows
        read_contract_file(DATA / "cockroach-cursor-bad.toml").resume_from(Cut.before(7))
    with pytest.raises(InvalidValue):
        kafka.resume_from(Cut.before("ten"))


def test_manufactured_successor_resume_is_refused() -> None:
    contract = minimal_variant(("successor = true", "successor = false"))
    with pytest.raises(ContractError) as info:
        contract.resume_from(Cut.through(10))
    assert "exact successor" in info.value.problem
    assert contract.resume_from(Cut.before(10)) is not None


def test_string_orders_build() -> None:
    stripe_like = minimal_variant(
        ('kind = "integer"\nsuccessor = true', 'kind = "string"\nsuccessor = false'),
        ("example = 100", 'example = "m"'),
        ('[resume.through]\nboundary = "from"\nadjust = "successor"', ""),
    )
    assert stripe_like.order() == StringOrder("ledger-offset")
    assert stripe_like.check_claim("durable", "evt_5").cut == Cut.before("evt_5")


# -- encodings ---------------------------------------------------------------


def test_known_encodings() -> None:
    assert decode(Encoding.LSN, "16/B374D848") == 0x16B374D848
    assert decode(Encoding.HLC, "1589215296435678000.0000000001") == 15892152964356780000000000001
    assert decode(Encoding.RFC3339, "1970-01-01T01:00:00+01:00") == 0
    assert decode(Encoding.RFC3339, "2024-05-01T12:00:00.000000001Z") == (
        int(datetime(2024, 5, 1, 12, tzinfo=UTC).timestamp()) * 10**9 + 1
    )
    assert decode(Encoding.BSON_TIMESTAMP, {"t": 2, "i": 1}) == (2 << 32) | 1
    assert decode(Encoding.PAIR64, [-1, 0]) == -(2**64)
    assert decode(Encoding.INTEGER, "0042") == 42
    toml_datetime = datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)  # as tomllib parses it
    assert decode(Encoding.RFC3339, toml_datetime) == decode(
        Encoding.RFC3339, "2024-05-01T12:00:00.25Z"
    )
    with pytest.raises(InvalidValue):
        decode(Encoding.RFC3339, datetime(2024, 5, 1))  # no zone: ambiguous


@pytest.mark.parametrize(
    ("encoding", "value"),
    [
        (Encoding.INTEGER, True),
        (Encoding.INTEGER, 1.0),
        (Encoding.INTEGER, "4 2"),
        (Encoding.LSN, "16-B374D848"),
        (Encoding.LSN, "123456789/0"),
        (Encoding.HLC, "15.123"),
        (Encoding.RFC3339, "2024-05-01 12:00:00"),
        (Encoding.BSON_TIMESTAMP, [1, 2, 3]),
        (Encoding.BSON_TIMESTAMP, [2**32, 0]),
        (Encoding.PAIR64, [1, 2**64]),
        (Encoding.PAIR64, [1, "2"]),
        (Encoding.STRING, 5),
        (Encoding.STRING, "\ud800"),
    ],
)
def test_bad_encoded_values(encoding: Encoding, value: object) -> None:
    with pytest.raises(InvalidValue):
        decode(encoding, value)


@given(st.integers(min_value=0, max_value=2**64 - 1), st.integers(min_value=0, max_value=2**64 - 1))
def test_integer_encodings_round_trip_and_keep_order(a: int, b: int) -> None:
    for encoding in (Encoding.LSN, Encoding.HLC, Encoding.BSON_TIMESTAMP, Encoding.PAIR64):
        for x in (a, b):
            shown = encode(encoding, x)
            value: object = shown
            if encoding is Encoding.BSON_TIMESTAMP:
                t, i = shown.removeprefix("Timestamp(").removesuffix(")").split(", ")
                value = [int(t), int(i)]
            elif encoding is Encoding.PAIR64:
                value = [int(v) for v in shown.strip("[]").split(", ")]
            assert decode(encoding, value) == x


@given(st.integers(min_value=0, max_value=253402300799 * 10**9))
def test_rfc3339_round_trip(x: int) -> None:
    assert decode(Encoding.RFC3339, encode(Encoding.RFC3339, x)) == x


def test_the_runtime_refuses_a_final_claim_the_contract_says_rows_commit_behind() -> None:
    text = variant(MINIMAL.read_text(), ("max_delay = 0", "max_delay = 5"))
    late = parse_contract(text)
    decision = late.check_claim("durable", 100)
    assert not decision.final and "cursor.horizon" in decision.reason
    horizon = parse_contract(
        text + '\n[cursor.horizon]\nboundary = "next-offset"\ncite = ["ledger-docs"]\n'
    )
    assert horizon.check_claim("durable", 100).final
