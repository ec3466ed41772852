"""The deliberate bugs of fencepost_example.py: a table of named mutations.

Each entry is a mistake implementers really make, with the level it lives in, the
rule the harness is expected to report, and a mutation that, applied at start-up
(``--bug NAME``), replaces one function, method or table entry of
fencepost_example.py with the mistaken version. The correct program never consults
this file, so it reads straight through; a mutation names exactly what it breaks.

A mutation receives the running module (``m``) and patches it: module-level
functions and tables are looked up at call time, methods through their class.
Several bugs may be switched on together; each wraps what it finds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Bug:
    level: str
    rule: str  # the rule the default budget reports
    what: str  # what the implementer got wrong
    apply: Callable[[Any], None]


BUGS: dict[str, Bug] = {}


def bug(name: str, level: str, rule: str, what: str) -> Callable[[Any], Any]:
    def register(fn: Callable[[Any], None]) -> Callable[[Any], None]:
        BUGS[name] = Bug(level, rule, what, fn)
        return fn

    return register


def apply(names: list[str], m: ModuleType) -> None:
    """Switch the named bugs on in module `m` (fencepost_example, as it runs)."""
    for name in names:
        BUGS[name].apply(m)


def never(*_: object) -> bool:
    return False


# -- algebra: compare (docs/semantics.md sections 1, 2) ----------------------------------


@bug(
    "kind-blind",
    "algebra",
    "algebra_compare",
    "compare on dense orders looks at coordinates only: before x == through x",
)
def _(m: Any) -> None:
    m.KIND_RANK = {"before": 0, "through": 0}


@bug(
    "succ-everywhere",
    "algebra",
    "algebra_compare",
    "compare treats every integer order as having a successor: through x == before x+1 "
    "on timestamps",
)
def _(m: Any) -> None:
    m.has_successor = lambda order: order.kind == "integer"


@bug(
    "utf16",
    "algebra",
    "algebra_compare",
    "strings compared by UTF-16 code units instead of code points",
)
def _(m: Any) -> None:
    correct = m.compare_coordinates

    def compare_coordinates(x: Any, y: Any) -> int:
        if isinstance(x, str) and isinstance(y, str):
            return int(
                correct(
                    x.encode("utf-16-be", "surrogatepass"), y.encode("utf-16-be", "surrogatepass")
                )
            )
        return int(correct(x, y))

    m.compare_coordinates = compare_coordinates


@bug(
    "float-coords",
    "algebra",
    "algebra_compare",
    "integer coordinates compared as IEEE doubles (precision lost above 2^53)",
)
def _(m: Any) -> None:
    correct = m.compare_coordinates

    def compare_coordinates(x: Any, y: Any) -> int:
        if isinstance(x, int) and isinstance(y, int):
            return int(correct(float(x), float(y)))
        return int(correct(x, y))

    m.compare_coordinates = compare_coordinates


@bug(
    "falsy-zero",
    "algebra",
    "algebra_merge",
    "a cut whose coordinate is 0 or '' is taken for nothing (`if not cut.at`)",
)
def _(m: Any) -> None:
    m.is_nothing = lambda cut: cut is None or not cut.at


@bug(
    "string-casefold",
    "algebra",
    "algebra_compare",
    "string coordinates compared ignoring case (casefold): B and b one coordinate, a below B",
)
def _(m: Any) -> None:
    correct = m.compare_coordinates

    def compare_coordinates(x: Any, y: Any) -> int:
        if isinstance(x, str) and isinstance(y, str):
            return int(correct(x.casefold(), y.casefold()))
        return int(correct(x, y))

    m.compare_coordinates = compare_coordinates


@bug(
    "string-nfkc",
    "algebra",
    "algebra_compare",
    "string coordinates compared after NFKC normalisation: e + U+0301 ranked as U+00E9",
)
def _(m: Any) -> None:
    import unicodedata

    correct = m.compare_coordinates

    def compare_coordinates(x: Any, y: Any) -> int:
        if isinstance(x, str) and isinstance(y, str):
            nx, ny = unicodedata.normalize("NFKC", x), unicodedata.normalize("NFKC", y)
            return int(correct(nx, ny))
        return int(correct(x, y))

    m.compare_coordinates = compare_coordinates


@bug(
    "compare-succ-ignored",
    "algebra",
    "algebra_compare",
    "compare ignores the exact successor: through x ranks below before x+1 on offsets",
)
def _(m: Any) -> None:
    m.has_successor = lambda order: False


@bug(
    "nothing-as-zero",
    "algebra",
    "algebra_compare",
    "the cut nothing is compared as before 0 on integer orders (a negative cut ranks below it)",
)
def _(m: Any) -> None:
    correct = m.compare

    def compare(order: Any, a: Any, b: Any) -> int:
        if order.kind == "integer":
            a = m.Cut(0, "before") if a is None else a
            b = m.Cut(0, "before") if b is None else b
        return int(correct(order, a, b))

    m.compare = compare


@bug(
    "int-as-text",
    "algebra",
    "algebra_compare",
    "integer coordinates compared as decimal text: 10 below 9, -1 below -3",
)
def _(m: Any) -> None:
    correct = m.compare_coordinates

    def compare_coordinates(x: Any, y: Any) -> int:
        if isinstance(x, int) and isinstance(y, int):
            return int(correct(str(x), str(y)))
        return int(correct(x, y))

    m.compare_coordinates = compare_coordinates


@bug(
    "sentinel-min",
    "algebra",
    "algebra_merge",
    "the merge minimum starts from a 32-bit sentinel, through 2^31-1, on integer orders",
)
def _(m: Any) -> None:
    correct = m.merge

    def merge(membership: Any, checkpoints: Any) -> Any:
        cut, reason = correct(membership, checkpoints)
        order = membership.common_order()
        if reason is None and order.kind == "integer":
            sentinel = m.Cut(2**31 - 1, "through")
            if m.compare(order, sentinel, cut) < 0:
                return sentinel, None
        return cut, reason

    m.merge = merge


# -- algebra: merge (section 4) ----------------------------------------------------------


@bug(
    "reason-order",
    "algebra",
    "algebra_merge",
    "withheld reasons checked per checkpoint instead of across the whole vector",
)
def _(m: Any) -> None:
    correct = m.merge

    def merge(membership: Any, checkpoints: Any) -> Any:
        vector = m.member_vector(membership, checkpoints)
        for p in membership.partitions:  # the first bad checkpoint decides the reason
            cp = vector.get(p)
            if cp is None:
                return None, "missing_checkpoint"
            if cp.epoch != membership.epoch:
                return None, "epoch_mismatch"
            if cp.scope != membership.scope:
                return None, "scope_mismatch"
            if cp.finality != "final":
                return None, "unsupported_finality"
        return correct(membership, checkpoints)

    m.merge = merge


@bug(
    "skip-missing",
    "algebra",
    "algebra_merge / certified_support",
    "a member without a checkpoint is skipped (treated as idle)",
)
def _(m: Any) -> None:
    m.REASONS["missing_checkpoint"] = never


@bug(
    "provisional-ok", "algebra", "algebra_merge / soundness", "merge trusts provisional checkpoints"
)
def _(m: Any) -> None:
    m.REASONS["unsupported_finality"] = never


@bug(
    "scope-blind",
    "algebra",
    "algebra_merge / soundness",
    "merge trusts checkpoints of another query scope",
)
def _(m: Any) -> None:
    m.REASONS["scope_mismatch"] = never


@bug(
    "epoch-blind",
    "algebra",
    "algebra_merge / soundness",
    "merge trusts checkpoints stamped with another epoch",
)
def _(m: Any) -> None:
    m.REASONS["epoch_mismatch"] = never


@bug(
    "nonmember-pins",
    "algebra",
    "algebra_merge",
    "checkpoints of partitions that are not members take part in the minimum",
)
def _(m: Any) -> None:
    correct = m.merge

    def merge(membership: Any, checkpoints: Any) -> Any:
        cut, reason = correct(membership, checkpoints)
        if reason is not None:
            return cut, reason
        order = membership.common_order()
        for cp in checkpoints:
            if cp.partition not in membership.partitions:
                if cp.cut is None:
                    return None, "no_coverage"
                if m.compare(order, cp.cut, cut) < 0:
                    cut = cp.cut
        return cut, None

    m.merge = merge


@bug(
    "incomparable-scalar",
    "algebra",
    "algebra_merge / certified_support",
    "members on orders of different names merged as if they shared one order",
)
def _(m: Any) -> None:
    correct = m.merge

    def merge(membership: Any, checkpoints: Any) -> Any:
        cut, reason = correct(membership, checkpoints)
        if reason != "incomparable":
            return cut, reason
        # The first member's order (by name) taken for everyone's.
        order = membership.orders[membership.partitions[sorted(membership.partitions)[0]]]
        cuts = [cp.cut for cp in m.member_vector(membership, checkpoints).values()]
        if not cuts or any(c is None for c in cuts):
            return None, "no_coverage"
        lowest = cuts[0]
        for other in cuts[1:]:
            if m.compare(order, other, lowest) < 0:
                lowest = other
        return lowest, None

    m.merge = merge
    one_order = m.Membership.common_order

    def common_order(self: Any) -> Any:
        # The publisher decides on the same one order the merge took.
        if len(set(self.partitions.values())) > 1:
            return self.orders[self.partitions[sorted(self.partitions)[0]]]
        return one_order(self)

    m.Membership.common_order = common_order


@bug(
    "relabel",
    "algebra",
    "algebra_merge / soundness / no_relabeling",
    "minimum by coordinate alone, labelled through if any member says through",
)
def _(m: Any) -> None:
    correct = m.merge

    def merge(membership: Any, checkpoints: Any) -> Any:
        cut, reason = correct(membership, checkpoints)
        if reason is not None:
            return cut, reason
        cuts = [cp.cut for cp in m.member_vector(membership, checkpoints).values()]
        at = min(c.at for c in cuts)
        kinds = {c.kind for c in cuts if c.at == at}
        return m.Cut(at, "through" if "through" in kinds else "before"), None

    m.merge = merge


@bug(
    "exclusive-normalize",
    "algebra",
    "algebra_merge / certified_support",
    "the merged through x is published as before x+1 on every integer order",
)
def _(m: Any) -> None:
    correct = m.merge

    def merge(membership: Any, checkpoints: Any) -> Any:
        cut, reason = correct(membership, checkpoints)
        order = membership.common_order()
        if reason is None and order.kind == "integer" and cut.kind == "through":
            return m.Cut(cut.at + 1, "before"), None
        return cut, reason

    m.merge = merge


@bug(
    "merge-dup-last-wins",
    "algebra",
    "error_handling",
    "two checkpoints for one member in one vector: the last one is taken instead of the "
    "vector being refused as a bad value",
)
def _(m: Any) -> None:
    def member_vector(membership: Any, checkpoints: Any) -> Any:
        vector = {}
        for i, cp in enumerate(checkpoints):
            if cp.partition not in membership.partitions:
                continue
            if cp.cut is not None:
                m.check_at(membership.order_of(cp.partition), cp.cut, f"checkpoints[{i}].cut")
            vector[cp.partition] = cp  # a second checkpoint for a member replaces the first
        return vector

    m.member_vector = member_vector


# -- publisher (sections 5, 6) -----------------------------------------------------------


@bug(
    "stale-cut-retry",
    "publisher",
    "monotone_publication",
    "after a conflict the old cut is written again at the new revision, not recomputed",
)
def _(m: Any) -> None:
    def after_conflict(self: Any, proposal: Any, before: Any, carried: Any, op_id: str) -> Any:
        if self.spend():
            raise self.gave_up()
        while True:  # the old cut again at the new revision, until it sticks
            reply = self.write(proposal, carried.revision, op_id)
            if reply["ok"]:
                self.show(m.parse_record(reply.get("record"), "reply.record"))
                raise self.answer("published", proposal.epoch, proposal.cut)
            if m.reply_error(reply) == "conflict":
                carried = self.show(m.parse_record(reply.get("record"), "reply.record"))
            if self.spend():
                raise self.gave_up()

    m.Attempt.after_conflict = after_conflict


@bug(
    "blind-success",
    "publisher",
    "lost_response_honesty",
    "a lost write response is taken as success",
)
def _(m: Any) -> None:
    def settle_lost_write(self: Any, proposal: Any, record: Any, op_id: str) -> Any:
        raise self.answer("published", proposal.epoch, proposal.cut)

    m.Attempt.settle_lost_write = settle_lost_write


@bug(
    "confirm-revision",
    "publisher",
    "lost_response_honesty",
    "after a lost write, a moved revision alone is taken as confirmation",
)
def _(m: Any) -> None:
    correct = m.Attempt.confirms

    def confirms(self: Any, proposal: Any, before: Any, current: Any) -> bool:
        return bool(current.revision > before.revision or correct(self, proposal, before, current))

    m.Attempt.confirms = confirms


@bug(
    "confirm-other-epoch",
    "publisher",
    "lost_response_honesty",
    "after a lost write, a record at or past the cut confirms whatever its epoch",
)
def _(m: Any) -> None:
    def confirms(self: Any, proposal: Any, before: Any, current: Any) -> bool:
        return bool(m.compare(proposal.order, current.cut, proposal.cut) >= 0)

    m.Attempt.confirms = confirms


@bug(
    "fence-blind",
    "publisher",
    "honest_outcome",
    "after a lost write the old membership is kept and the retry stays in the old epoch",
)
def _(m: Any) -> None:
    m.fenced = never
    read_membership, settle_lost_write = m.Attempt.read_membership, m.Attempt.settle_lost_write

    def keep_membership(self: Any) -> Any:
        if not getattr(self, "keep", False) or not hasattr(self, "kept"):
            self.kept = read_membership(self)
        self.keep = False
        return self.kept

    def settle_then_keep(self: Any, proposal: Any, record: Any, op_id: str) -> Any:
        current = settle_lost_write(self, proposal, record, op_id)
        self.keep = True
        return current

    m.Attempt.read_membership = keep_membership
    m.Attempt.settle_lost_write = settle_then_keep


@bug(
    "pub-write-equal",
    "publisher",
    "honest_outcome",
    "a merged cut equal to the record's (same epoch) is written again and reported "
    "published, instead of stopping with unchanged",
)
def _(m: Any) -> None:
    correct = m.decide

    def decide(policy: str, record: Any, membership: Any, checkpoints: Any) -> Any:
        decision = correct(policy, record, membership, checkpoints)
        if decision.outcome == "unchanged":
            cut, _ = m.merge(membership, checkpoints)
            order = membership.common_order()
            if cut is not None and m.compare(order, cut, record.cut) == 0:
                return m.Decision("write", proposal=m.Proposal(membership.epoch, cut, order))
        return decision

    m.decide = decide


@bug(
    "monotone-as-reset",
    "publisher",
    "monotone_publication",
    "policy monotone handled like reset: the record may move to a new epoch with a lower cut",
)
def _(m: Any) -> None:
    m.MONOTONE["monotone"] = False


@bug(
    "reset-as-monotone",
    "publisher",
    "honest_outcome",
    "policy reset handled like monotone: withheld cutover_pending under reset",
)
def _(m: Any) -> None:
    m.MONOTONE["reset"] = True


@bug(
    "op-id-reuse",
    "publisher",
    "op_id_reuse",
    "the op_id counter advances only after an acknowledged write",
)
def _(m: Any) -> None:
    forget, answer = m.Worker.forget, m.Attempt.answer

    def forget_too(self: Any) -> None:
        forget(self)
        self.acknowledged = 0

    def next_op_id(self: Any, worker: str) -> str:
        self.attempts += 1
        return f"{worker}-{self.acknowledged + 1}"

    def count_acknowledged(self: Any, outcome: str, *rest: Any) -> Any:
        if outcome == "published":
            self.worker.acknowledged += 1
        return answer(self, outcome, *rest)

    m.Worker.forget, m.Worker.next_op_id = forget_too, next_op_id
    m.Attempt.answer = count_acknowledged


@bug(
    "gave-up-dishonest",
    "publisher",
    "honest_outcome",
    "gave_up reports the cut it proposed, not a record it was shown",
)
def _(m: Any) -> None:
    write, gave_up = m.Attempt.write, m.Attempt.gave_up

    def remember(self: Any, proposal: Any, *rest: Any) -> Any:
        self.proposed = proposal
        return write(self, proposal, *rest)

    def dishonest(self: Any) -> Any:
        if getattr(self, "proposed", None) is not None:
            return self.answer("gave_up", self.proposed.epoch, self.proposed.cut)
        return gave_up(self)

    m.Attempt.write, m.Attempt.gave_up = remember, dishonest


@bug("no-retry-budget", "publisher", "runaway", "conflicts and lost responses are retried forever")
def _(m: Any) -> None:
    def spend(self: Any) -> bool:
        self.trouble += 1
        return False

    m.Session.spend = spend


@bug(
    "giveup-on-withheld",
    "publisher",
    "honest_outcome",
    "a missing checkpoint is reported as gave_up (retry later) instead of withheld",
)
def _(m: Any) -> None:
    from_record = m.Attempt.from_record

    def gave_up_instead(self: Any, outcome: str, reason: Any = None) -> Any:
        if outcome == "withheld" and reason == "missing_checkpoint":
            return self.answer("gave_up", self.record.epoch, self.record.cut)
        return from_record(self, outcome, reason)

    m.Attempt.from_record = gave_up_instead


@bug(
    "stale-unchanged",
    "publisher",
    "honest_outcome",
    "after a conflict whose record already claims the proposal, unchanged carries the "
    "record read before the write",
)
def _(m: Any) -> None:
    after_conflict = m.Attempt.after_conflict

    def stale(self: Any, proposal: Any, before: Any, carried: Any, op_id: str) -> Any:
        if self.claimed(proposal, carried):
            if self.spend():
                raise self.gave_up()
            raise self.answer("unchanged", before.epoch, before.cut)
        return after_conflict(self, proposal, before, carried, op_id)

    m.Attempt.after_conflict = stale


@bug(
    "lost-read-empty",
    "publisher",
    "honest_outcome",
    "a read_checkpoints whose response is lost is taken as an empty vector",
)
def _(m: Any) -> None:
    def read_checkpoints(self: Any, epoch: int) -> Any:
        reply = self.call("read_checkpoints", stream=self.stream, epoch=epoch)
        if not reply["ok"]:
            m.reply_error(reply)
            return []
        raw = reply["checkpoints"]
        return [m.parse_checkpoint(c, f"reply.checkpoints[{i}]") for i, c in enumerate(raw)]

    m.Attempt.read_checkpoints = read_checkpoints


@bug(
    "cached-membership",
    "publisher",
    "honest_outcome",
    "the membership is read once per process and reused by later attempts",
)
def _(m: Any) -> None:
    forget, read_membership = m.Worker.forget, m.Attempt.read_membership

    def forget_too(self: Any) -> None:
        forget(self)
        self.memberships = {}

    def cached(self: Any) -> Any:
        if self.stream not in self.worker.memberships:
            self.worker.memberships[self.stream] = read_membership(self)
        return self.worker.memberships[self.stream]

    m.Worker.forget, m.Attempt.read_membership = forget_too, cached


@bug(
    "string-prefix-equal",
    "algebra",
    "algebra_compare",
    "a string coordinate and its extension compared as equal (a and ab one coordinate)",
)
def _(m: Any) -> None:
    correct = m.compare_coordinates

    def compare_coordinates(x: Any, y: Any) -> int:
        if isinstance(x, str) and isinstance(y, str):
            n = min(len(x), len(y))
            return int(correct(x[:n], y[:n]))
        return int(correct(x, y))

    m.compare_coordinates = compare_coordinates


@bug(
    "string-kinds-swapped",
    "algebra",
    "algebra_compare",
    "on string orders, before x ranked above through x",
)
def _(m: Any) -> None:
    correct = m.compare

    def compare(order: Any, a: Any, b: Any) -> int:
        if (
            order.kind == "string"
            and a is not None
            and b is not None
            and a.at == b.at
            and a.kind != b.kind
        ):
            return -int(correct(order, a, b))
        return int(correct(order, a, b))

    m.compare = compare


@bug(
    "empty-membership-nothing",
    "algebra",
    "algebra_merge",
    "a membership with no partitions merges to nothing instead of withholding no_coverage",
)
def _(m: Any) -> None:
    correct = m.merge

    def merge(membership: Any, checkpoints: Any) -> Any:
        if not membership.partitions:
            return None, None
        return correct(membership, checkpoints)

    m.merge = merge


@bug(
    "checkpoints-epoch-plus-one",
    "publisher",
    "honest_outcome",
    "on a cutover, the checkpoints of the record's epoch + 1 are read, not the membership's",
)
def _(m: Any) -> None:
    read_checkpoints = m.Attempt.read_checkpoints

    def plus_one(self: Any, epoch: int) -> Any:
        if self.record is not None and epoch > self.record.epoch:
            epoch = self.record.epoch + 1
        return read_checkpoints(self, epoch)

    m.Attempt.read_checkpoints = plus_one


@bug(
    "reset-keeps-cache",
    "publisher",
    "reset",
    "reset forgets everything but the per-process record memo",
)
def _(m: Any) -> None:
    # A memo of the best record seen per (stream, epoch), kept by the process and
    # never cleared by `reset`. Within one run a record never goes back in an
    # epoch, so the memo is harmless there; after a reset it answers from the past.
    show, read_membership = m.Attempt.show, m.Attempt.read_membership
    read_checkpoints = m.Attempt.read_checkpoints

    def memo_show(self: Any, record: Any) -> Any:
        memo = self.worker.__dict__.setdefault("memo", {})
        key = (self.stream, record.epoch)
        if key not in memo or memo[key][0] < record.revision:
            memo[key] = (record.revision, record.cut)
        return show(self, record)

    def seen_membership(self: Any) -> Any:
        self.membership_seen = read_membership(self)
        return self.membership_seen

    def memo_says_unchanged(self: Any, epoch: int) -> Any:
        checkpoints = read_checkpoints(self, epoch)
        membership, record = self.membership_seen, self.record
        best = self.worker.__dict__.get("memo", {}).get((self.stream, membership.epoch))
        order = membership.common_order()
        if best is not None and order is not None and membership.epoch == record.epoch:
            cut, reason = m.merge(membership, checkpoints)
            if reason is None and m.compare(order, cut, best[1]) <= 0:
                raise self.from_record("unchanged")
        return checkpoints

    m.Attempt.show, m.Attempt.read_membership = memo_show, seen_membership
    m.Attempt.read_checkpoints = memo_says_unchanged


# -- checkpointer (section 3) ------------------------------------------------------------


@bug(
    "max-observed",
    "checkpointer",
    "checkpoint_truth",
    "the greatest event observed is certified (through max at), whatever the claim",
)
def _(m: Any) -> None:
    certifiable = m.IngestPass.certifiable

    def max_observed(self: Any, page: Any) -> Any:
        if not page.events:
            return certifiable(self, page)
        top = page.events[0][1]
        for _, at in page.events:
            if m.compare(self.order, m.Cut(at, "through"), m.Cut(top, "through")) > 0:
                top = at
        return m.Cut(top, "through")

    m.IngestPass.certifiable = max_observed


@bug("nonfinal-claim", "checkpointer", "checkpoint_truth", "a claim that is not final is certified")
def _(m: Any) -> None:
    m.IngestPass.certifiable = lambda self, page: page.claim


@bug(
    "epsilon",
    "checkpointer",
    "checkpoint_truth",
    "a through x claim is stored as before x+1 on every integer order",
)
def _(m: Any) -> None:
    certifiable = m.IngestPass.certifiable

    def epsilon(self: Any, page: Any) -> Any:
        claim = certifiable(self, page)
        if claim is not None and self.order.kind == "integer" and claim.kind == "through":
            return m.Cut(claim.at + 1, "before")
        return claim

    m.IngestPass.certifiable = epsilon


@bug(
    "checkpoint-before-outcomes",
    "checkpointer",
    "checkpoint_truth",
    "the checkpoint is written before the page's outcomes are recorded",
)
def _(m: Any) -> None:
    def take(self: Any, page: Any, resume: Any) -> None:
        cut = self.certifiable(page)
        if cut is not None and self.ahead(cut):
            self.write(cut, resume)
        self.record_outcomes(page)

    m.IngestPass.take = take


def _checkpoint_conflict(reply: dict[str, Any], fields: dict[str, Any]) -> bool:
    """A conflict whose stored checkpoint is not the one this call sent."""
    return bool(
        not reply["ok"]
        and reply.get("error") == "conflict"
        and reply.get("checkpoint") != fields["checkpoint"]
    )


@bug(
    "ingest-report-unstored",
    "checkpointer",
    "ingest_report",
    "after a checkpoint conflict ingest_ok reports the cut it tried to write",
)
def _(m: Any) -> None:
    def call(self: Any, op: str, **fields: Any) -> Any:
        reply = m.Session.call(self, op, **fields)
        if op == "write_checkpoint" and _checkpoint_conflict(reply, fields):
            raise self.finish(m.parse_cut(fields["checkpoint"]["cut"], "cut"), own=True)
        return reply

    m.IngestPass.call = call


@bug(
    "ckpt-overwrite",
    "checkpointer",
    "checkpoint_monotonicity",
    "after a checkpoint conflict the write is retried at the current generation, "
    "even over a newer checkpoint",
)
def _(m: Any) -> None:
    def call(self: Any, op: str, **fields: Any) -> Any:
        reply = m.Session.call(self, op, **fields)
        while op == "write_checkpoint" and _checkpoint_conflict(reply, fields):
            current = reply.get("checkpoint")
            generation = current["generation"] if current is not None else None
            mine = {**fields["checkpoint"], "generation": (generation or 0) + 1}
            fields = {**fields, "expected_generation": generation, "checkpoint": mine}
            reply = m.Session.call(self, op, **fields)
        return reply

    m.IngestPass.call = call


@bug(
    "ckpt-lost-success",
    "checkpointer",
    "ingest_report",
    "a lost checkpoint write response is taken as success",
)
def _(m: Any) -> None:
    def call(self: Any, op: str, **fields: Any) -> Any:
        reply = m.Session.call(self, op, **fields)
        if op == "write_checkpoint" and reply.get("error") == "timeout":
            return {**reply, "ok": True, "checkpoint": fields["checkpoint"]}
        return reply

    m.IngestPass.call = call


@bug(
    "dup-coordinate",
    "checkpointer",
    "checkpoint_truth",
    "outcomes are recorded once per coordinate, not per event id (events sharing an "
    "offset are skipped)",
)
def _(m: Any) -> None:
    record_outcomes = m.IngestPass.record_outcomes

    def once_per_coordinate(self: Any, page: Any) -> None:
        first: dict[Any, Any] = {}
        for event_id, at in page.events:
            first.setdefault(at, (event_id, at))
        record_outcomes(self, dataclasses.replace(page, events=list(first.values())))

    m.IngestPass.record_outcomes = once_per_coordinate


@bug(
    "restart-from-scratch",
    "checkpointer",
    "checkpoint_monotonicity",
    "a pass ignores the stored token and writes any final claim over the stored one",
)
def _(m: Any) -> None:
    m.IngestPass.trusted = never
    m.IngestPass.ahead = lambda self, cut: True


@bug(
    "skip-unclaimed",
    "checkpointer",
    "checkpoint_truth",
    "outcomes are recorded only for events inside the page's final claim, yet the token "
    "moves past the others",
)
def _(m: Any) -> None:
    record_outcomes = m.IngestPass.record_outcomes

    def claimed_only(self: Any, page: Any) -> None:
        claimed = [
            (event_id, at)
            for event_id, at in page.events
            if page.final and page.claim is not None and self.covers(page.claim, at)
        ]
        record_outcomes(self, dataclasses.replace(page, events=claimed))

    m.IngestPass.record_outcomes = claimed_only


@bug(
    "resume-any-token",
    "checkpointer",
    "opaque_token",
    "the stored token is resumed from even when the stored checkpoint is of another epoch or scope",
)
def _(m: Any) -> None:
    m.IngestPass.trusted = lambda self, cp: cp is not None


@bug(
    "ckpt-provisional-counted",
    "checkpointer",
    "checkpoint_truth",
    "a provisional checkpoint in the reader's own key is resumed from (allowed) and its cut "
    "counted as coverage: the pass certifies it as final",
)
def _(m: Any) -> None:
    read_checkpoint = m.IngestPass.read_checkpoint

    def counted(self: Any) -> Any:
        cp = read_checkpoint(self)
        if cp is not None and cp.finality != "final" and self.trusted(cp):
            self.known = cp
            self.write(cp.cut, cp.token)  # its progress taken for certified coverage
            return self.known
        return cp

    m.IngestPass.read_checkpoint = counted
