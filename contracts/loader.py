"""Reading a contract file: typed access to every table, every error located by file and line."""

from __future__ import annotations

import difflib
import importlib.resources
import re
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from fractions import Fraction
from functools import partial
from pathlib import Path as FilePath
from types import MappingProxyType
from typing import TypeVar

from fencepost.contracts.contract import Contract
from fencepost.contracts.encodings import decode
from fencepost.contracts.facts import (
    ENCODINGS_OF_KIND,
    Adjust,
    Boundary,
    Caveat,
    ClaimFacts,
    ContractError,
    ContractErrors,
    CoordinateKind,
    CrossOrder,
    CursorFacts,
    Delay,
    Discovery,
    Encoding,
    Epochs,
    Evidence,
    Frontier,
    Guarantee,
    Horizon,
    LateCommits,
    Lineage,
    MembershipChange,
    MembershipFacts,
    Mutability,
    NewPartitions,
    Occurs,
    OrderFacts,
    PaginationFacts,
    PartitionFacts,
    Possibility,
    Precision,
    ProviderInfo,
    Reads,
    ResumeRule,
    Source,
    Surface,
    Ties,
    TokenKind,
    Unconfirmed,
    UnknownContract,
    contract_error,
)
from fencepost.impl.cuts import Endpoint
from fencepost.impl.errors import InvalidValue
from fencepost.inputs.toml import Document, Table, hint
from fencepost.inputs.tomllines import (
    KeySyntaxError,
    Path,
    parse_path,
)

# ---------------------------------------------------------------------------
# Loading

_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
E = TypeVar("E", bound=Enum)
T = TypeVar("T")

_TOP_ALL = (
    "provider",
    "sources",
    "order",
    "boundaries",
    "claims",
    "resume",
    "partitions",
    "membership",
    "pagination",
    "cursor",
    "caveats",
    "unconfirmed",
)

#: Duration units of a time order (RFC 3339 coordinates are nanoseconds).
_UNITS: Mapping[str, int] = MappingProxyType(
    {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9, "h": 3600 * 10**9}
)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ns|us|ms|s|min|h)")


class _Failed(Exception):
    """A table or entry with mistakes, every one of them already recorded."""


class _Document(Document):
    """A contract document: the shared reader, the citations seen (checked at the end) and
    every mistake found so far (reported together at the end)."""

    def __init__(self, text: str, origin: str) -> None:
        super().__init__(text, origin, contract_error)
        self.cite_refs: list[tuple[Path, str]] = []
        self.problems: list[ContractError] = []

    def record(self, exc: ContractError) -> None:
        self.problems.append(exc)


class _Gather:
    """Reads the fields of one table one by one, recording each mistake instead of stopping
    at the first; :meth:`done` then raises :class:`_Failed` if any field failed."""

    def __init__(self, doc: _Document) -> None:
        self.doc = doc
        self.failed = False

    def __call__(self, read: Callable[[], T], default: T) -> T:
        try:
            return read()
        except ContractError as exc:
            self.doc.record(exc)
        except _Failed:
            pass
        self.failed = True
        return default

    def done(self) -> None:
        if self.failed:
            raise _Failed


class _Reader(Table):
    """Typed access to one table of the contract (the shared reader's), with the contract's
    own field kinds: an endpoint kind, a list of citations, a fact with its evidence.

    Unknown keys are recorded (every one of them), not raised, so the rest of the
    table is still read and its mistakes reported in the same run.
    """

    def __init__(
        self, doc: Document, path: Path, data: object, allowed: Iterable[str] | None
    ) -> None:
        super().__init__(doc, path, data, None)
        if allowed is None:
            return
        assert isinstance(doc, _Document)
        known = tuple(allowed)
        for key in self.data:
            if key not in known:
                error = doc.error(
                    (*path, key),
                    f"unknown field (allowed here: {', '.join(known)}){hint(key, known)}",
                    self.data[key],
                )
                assert isinstance(error, ContractError)
                doc.record(error)

    @property
    def cite_refs(self) -> list[tuple[Path, str]]:
        assert isinstance(self.doc, _Document)
        return self.doc.cite_refs

    def optional_text(self, key: str) -> str | None:
        return self.opt_text(key)

    def endpoint(self, key: str) -> Endpoint:
        value = self.raw(key)
        if value not in ("before", "through"):
            raise self.error(key, 'must be "before" or "through"', value)
        assert isinstance(value, str)
        return Endpoint(value)

    def cites(self, key: str = "cite") -> tuple[str, ...]:
        if key not in self.data:
            return ()
        value = self.data[key]
        path = (*self.path, key)
        if not isinstance(value, list) or not all(type(v) is str and v for v in value):
            raise self.doc.error(path, 'a list of source ids is required: cite = ["id"]', value)
        for item in value:
            self.cite_refs.append((path, item))
        return tuple(value)

    def evidence(self) -> Evidence:
        """This table's ``cite`` and ``assumed``: a fact is cited or assumed, never both."""
        cite = self.cites()
        assumed = self.boolean("assumed", default=False)
        if cite and assumed:
            raise self.error(
                "assumed",
                "a cited fact is not an assumption: keep cite = [...] or assumed = true, not both",
                assumed,
            )
        return Evidence(cite, assumed)

    def fact(self, key: str, read: Callable[[_Reader, str], T]) -> tuple[T, Evidence | None]:
        """A field written plainly (``ties = "atomic"``) or with its own evidence
        (``ties = { value = "atomic", cite = ["id"] }`` or ``assumed = true``)."""
        raw = self.data.get(key)
        if not isinstance(raw, dict):
            return read(self, key), None
        sub = _Reader(self.doc, (*self.path, key), raw, ("value", "cite", "assumed"))
        value = read(sub, "value")
        evidence = sub.evidence()
        if not evidence.supported:
            raise self.error(
                key,
                "a fact written as a table carries its evidence: add cite = [source ids] or "
                "assumed = true, or write the plain value",
                raw,
            )
        return value, evidence


class _Loader:
    def __init__(self, doc: _Document) -> None:
        self.doc = doc
        self.origin = doc.origin
        self.lines = doc.lines
        self.cite_refs = doc.cite_refs

    def error(self, path: Path, problem: str, value: object = None) -> ContractError:
        error = self.doc.error(path, problem, value)
        assert isinstance(error, ContractError)
        return error

    def _part(self, read: Callable[[], T]) -> T | None:
        """One part of the contract; its mistakes are recorded and None stands in for it."""
        try:
            return read()
        except ContractError as exc:
            self.doc.record(exc)
        except _Failed:
            pass
        return None

    def load(self) -> Contract:
        data = self.doc.parse()
        top = _Reader(self.doc, (), data, _TOP_ALL)

        provider = self._part(
            lambda: self._provider(top.table("provider", ("name", "title", "version", "summary")))
        )
        sources = self._part(lambda: self._sources(top)) or {}
        order = self._part(lambda: self._order(top.table("order", _ORDER_FIELDS)))
        boundaries = self._part(lambda: self._boundaries(top))
        claims = self._part(lambda: self._claims(top, boundaries, order)) or {}
        resume = self._part(lambda: self._resume(top, boundaries, order)) or {}
        partitions = self._part(
            lambda: self._partitions(top.table("partitions", _PARTITION_FIELDS))
        )
        membership = self._part(
            lambda: self._membership(top.table("membership", _MEMBERSHIP_FIELDS))
        )
        pagination = self._part(
            lambda: self._pagination(top.table("pagination", _PAGINATION_FIELDS))
        )
        cursor = self._part(lambda: self._cursor(top, order, boundaries)) or CursorFacts()
        caveats = tuple(self._caveats(top))
        unconfirmed = tuple(self._unconfirmeds(top, data))
        for path, ref in self.cite_refs:
            if ref not in sources:
                close = difflib.get_close_matches(ref, list(sources), n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                self.doc.record(
                    self.error(
                        path, f"cites {ref!r}, which no [sources.{ref}] table defines{hint}", ref
                    )
                )
        if self.doc.problems:
            # in the order they were found: unknown tables first, then table by table
            errors = list({str(e): e for e in self.doc.problems}.values())
            raise errors[0] if len(errors) == 1 else ContractErrors(errors)
        assert provider is not None and order is not None and boundaries is not None
        assert partitions is not None and membership is not None and pagination is not None
        return Contract(
            provider=provider,
            sources=MappingProxyType(sources),
            order_facts=order,
            boundaries=MappingProxyType(boundaries),
            claims=MappingProxyType(claims),
            resume=MappingProxyType(resume),
            partitions=partitions,
            membership_facts=membership,
            pagination=pagination,
            caveats=caveats,
            unconfirmed=unconfirmed,
            origin=self.origin,
            lines=self.lines,
            cursor=cursor,
        )

    def _provider(self, r: _Reader) -> ProviderInfo:
        g = _Gather(self.doc)
        name = g(lambda: r.text("name"), "")
        if name and not _NAME.fullmatch(name):
            g(
                lambda: self._raise(
                    ("provider", "name"),
                    "a provider name is lower-case letters, digits and '-' "
                    "(kafka, dynamodb-streams)",
                    name,
                ),
                None,
            )
        title = g(lambda: r.text("title"), "")
        version = g(lambda: r.text("version"), "")
        summary = g(lambda: r.optional_text("summary"), None)
        g.done()
        return ProviderInfo(name, title, version, summary)

    def _raise(self, path: Path, problem: str, value: object = None) -> None:
        raise self.error(path, problem, value)

    def _sources(self, top: _Reader) -> dict[str, Source]:
        if not top.has("sources"):
            return {}
        raw_sources = top.raw("sources")
        if not isinstance(raw_sources, dict):
            raise self.error(("sources",), "must be a table of [sources.ID] tables", raw_sources)
        out: dict[str, Source] = {}
        for sid, raw in raw_sources.items():
            source = self._part(partial(self._source, sid, raw))
            out[sid] = source or Source(sid, sid, None, None)
        return out

    def _source(self, sid: str, raw: object) -> Source:
        r = _Reader(self.doc, ("sources", sid), raw, ("title", "url", "quote"))
        g = _Gather(self.doc)
        url = g(lambda: r.optional_text("url"), None)
        if url is not None and not re.match(r"https?://\S+$", url):
            g(
                lambda: self._raise(
                    ("sources", sid, "url"), "a URL starts with https:// or http://", url
                ),
                None,
            )
        title = g(lambda: r.text("title"), "")
        quote = g(lambda: r.optional_text("quote"), None)
        g.done()
        return Source(sid, title, url, quote)

    def _order(self, r: _Reader) -> OrderFacts:
        g = _Gather(self.doc)
        kind = g(lambda: r.choice("kind", CoordinateKind), CoordinateKind.INTEGER)
        successor, successor_ev = g(lambda: r.fact("successor", _boolean), (False, _NO_EVIDENCE))
        comparable = g(lambda: r.boolean("comparable", default=True), True)
        resolution = g(lambda: r.text("resolution"), "")
        name = g(lambda: r.text("name"), "")
        encoding = g(lambda: r.choice("encoding", Encoding) if r.has("encoding") else None, None)
        shared, shared_ev = g(lambda: r.fact("shared_positions", _boolean), (False, _NO_EVIDENCE))
        ties, ties_ev = g(lambda: _opt_ties(r), _NO_TIES)
        tiebreaker = g(lambda: r.optional_text("tiebreaker"), None)
        cite = g(r.cites, _NO_CITE)
        assumed = g(lambda: r.boolean("assumed", default=False), False)
        g.done()
        if kind is CoordinateKind.STRING and successor:
            raise self.error(
                ("order", "successor"), "string orders have no exact successor", successor
            )
        encodings = ENCODINGS_OF_KIND[kind]
        encoding = encoding or encodings[0]
        if encoding not in encodings:
            raise self.error(
                ("order", "encoding"),
                f"a {kind.value} order takes one of: {', '.join(e.value for e in encodings)}",
                encoding.value,
            )
        if ties is not None and not shared:
            raise self.error(
                ("order", "ties"),
                "ties only matter when shared_positions = true; remove it or set shared_positions",
                ties.value,
            )
        if (ties is Ties.TIEBREAKER) != (tiebreaker is not None):
            raise self.error(
                ("order", "tiebreaker"),
                'name the tiebreaker exactly when ties = "tiebreaker"',
                tiebreaker,
            )
        if cite and assumed:
            raise self.error(
                ("order", "assumed"),
                "a cited fact is not an assumption: keep cite = [...] or assumed = true, not both",
                assumed,
            )
        example: object = None
        if r.has("example"):
            example = r.raw("example")
            try:
                decode(encoding, example, "order.example")
            except InvalidValue as exc:
                raise self.error(
                    ("order", "example"),
                    f"not a value of encoding {encoding.value!r}: {exc.problem}",
                    example,
                ) from None
        evidence = {
            key: ev
            for key, ev in (
                ("successor", successor_ev),
                ("shared_positions", shared_ev),
                ("ties", ties_ev),
            )
            if ev is not None
        }
        return OrderFacts(
            name=name,
            kind=kind,
            successor=successor,
            comparable=comparable,
            resolution=resolution,
            encoding=encoding,
            shared_positions=shared,
            ties=ties,
            tiebreaker=tiebreaker,
            example=example,
            cite=cite,
            assumed=assumed,
            evidence=MappingProxyType(evidence),
        )

    def _boundaries(self, top: _Reader) -> dict[str, Boundary]:
        raw = top.raw("boundaries")
        if not isinstance(raw, dict) or not raw:
            raise self.error(("boundaries",), "list at least one boundary: [boundaries.NAME]", raw)
        out: dict[str, Boundary] = {}
        failed = False
        for name, table in raw.items():
            boundary = self._part(partial(self._boundary, name, table))
            if boundary is None:
                failed = True
            else:
                out[name] = boundary
        if failed:
            raise _Failed
        return out

    def _boundary(self, name: str, table: object) -> Boundary:
        r = _Reader(
            self.doc, ("boundaries", name), table, ("surface", "cut", "meaning", "cite", "assumed")
        )
        g = _Gather(self.doc)
        surface = g(lambda: r.choice("surface", Surface), Surface.RECORD)
        cut = g(lambda: r.endpoint("cut"), Endpoint.BEFORE)
        meaning = g(lambda: r.text("meaning"), "")
        evidence = g(r.evidence, Evidence())
        g.done()
        return Boundary(name, surface, cut, meaning, evidence.cite, evidence.assumed)

    def _claims(
        self,
        top: _Reader,
        boundaries: Mapping[str, Boundary] | None,
        order: OrderFacts | None,
    ) -> dict[str, ClaimFacts]:
        if not top.has("claims"):
            return {}
        raw = top.raw("claims")
        if not isinstance(raw, dict):
            raise self.error(("claims",), "must be a table of [claims.NAME] tables", raw)
        out: dict[str, ClaimFacts] = {}
        for name, table in raw.items():
            claim = self._part(partial(self._claim, name, table, boundaries, order))
            if claim is not None:
                out[name] = claim
        return out

    def _claim(
        self,
        name: str,
        table: object,
        boundaries: Mapping[str, Boundary] | None,
        order: OrderFacts | None,
    ) -> ClaimFacts:
        path: Path = ("claims", name)
        r = _Reader(self.doc, path, table, _CLAIM_FIELDS)
        g = _Gather(self.doc)
        boundary = g(lambda: self._reference(r, "boundary", boundaries, Surface.RECORD), "")
        adjust = g(lambda: r.choice("adjust", Adjust, default=Adjust.NONE), Adjust.NONE)
        if order is not None:
            g(lambda: self._check_adjust(path, adjust, order), None)
        guarantee = g(lambda: r.choice("guarantee", Guarantee), Guarantee.FINAL)
        certifies = g(lambda: r.boolean("certifies"), False)
        as_kind = g(lambda: r.endpoint("as"), Endpoint.BEFORE)
        occurs = g(lambda: r.choice("occurs", Occurs, default=Occurs.CONTINUOUS), Occurs.CONTINUOUS)
        statement = g(lambda: r.text("statement"), "")
        evidence = g(r.evidence, Evidence())
        g.done()
        return ClaimFacts(
            name=name,
            boundary=boundary,
            guarantee=guarantee,
            certifies=certifies,
            as_kind=as_kind,
            adjust=adjust,
            occurs=occurs,
            statement=statement,
            cite=evidence.cite,
            assumed=evidence.assumed,
        )

    def _resume(
        self,
        top: _Reader,
        boundaries: Mapping[str, Boundary] | None,
        order: OrderFacts | None,
    ) -> dict[Endpoint, ResumeRule]:
        if not top.has("resume"):
            return {}
        table = top.table("resume", ("before", "through"))
        out: dict[Endpoint, ResumeRule] = {}
        g = _Gather(self.doc)
        for key in ("before", "through"):
            if not table.has(key):
                continue
            rule = g(partial(self._resume_rule, table, key, boundaries, order), _NO_RULE)
            if rule is not None:
                out[Endpoint(key)] = rule
        g.done()
        return out

    def _resume_rule(
        self,
        table: _Reader,
        key: str,
        boundaries: Mapping[str, Boundary] | None,
        order: OrderFacts | None,
    ) -> ResumeRule:
        r = table.table(key, ("boundary", "adjust"))
        g = _Gather(self.doc)
        boundary = g(lambda: self._reference(r, "boundary", boundaries, Surface.PARAMETER), "")
        adjust = g(lambda: r.choice("adjust", Adjust, default=Adjust.NONE), Adjust.NONE)
        if order is not None:
            g(lambda: self._check_adjust(("resume", key), adjust, order), None)
        g.done()
        return ResumeRule(Endpoint(key), boundary, adjust)

    def _reference(
        self,
        r: _Reader,
        key: str,
        boundaries: Mapping[str, Boundary] | None,
        surface: Surface,
    ) -> str:
        name = r.text(key)
        path = (*r.path, key)
        if boundaries is None:
            raise _Failed  # the boundaries have mistakes of their own, already reported
        if name not in boundaries:
            close = difflib.get_close_matches(name, list(boundaries), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise self.error(
                path, f"names no boundary (known: {', '.join(boundaries)}){hint}", name
            )
        if boundaries[name].surface is not surface:
            what = (
                "a claim is read from a record"
                if surface is Surface.RECORD
                else ("a resume position is a request parameter")
            )
            raise self.error(
                path,
                f"boundary {name!r} is a {boundaries[name].surface.value}; {what}",
                name,
            )
        return name

    def _check_adjust(self, path: Path, adjust: Adjust, order: OrderFacts) -> None:
        if adjust is not Adjust.NONE and order.kind is CoordinateKind.STRING:
            raise self.error(
                (*path, "adjust"),
                "string coordinates cannot be adjusted by one; remove adjust",
                adjust.value,
            )

    def _partitions(self, r: _Reader) -> PartitionFacts:
        g = _Gather(self.doc)
        unit = g(lambda: r.text("unit"), "")
        order = g(lambda: r.choice("order", CrossOrder), CrossOrder.SHARED)
        frontier = g(lambda: r.choice("frontier", Frontier), Frontier.VECTOR)
        statement = g(lambda: r.optional_text("statement"), None)
        evidence = g(r.evidence, Evidence())
        g.done()
        return PartitionFacts(unit, order, frontier, statement, evidence.cite, evidence.assumed)

    def _membership(self, r: _Reader) -> MembershipFacts:
        g = _Gather(self.doc)
        changes = g(lambda: r.choice("changes", MembershipChange), MembershipChange.NONE)
        lineage = g(lambda: r.choice("lineage", Lineage, default=Lineage.NONE), Lineage.NONE)
        discovery = g(lambda: r.choice("discovery", Discovery), Discovery.NONE)
        epochs = g(lambda: r.choice("epochs", Epochs), Epochs.NONE)
        statement = g(lambda: r.optional_text("statement"), None)
        evidence = g(r.evidence, Evidence())
        g.done()
        if r.has("lineage") and changes is not MembershipChange.SPLIT_MERGE:
            raise self.error(
                ("membership", "lineage"),
                'lineage only applies when changes = "split-merge"',
                lineage.value,
            )
        return MembershipFacts(
            changes=changes,
            discovery=discovery,
            epochs=epochs,
            lineage=lineage,
            statement=statement,
            cite=evidence.cite,
            assumed=evidence.assumed,
        )

    def _pagination(self, r: _Reader) -> PaginationFacts:
        g = _Gather(self.doc)
        token = g(lambda: r.choice("token", TokenKind), TokenKind.OPAQUE)
        overlap = g(lambda: r.choice("overlap", Possibility), Possibility.POSSIBLE)
        empty = g(lambda: r.choice("empty_pages", Possibility), Possibility.POSSIBLE)
        event_id = g(lambda: r.optional_text("event_id"), None)
        statement = g(lambda: r.optional_text("statement"), None)
        evidence = g(r.evidence, Evidence())
        g.done()
        return PaginationFacts(
            token, overlap, empty, event_id, statement, evidence.cite, evidence.assumed
        )

    # -- [cursor]: what a sync tool reading by the cursor depends on ---------------------

    def _cursor(
        self,
        top: _Reader,
        order: OrderFacts | None,
        boundaries: Mapping[str, Boundary] | None,
    ) -> CursorFacts:
        if not top.has("cursor"):
            return CursorFacts()
        r = top.table("cursor", tuple(CURSOR_FIELDS))
        g = _Gather(self.doc)
        field = g(lambda: r.optional_text("field"), None)

        def sub(key: str) -> _Reader | None:
            return r.opt_table(key, CURSOR_FIELDS[key])

        late = g(lambda: self._late_commits(sub("late_commits"), order), None)
        precision = g(lambda: self._precision(sub("precision"), order), None)
        mutability = g(lambda: self._mutability(sub("mutability")), None)
        new_partitions = g(lambda: self._new_partitions(sub("new_partitions")), None)
        horizon = g(lambda: self._horizon(sub("horizon"), boundaries), None)
        reads = g(lambda: self._reads(sub("reads")), None)
        g.done()
        return CursorFacts(field, late, precision, mutability, new_partitions, horizon, reads)

    def _late_commits(self, r: _Reader | None, order: OrderFacts | None) -> LateCommits | None:
        if r is None:
            return None
        g = _Gather(self.doc)
        raw = g(lambda: r.raw("max_delay"), None)
        statement = g(lambda: r.optional_text("statement"), None)
        evidence = g(r.evidence, Evidence())
        g.done()
        if raw in ("unbounded", "unknown"):
            assert isinstance(raw, str)
            return LateCommits(Delay(raw), None, raw, statement, evidence)
        if order is None:
            raise _Failed
        amount = self._amount(r, "max_delay", raw, order, allow_zero=True)
        return LateCommits(Delay.BOUNDED, amount, _shown(raw), statement, evidence)

    def _precision(self, r: _Reader | None, order: OrderFacts | None) -> Precision | None:
        if r is None:
            return None
        g = _Gather(self.doc)
        stored_raw = g(lambda: r.raw("stored"), None)
        query_raw = g(lambda: r.raw("query"), None)
        statement = g(lambda: r.optional_text("statement"), None)
        evidence = g(r.evidence, Evidence())
        g.done()
        if order is None:
            raise _Failed
        stored = g(lambda: self._amount(r, "stored", stored_raw, order), 1)
        query = g(lambda: self._amount(r, "query", query_raw, order), 1)
        g.done()
        return Precision(stored, query, _shown(stored_raw), _shown(query_raw), statement, evidence)

    def _amount(
        self, r: _Reader, key: str, raw: object, order: OrderFacts, *, allow_zero: bool = False
    ) -> int:
        """A duration on a time order (``"10s"``, ``"1ms"``) or an integer in order units."""
        low = 0 if allow_zero else 1
        if order.encoding is Encoding.RFC3339:
            if raw == 0 and allow_zero:
                return 0
            m = _DURATION.fullmatch(raw) if isinstance(raw, str) else None
            if m is None:
                raise r.error(
                    key,
                    "a duration with its unit is required on a timestamp order: "
                    f'"10s", "250ms", "1us" (units: {", ".join(_UNITS)})'
                    + (', or "unbounded" / "unknown"' if key == "max_delay" else ""),
                    raw,
                )
            amount = Fraction(m.group(1)) * _UNITS[m.group(2)]
            if amount.denominator != 1 or amount < low:
                raise r.error(key, "must be a whole number of nanoseconds, at least 1 ns", raw)
            return int(amount)
        if type(raw) is not int or raw < low:
            more = ', or "unbounded" / "unknown"' if key == "max_delay" else ""
            raise r.error(
                key,
                f"an integer >= {low} in the order's units is required{more} (durations like "
                '"10s" apply to timestamp orders, encoding = "rfc3339")',
                raw,
            )
        return raw

    def _mutability(self, r: _Reader | None) -> Mutability | None:
        if r is None:
            return None
        g = _Gather(self.doc)
        mutable = g(lambda: _tri(r, "mutable"), None)
        statement = g(lambda: r.optional_text("statement"), None)
        evidence = g(r.evidence, Evidence())
        g.done()
        return Mutability(mutable, statement, evidence)

    def _new_partitions(self, r: _Reader | None) -> NewPartitions | None:
        if r is None:
            return None
        g = _Gather(self.doc)
        old_rows = g(lambda: _tri(r, "old_rows"), None)
        statement = g(lambda: r.optional_text("statement"), None)
        evidence = g(r.evidence, Evidence())
        g.done()
        return NewPartitions(old_rows, statement, evidence)

    def _horizon(
        self, r: _Reader | None, boundaries: Mapping[str, Boundary] | None
    ) -> Horizon | None:
        if r is None:
            return None
        g = _Gather(self.doc)
        boundary = g(lambda: self._reference(r, "boundary", boundaries, Surface.RECORD), "")
        statement = g(lambda: r.optional_text("statement"), None)
        evidence = g(r.evidence, Evidence())
        g.done()
        return Horizon(boundary, statement, evidence)

    def _reads(self, r: _Reader | None) -> Reads | None:
        if r is None:
            return None
        g = _Gather(self.doc)
        snapshot = g(lambda: r.boolean("snapshot"), False)
        statement = g(lambda: r.optional_text("statement"), None)
        evidence = g(r.evidence, Evidence())
        g.done()
        return Reads(snapshot, statement, evidence)

    # -- arrays ----------------------------------------------------------------------------

    def _array(self, top: _Reader, key: str, allowed: tuple[str, ...]) -> list[_Reader]:
        if not top.has(key):
            return []
        raw = top.raw(key)
        if not isinstance(raw, list):
            raise self.error((key,), f"write each entry as a [[{key}]] table", raw)
        readers: list[_Reader] = []
        for i, item in enumerate(raw):
            reader = self._part(partial(_Reader, self.doc, (key, i), item, allowed))
            if reader is not None:
                readers.append(reader)
        return readers

    def _caveats(self, top: _Reader) -> list[Caveat]:
        out: list[Caveat] = []
        for r in self._part(lambda: self._array(top, "caveats", ("text", "cite"))) or []:
            caveat = self._part(partial(_caveat, r))
            if caveat is not None:
                out.append(caveat)
        return out

    def _unconfirmeds(self, top: _Reader, data: Mapping[str, object]) -> list[Unconfirmed]:
        fields = ("field", "question", "assumed", "cite", "resolved_by")
        out: list[Unconfirmed] = []
        for r in self._part(lambda: self._array(top, "unconfirmed", fields)) or []:
            item = self._part(partial(self._unconfirmed, r, data))
            if item is not None:
                out.append(item)
        return out

    def _unconfirmed(self, r: _Reader, data: Mapping[str, object]) -> Unconfirmed:
        g = _Gather(self.doc)
        text = g(lambda: r.text("field"), "")
        question = g(lambda: r.text("question"), "")
        assumed = g(lambda: r.optional_text("assumed"), None)
        cite = g(r.cites, _NO_CITE)
        resolved = g(lambda: r.cites("resolved_by"), _NO_CITE)
        g.done()
        try:
            target = parse_path(text)
        except KeySyntaxError as exc:
            raise self.error((*r.path, "field"), f"not a field path: {exc}", text) from None
        if not _exists(data, target):
            raise self.error(
                (*r.path, "field"),
                "names no field of this contract (write the dotted path, e.g. order.successor)",
                text,
            )
        return Unconfirmed(target, question, assumed, cite, resolved)


def _caveat(r: _Reader) -> Caveat:
    return Caveat(r.text("text"), r.cites())


_NO_RULE: ResumeRule | None = None


def _boolean(r: _Reader, key: str) -> bool:
    return r.boolean(key)


def _ties(r: _Reader, key: str) -> Ties:
    return r.choice(key, Ties)


def _opt_ties(r: _Reader) -> tuple[Ties | None, Evidence | None]:
    if not r.has("ties"):
        return _NO_TIES
    return r.fact("ties", _ties)


_NO_CITE: tuple[str, ...] = ()
_NO_EVIDENCE: Evidence | None = None
_NO_TIES: tuple[Ties | None, Evidence | None] = (None, None)


def _tri(r: _Reader, key: str) -> bool | None:
    """``true``, ``false`` or ``"unknown"`` (None)."""
    value = r.raw(key)
    if value == "unknown":
        return None
    if type(value) is not bool:
        raise r.error(key, f'true, false or "unknown" is required, got {value!r}', value)
    return value


def _shown(raw: object) -> str:
    return raw if isinstance(raw, str) else str(raw)


_ORDER_FIELDS = (
    "name",
    "kind",
    "successor",
    "comparable",
    "resolution",
    "encoding",
    "shared_positions",
    "ties",
    "tiebreaker",
    "example",
    "cite",
    "assumed",
)
_CLAIM_FIELDS = (
    "boundary",
    "guarantee",
    "certifies",
    "as",
    "adjust",
    "occurs",
    "statement",
    "cite",
    "assumed",
)
_PARTITION_FIELDS = ("unit", "order", "frontier", "statement", "cite", "assumed")
_MEMBERSHIP_FIELDS = ("changes", "discovery", "epochs", "lineage", "statement", "cite", "assumed")
_PAGINATION_FIELDS = (
    "token",
    "overlap",
    "empty_pages",
    "event_id",
    "statement",
    "cite",
    "assumed",
)
_FACT = ("statement", "cite", "assumed")

#: The tables of ``[cursor]`` and the fields of each (``field`` is the cursor's name).
CURSOR_FIELDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "field": (),
        "late_commits": ("max_delay", *_FACT),
        "precision": ("stored", "query", *_FACT),
        "mutability": ("mutable", *_FACT),
        "new_partitions": ("old_rows", *_FACT),
        "horizon": ("boundary", *_FACT),
        "reads": ("snapshot", *_FACT),
    }
)

#: Every field a contract may have, by table (docs/contracts.md documents each one).
FIELDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "provider": ("name", "title", "version", "summary"),
        "sources.ID": ("title", "url", "quote"),
        "order": _ORDER_FIELDS,
        "boundaries.NAME": ("surface", "cut", "meaning", "cite", "assumed"),
        "claims.NAME": _CLAIM_FIELDS,
        "resume.before / resume.through": ("boundary", "adjust"),
        "partitions": _PARTITION_FIELDS,
        "membership": _MEMBERSHIP_FIELDS,
        "pagination": _PAGINATION_FIELDS,
        **{f"cursor.{key}": fields for key, fields in CURSOR_FIELDS.items() if key != "field"},
        "cursor": ("field",),
        "[[caveats]]": ("text", "cite"),
        "[[unconfirmed]]": ("field", "question", "assumed", "cite", "resolved_by"),
    }
)


def _exists(data: object, path: Path) -> bool:
    node = data
    for part in path:
        if isinstance(part, int):
            if not isinstance(node, list) or not 0 <= part < len(node):
                return False
            node = node[part]
        else:
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
    return True


def parse_contract(text: str, origin: str = "<contract>") -> Contract:
    """Parse a contract from TOML ``text``; ``origin`` names the file in errors."""
    return _Loader(_Document(text, origin)).load()


def read_contract_file(path: str | FilePath) -> Contract:
    """Load the contract file at ``path`` (errors name the file as given)."""
    origin = str(path)
    if FilePath(path).is_dir():
        raise ContractError(origin, None, "", "is a directory, not a contract file")
    doc = Document.from_file(origin, contract_error)
    return _Loader(_Document(doc.text, origin)).load()


def _decode_and_parse(raw: bytes, origin: str) -> Contract:
    doc = Document.from_bytes(raw, origin, contract_error)
    return parse_contract(doc.text, origin)


def shipped_contract_names() -> tuple[str, ...]:
    """The names of the contracts shipped in ``fencepost.contracts``, sorted."""
    root = importlib.resources.files("fencepost.contracts")
    return tuple(
        sorted(
            entry.name[: -len(".toml")]
            for entry in root.iterdir()
            if entry.name.endswith(".toml") and entry.is_file()
        )
    )


def load_shipped_contract(name: str) -> Contract:
    """Load the shipped contract ``name`` (``kafka``, ``kinesis``, ...)."""
    names = shipped_contract_names()
    if name not in names:
        raise UnknownContract(name, names)
    resource = importlib.resources.files("fencepost.contracts") / f"{name}.toml"
    return _decode_and_parse(resource.read_bytes(), f"contracts/{name}.toml")


def template_names() -> tuple[str, ...]:
    """The starting points ``fencepost contracts init --template`` writes: the packaged
    templates (``minimal``), then every shipped contract."""
    root = importlib.resources.files("fencepost.contracts") / "templates"
    own = sorted(
        entry.name[: -len(".toml")]
        for entry in root.iterdir()
        if entry.name.endswith(".toml") and entry.is_file()
    )
    return (*own, *(n for n in shipped_contract_names() if n not in own))


def template_text(name: str) -> str:
    """The text of template ``name`` (a packaged template or a shipped contract), as shipped.

    Raises :class:`UnknownContract` (with a suggestion) for an unknown name.
    """
    names = template_names()
    if name not in names:
        raise UnknownContract(name, names)
    root = importlib.resources.files("fencepost.contracts")
    template = root / "templates" / f"{name}.toml"
    resource = template if template.is_file() else root / f"{name}.toml"
    return resource.read_text(encoding="utf-8")


def looks_like_path(name_or_path: str) -> bool:
    """True when the argument names a file rather than a shipped contract."""
    return name_or_path.endswith(".toml") or "/" in name_or_path or "\\" in name_or_path


def load_contract(name_or_path: str | FilePath) -> Contract:
    """Load a contract by shipped name (``"kafka"``) or by path (``"my/source.toml"``).

    Scenarios and ``fencepost conform`` call this to take a provider's order
    and claims from its contract. Raises :class:`UnknownContract` for an
    unknown name and :class:`ContractError` (file, line, field) for a file that
    is missing, unreadable or malformed.
    """
    if isinstance(name_or_path, FilePath):
        return read_contract_file(name_or_path)
    if type(name_or_path) is not str or not name_or_path:
        raise InvalidValue("contract", name_or_path, "a contract name or a path is required")
    if looks_like_path(name_or_path):
        return read_contract_file(name_or_path)
    return load_shipped_contract(name_or_path)
