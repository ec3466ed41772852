"""Reading a contract file: typed access to every table, every error located by file and line."""

from __future__ import annotations

import difflib
import importlib.resources
import re
from collections.abc import Mapping
from enum import Enum
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
    CoordinateKind,
    CrossOrder,
    Discovery,
    Encoding,
    Epochs,
    Frontier,
    Guarantee,
    Lineage,
    MembershipChange,
    MembershipFacts,
    Occurs,
    OrderFacts,
    PaginationFacts,
    PartitionFacts,
    Possibility,
    ProviderInfo,
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
from fencepost.inputs.toml import Document, Table
from fencepost.inputs.tomllines import (
    KeySyntaxError,
    Path,
    parse_path,
)

# ---------------------------------------------------------------------------
# Loading

_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
E = TypeVar("E", bound=Enum)

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
    "caveats",
    "unconfirmed",
)


class _Document(Document):
    """A contract document: the shared reader, plus the citations seen (checked at the end)."""

    def __init__(self, text: str, origin: str) -> None:
        super().__init__(text, origin, contract_error)
        self.cite_refs: list[tuple[Path, str]] = []


class _Reader(Table):
    """Typed access to one table of the contract (the shared reader's), with the contract's
    own field kinds: an endpoint kind, a list of citations."""

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

    def load(self) -> Contract:
        data = self.doc.parse()
        top = _Reader(self.doc, (), data, _TOP_ALL)

        provider = self._provider(top.table("provider", ("name", "title", "version", "summary")))
        sources = self._sources(top)
        order = self._order(top.table("order", _ORDER_FIELDS))
        boundaries = self._boundaries(top)
        claims = self._claims(top, boundaries, order)
        resume = self._resume(top, boundaries, order)
        partitions = self._partitions(top.table("partitions", _PARTITION_FIELDS))
        membership = self._membership(top.table("membership", _MEMBERSHIP_FIELDS))
        pagination = self._pagination(top.table("pagination", _PAGINATION_FIELDS))
        caveats = tuple(
            Caveat(r.text("text"), r.cites()) for r in self._array(top, "caveats", ("text", "cite"))
        )
        unconfirmed = tuple(
            self._unconfirmed(r, data)
            for r in self._array(
                top, "unconfirmed", ("field", "question", "assumed", "cite", "resolved_by")
            )
        )
        for path, ref in self.cite_refs:
            if ref not in sources:
                close = difflib.get_close_matches(ref, list(sources), n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise self.error(
                    path,
                    f"cites {ref!r}, which no [sources.{ref}] table defines{hint}",
                    ref,
                )
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
        )

    def _provider(self, r: _Reader) -> ProviderInfo:
        name = r.text("name")
        if not _NAME.fullmatch(name):
            raise self.error(
                ("provider", "name"),
                "a provider name is lower-case letters, digits and '-' (kafka, dynamodb-streams)",
                name,
            )
        return ProviderInfo(name, r.text("title"), r.text("version"), r.optional_text("summary"))

    def _sources(self, top: _Reader) -> dict[str, Source]:
        if not top.has("sources"):
            return {}
        raw_sources = top.raw("sources")
        if not isinstance(raw_sources, dict):
            raise self.error(("sources",), "must be a table of [sources.ID] tables", raw_sources)
        out: dict[str, Source] = {}
        for sid, raw in raw_sources.items():
            r = _Reader(self.doc, ("sources", sid), raw, ("title", "url", "quote"))
            url = r.optional_text("url")
            if url is not None and not re.match(r"https?://\S+$", url):
                raise self.error(
                    ("sources", sid, "url"), "a URL starts with https:// or http://", url
                )
            out[sid] = Source(sid, r.text("title"), url, r.optional_text("quote"))
        return out

    def _order(self, r: _Reader) -> OrderFacts:
        kind = r.choice("kind", CoordinateKind)
        successor = r.boolean("successor")
        if kind is CoordinateKind.STRING and successor:
            raise self.error(
                ("order", "successor"), "string orders have no exact successor", successor
            )
        encodings = ENCODINGS_OF_KIND[kind]
        encoding = r.choice("encoding", Encoding, default=encodings[0])
        if encoding not in encodings:
            raise self.error(
                ("order", "encoding"),
                f"a {kind.value} order takes one of: {', '.join(e.value for e in encodings)}",
                encoding.value,
            )
        shared = r.boolean("shared_positions")
        ties = r.choice("ties", Ties) if r.has("ties") else None
        if ties is not None and not shared:
            raise self.error(
                ("order", "ties"),
                "ties only matter when shared_positions = true; remove it or set shared_positions",
                ties.value,
            )
        tiebreaker = r.optional_text("tiebreaker")
        if (ties is Ties.TIEBREAKER) != (tiebreaker is not None):
            raise self.error(
                ("order", "tiebreaker"),
                'name the tiebreaker exactly when ties = "tiebreaker"',
                tiebreaker,
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
        return OrderFacts(
            name=r.text("name"),
            kind=kind,
            successor=successor,
            comparable=r.boolean("comparable", default=True),
            resolution=r.text("resolution"),
            encoding=encoding,
            shared_positions=shared,
            ties=ties,
            tiebreaker=tiebreaker,
            example=example,
            cite=r.cites(),
        )

    def _boundaries(self, top: _Reader) -> dict[str, Boundary]:
        raw = top.raw("boundaries")
        if not isinstance(raw, dict) or not raw:
            raise self.error(("boundaries",), "list at least one boundary: [boundaries.NAME]", raw)
        out: dict[str, Boundary] = {}
        for name, table in raw.items():
            r = _Reader(
                self.doc, ("boundaries", name), table, ("surface", "cut", "meaning", "cite")
            )
            out[name] = Boundary(
                name, r.choice("surface", Surface), r.endpoint("cut"), r.text("meaning"), r.cites()
            )
        return out

    def _claims(
        self, top: _Reader, boundaries: Mapping[str, Boundary], order: OrderFacts
    ) -> dict[str, ClaimFacts]:
        if not top.has("claims"):
            return {}
        raw = top.raw("claims")
        if not isinstance(raw, dict):
            raise self.error(("claims",), "must be a table of [claims.NAME] tables", raw)
        out: dict[str, ClaimFacts] = {}
        for name, table in raw.items():
            path: Path = ("claims", name)
            r = _Reader(self.doc, path, table, _CLAIM_FIELDS)
            boundary = self._reference(r, "boundary", boundaries, Surface.RECORD)
            adjust = r.choice("adjust", Adjust, default=Adjust.NONE)
            self._check_adjust(path, adjust, order)
            out[name] = ClaimFacts(
                name=name,
                boundary=boundary,
                guarantee=r.choice("guarantee", Guarantee),
                certifies=r.boolean("certifies"),
                as_kind=r.endpoint("as"),
                adjust=adjust,
                occurs=r.choice("occurs", Occurs, default=Occurs.CONTINUOUS),
                statement=r.text("statement"),
                cite=r.cites(),
            )
        return out

    def _resume(
        self, top: _Reader, boundaries: Mapping[str, Boundary], order: OrderFacts
    ) -> dict[Endpoint, ResumeRule]:
        if not top.has("resume"):
            return {}
        table = top.table("resume", ("before", "through"))
        out: dict[Endpoint, ResumeRule] = {}
        for key in ("before", "through"):
            if not table.has(key):
                continue
            r = table.table(key, ("boundary", "adjust"))
            boundary = self._reference(r, "boundary", boundaries, Surface.PARAMETER)
            adjust = r.choice("adjust", Adjust, default=Adjust.NONE)
            self._check_adjust(("resume", key), adjust, order)
            out[Endpoint(key)] = ResumeRule(Endpoint(key), boundary, adjust)
        return out

    def _reference(
        self, r: _Reader, key: str, boundaries: Mapping[str, Boundary], surface: Surface
    ) -> str:
        name = r.text(key)
        path = (*r.path, key)
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
        return PartitionFacts(
            unit=r.text("unit"),
            order=r.choice("order", CrossOrder),
            frontier=r.choice("frontier", Frontier),
            statement=r.optional_text("statement"),
            cite=r.cites(),
        )

    def _membership(self, r: _Reader) -> MembershipFacts:
        changes = r.choice("changes", MembershipChange)
        lineage = r.choice("lineage", Lineage, default=Lineage.NONE)
        if r.has("lineage") and changes is not MembershipChange.SPLIT_MERGE:
            raise self.error(
                ("membership", "lineage"),
                'lineage only applies when changes = "split-merge"',
                lineage.value,
            )
        return MembershipFacts(
            changes=changes,
            discovery=r.choice("discovery", Discovery),
            epochs=r.choice("epochs", Epochs),
            lineage=lineage,
            statement=r.optional_text("statement"),
            cite=r.cites(),
        )

    def _pagination(self, r: _Reader) -> PaginationFacts:
        return PaginationFacts(
            token=r.choice("token", TokenKind),
            overlap=r.choice("overlap", Possibility),
            empty_pages=r.choice("empty_pages", Possibility),
            event_id=r.optional_text("event_id"),
            statement=r.optional_text("statement"),
            cite=r.cites(),
        )

    def _array(self, top: _Reader, key: str, allowed: tuple[str, ...]) -> list[_Reader]:
        if not top.has(key):
            return []
        raw = top.raw(key)
        if not isinstance(raw, list):
            raise self.error((key,), f"write each entry as a [[{key}]] table", raw)
        return [_Reader(self.doc, (key, i), item, allowed) for i, item in enumerate(raw)]

    def _unconfirmed(self, r: _Reader, data: Mapping[str, object]) -> Unconfirmed:
        text = r.text("field")
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
        resolved = r.cites("resolved_by")
        return Unconfirmed(
            target, r.text("question"), r.optional_text("assumed"), r.cites(), resolved
        )


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
)
_PARTITION_FIELDS = ("unit", "order", "frontier", "statement", "cite")
_MEMBERSHIP_FIELDS = ("changes", "discovery", "epochs", "lineage", "statement", "cite")
_PAGINATION_FIELDS = ("token", "overlap", "empty_pages", "event_id", "statement", "cite")

#: Every field a contract may have, by table (docs/contracts.md documents each one).
FIELDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "provider": ("name", "title", "version", "summary"),
        "sources.ID": ("title", "url", "quote"),
        "order": _ORDER_FIELDS,
        "boundaries.NAME": ("surface", "cut", "meaning", "cite"),
        "claims.NAME": _CLAIM_FIELDS,
        "resume.before / resume.through": ("boundary", "adjust"),
        "partitions": _PARTITION_FIELDS,
        "membership": _MEMBERSHIP_FIELDS,
        "pagination": _PAGINATION_FIELDS,
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
