"""fencepost.solver: every Z3 check under a deterministic rlimit, never wall time.

Each point of how Z3's Python API honours the limit (the module's docstring) is
checked here, so an upgrade that changes one is noticed: the limit is per check
and relative, an exhausted limit is ``unknown`` the same way every time and a
generous one proves, a query's consumption does not depend on what ran before it
in the process, models speak of the caller's sorts, and the wall-clock guard is
"machine too slow", never a verdict.
"""

from __future__ import annotations

import pytest
import z3
from click.testing import CliRunner

from fencepost.cli import main
from fencepost.properties import proofs as P
from fencepost.properties.protocol_proof import INITIATION, UNKNOWN, prove_protocol
from fencepost.solver import (
    BUDGETS,
    FLOOR,
    MARGIN,
    RLIMIT_EXHAUSTED,
    SORTS,
    MachineTooSlow,
    Query,
    UnknownFamily,
    UnknownSort,
    budget,
    declare_sort,
    metered,
    wall_guard,
)
from fencepost.solver import _count as _count


def _fermat() -> Query:
    """A query Z3 never decides (cubes, in integers): only a limit ends it."""
    x, y, z = z3.Ints("x y z")
    query = Query("total_preorder", rlimit=10**12)
    query.add(x > 0, y > 0, z > 0, x * x * x + y * y * y == z * z * z)
    return query


def test_the_limit_is_per_check_and_relative() -> None:
    x = z3.Int("x")
    probe = Query("total_preorder", rlimit=10**9)
    probe.add(z3.ForAll([x], z3.Implies(x > 0, x * x > 0)))
    need = probe.check().used
    assert need > 0
    # Three checks on one solver, each needing `need`, under a limit of 1.5 x `need`:
    # every one is decided (a cumulative limit would stop the second).
    query = Query("total_preorder", rlimit=need * 3 // 2)
    query.add(z3.ForAll([x], z3.Implies(x > 0, x * x > 0)))
    answers = [query.check() for _ in range(3)]
    assert all(not a.unknown for a in answers), answers


def test_the_counter_read_through_the_c_api_is_the_python_apis_figure() -> None:
    """``_count`` reads ``rlimit count`` through Z3's C API (cheaper); it must be the
    figure the Python API's ``Statistics`` gives, before and after a check."""
    query = Query("total_preorder", rlimit=10**12)
    x, y = z3.Ints("x y")
    query.add(x * x + y * y == 25, x > 0, y > 0)
    before = _count(query.solver)
    assert before == int(query.solver.statistics().get_key_value("rlimit count"))
    answer = query.check()
    assert answer.sat and answer.used > 0
    stats = query.solver.statistics()
    assert _count(query.solver) == int(stats.get_key_value("rlimit count"))
    assert _count(query.solver) >= before + answer.used  # reading the model counts too


def test_an_exhausted_limit_is_unknown_every_time_and_a_generous_one_proves() -> None:
    starved = [P.total_preorder(P.INTEGER_DENSE, rlimit=20_000) for _ in range(2)]
    assert [r.status for r in starved] == [P.Status.UNKNOWN] * 2
    assert [r.detail for r in starved] == [RLIMIT_EXHAUSTED] * 2
    assert starved[0].rlimit_used == starved[1].rlimit_used >= 20_000
    proved = P.total_preorder(P.INTEGER_DENSE)
    assert proved.status is P.Status.PROVED
    assert proved.rlimit_used < budget("total_preorder").rlimit
    # the same for an existence theorem (two checks) and for the protocol's induction
    witness = P.rewrite_unsound(P.STRING_CODE_POINTS, P.RELABEL_BEFORE_AS_THROUGH, rlimit=50)
    assert (witness.status, witness.detail) == (P.Status.UNKNOWN, RLIMIT_EXHAUSTED)
    starved_protocol = prove_protocol("ingest", kinds=(INITIATION,), rlimit=10)
    again = prove_protocol("ingest", kinds=(INITIATION,), rlimit=10)
    unknown = [o.obligation.name for o in starved_protocol if o.status == UNKNOWN]
    assert unknown and unknown == [o.obligation.name for o in again if o.status == UNKNOWN]
    assert {o.detail for o in starved_protocol if o.status == UNKNOWN} == {RLIMIT_EXHAUSTED}
    assert {o.status for o in prove_protocol("ingest", kinds=(INITIATION,))} == {"proved"}


def test_the_global_rlimit_is_never_set() -> None:
    P.before_below_through(P.INTEGER_SUCCESSOR)
    assert z3.get_param("rlimit") == "0"


def test_consumption_does_not_depend_on_what_ran_before() -> None:
    def used() -> tuple[int, list[int]]:
        theorem = P.total_preorder(P.INTEGER_DENSE).rlimit_used
        protocol = [o.rlimit_used for o in prove_protocol("ingest", kinds=(INITIATION,))]
        return theorem, protocol

    before = used()
    # What used to change it: fresh names made in the main context, and models
    # translated back into it (each raises the main context's fresh-name counter).
    for _ in range(500):
        z3.FreshConst(z3.IntSort())
    assert P.rewrite_unsound(P.STRING_CODE_POINTS, P.RELABEL_BEFORE_AS_THROUGH).witness
    assert used() == before


def test_a_model_speaks_of_the_callers_sorts() -> None:
    reader = declare_sort("Reader")
    a, b = z3.Consts("reader.a reader.b", reader)
    rank = z3.Function("rank", reader, z3.IntSort())
    query = Query("review.witness")
    query.add(z3.Distinct(a, b))
    query.add(rank(a) == 5, rank(b) == 2)  # a second text, after the first
    answer = query.check()
    assert answer.sat
    assert answer.model.eval(rank(a)).as_long() == 5
    assert answer.model.eval(rank(b)).as_long() == 2
    assert len(answer.model.get_universe(reader)) == 2


def test_a_sort_or_family_missing_from_its_table_is_refused_by_name() -> None:
    with pytest.raises(UnknownSort, match=r"fencepost\.solver\.SORTS"):
        declare_sort("Broker")
    with pytest.raises(UnknownFamily, match=r"fencepost\.solver\.budgets"):
        Query("no_such_family")
    assert set(SORTS) >= {"Partition", "Publisher", "Reader", "Event", "TotalOrderElement"}


def test_every_limit_is_the_measured_figure_times_the_margin_above_the_floor() -> None:
    for b in BUDGETS.values():
        assert b.measured > 0 and b.margin >= MARGIN and b.measured_on
        assert b.rlimit == max(b.measured * b.margin, FLOOR)


def test_the_wall_clock_guard_is_machine_too_slow_never_a_verdict() -> None:
    query = _fermat()
    with pytest.raises(MachineTooSlow, match="machine too slow") as info, wall_guard(200):
        query.check()
    assert info.value.used < info.value.rlimit


def test_prove_reports_machine_too_slow_with_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    def hopeless() -> P.TheoremResult:
        _fermat().check()
        raise AssertionError("the guard did not stop Z3")

    stuck = P.Theorem("total_preorder.stuck", P.Status.PROVED, hopeless)
    monkeypatch.setattr(P, "THEOREMS", {stuck.name: stuck})
    result = CliRunner().invoke(main, ["prove", "--timeout", "200"])
    assert result.exit_code == 3, result.output
    assert "machine too slow" in result.output
    assert "refuted" not in result.output and "unknown" not in result.output


def test_check_reports_machine_too_slow_with_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    from fencepost.properties import protocol_proof

    def hopeless(**_: object) -> list[object]:
        with wall_guard(200):
            _fermat().check()
        raise AssertionError("the guard did not stop Z3")

    monkeypatch.setattr(protocol_proof, "prove_all", hopeless)
    monkeypatch.setattr(P, "THEOREMS", {})  # only the stuck protocol piece
    for jobs in ("1", "2"):
        result = CliRunner().invoke(main, ["check", "--only", "proofs", "--jobs", jobs])
        assert result.exit_code == 3, result.output
        assert "machine too slow" in result.output
        assert "FAIL" not in result.output


def test_budgets_are_printed() -> None:
    result = CliRunner().invoke(main, ["prove", "--budgets"])
    assert result.exit_code == 0
    for b in BUDGETS.values():
        assert b.family in result.output and f"{b.rlimit:,}" in result.output


def test_metered_keeps_each_familys_largest_check() -> None:
    with metered() as peaks:
        P.before_below_through(P.INTEGER_SUCCESSOR)
        P.before_below_through(P.INTEGER_DENSE)
    assert set(peaks) == {"before_below_through"}
    assert peaks["before_below_through"] == max(
        P.before_below_through(o).rlimit_used for o in (P.INTEGER_SUCCESSOR, P.INTEGER_DENSE)
    )
