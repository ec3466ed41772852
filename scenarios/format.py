"""The scenario format: one TOML file per scenario, read and validated with file:line errors.

A scenario is a named, documented schedule with expected outcomes. It says, in
domain words, what the world is (orders, the membership of every epoch, every
partition's ground-truth events with their positions and finality), what happens
step by step (honest readers certify cuts, an operator misconfigures a
checkpoint, the source finalizes events, the membership changes, the provider
serves pages, ingest passes and publication attempts run with lost responses,
pauses between calls, crashes), and what must be true after each step (the
attempt's outcome, the publication record, the checkpoints). Every runner (the
model, the implementation, a SUT through the conformance harness) also checks
the properties of docs/semantics.md section 7 after every step.

A file's name carries its verdict: ``...-ok.toml`` is a schedule the correct
protocol passes; ``...-bad.toml`` replays the schedule of a known bug
(``variant``) and names in ``[broken]`` the property that must be caught.
docs are in ``scenarios/README.md`` (the library's index) and in
:data:`FORMAT_HELP` below.

Everything is validated before anything runs: unknown fields, wrong types, NaN,
huge numbers, a partition that is not a member when a step names it, a worker
left paused, a cut that does not fit its order. Errors are
:class:`ScenarioError`: ``file:line: field: problem``.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
from collections.abc import Mapping, Sequence
from pathlib import Path as FilePath
from types import MappingProxyType

from fencepost.inputs.toml import Document, Table, hint
from fencepost.inputs.toml import shown as _shown
from fencepost.inputs.tomllines import Path
from fencepost.judge.values import BadValue, Coordinate, Order
from fencepost.scenarios.spec import (
    _MAX_EPOCH,
    _MAX_RETRIES,
    _MAX_STEPS,
    POLICIES,
    PROPERTIES,
    RULE_NAMES,
    TARGETS,
    VARIANTS,
    Broken,
    EpochDef,
    EventDef,
    Scenario,
    ScenarioError,
    scenario_error,
)
from fencepost.scenarios.steps import StepReader

_TOP = (
    "name",
    "description",
    "source",
    "properties",
    "policy",
    "stream",
    "scope",
    "max_retries",
    "variant",
    "not_on",
    "orders",
    "epochs",
    "truth",
    "steps",
    "broken",
)


class _Loader:
    """Reads one scenario document: the world first, then the steps (:class:`StepReader`)."""

    def __init__(self, doc: Document, stem: str) -> None:
        self.doc = doc
        self.origin = doc.origin
        self.stem = stem

    def error(self, path: Path, problem: str) -> ScenarioError:
        error = self.doc.error(path, problem)
        assert isinstance(error, ScenarioError)
        return error

    def line(self, path: Path) -> int:
        return self.doc.line(path)

    def integer(self, path: Path, value: object, low: int, high: int) -> int:
        return Table(self.doc, (), {}, None).bounded(path, value, low, high)

    # -- the document ------------------------------------------------------------------

    def load(self) -> Scenario:
        top = self.doc.root(_TOP)
        name = top.text("name")
        if name != self.stem:
            raise top.error("name", f"the name {name!r} must equal the file name {self.stem!r}")
        if not (name.endswith("-ok") or name.endswith("-bad")):
            raise top.error(
                "name",
                "a scenario's name carries its verdict: end it in '-ok' (the correct protocol "
                "passes) or '-bad' (a recorded failing history that must be caught)",
            )
        description = top.text("description")
        source = top.text("source")
        properties = top.texts("properties")
        for i, prop in enumerate(properties):
            if prop not in PROPERTIES:
                raise top.error(
                    "properties", f"item {i + 1}: {prop!r} is not one of {', '.join(PROPERTIES)}"
                )
        policy = top.text("policy", "monotone")
        if policy not in POLICIES:
            raise top.error("policy", f"'monotone' or 'reset', got {policy!r}")
        stream = top.text("stream", "s")
        scope = top.text("scope", "q1")
        max_retries = top.integer("max_retries", 0, _MAX_RETRIES, 3)
        variant = top.opt_text("variant")
        if variant is not None and variant not in VARIANTS:
            raise top.error(
                "variant",
                f"unknown bug {variant!r} (known: {', '.join(VARIANTS)}){hint(variant, VARIANTS)}",
            )
        not_on = self._not_on(top)
        orders = self._orders(top)
        epochs = self._epochs(top, orders)
        truth = self._truth(top, orders, epochs)
        broken = self._broken(top)
        if name.endswith("-bad"):
            if broken is None:
                raise top.error(
                    None, "a '-bad' scenario needs a [broken] table naming the property"
                )
            if variant is None:
                raise top.error(
                    None, "a '-bad' scenario names the known bug it replays: variant = ..."
                )
        else:
            if broken is not None:
                raise top.error("broken", "only '-bad' scenarios have a [broken] table")
            if variant is not None:
                raise top.error("variant", "only '-bad' scenarios run a buggy variant")
        draft = Scenario(
            name=name,
            origin=self.origin,
            description=description,
            source=source,
            properties=properties,
            policy=policy,
            stream=stream,
            scope=scope,
            max_retries=max_retries,
            variant=variant,
            not_on=MappingProxyType(not_on),
            orders=MappingProxyType(orders),
            epochs=epochs,
            truth=MappingProxyType(truth),
            steps=(),
            broken=broken,
            publishers=(),
            readers=(),
        )
        steps, publishers, readers = StepReader(self, top, draft).read()
        if broken is not None and broken.step is not None and broken.step > len(steps):
            raise self.error(("broken", "step"), f"there are only {len(steps)} steps")
        return dataclasses.replace(draft, steps=steps, publishers=publishers, readers=readers)

    def _not_on(self, top: Table) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, value in top.mapping("not_on").items():
            if key not in TARGETS:
                raise self.error(("not_on", key), f"unknown target (targets: {', '.join(TARGETS)})")
            if type(value) is not str or not value.strip():
                raise self.error(
                    ("not_on", key), "say why the scenario cannot run there (a string)"
                )
            out[key] = value
        return out

    def _orders(self, top: Table) -> dict[str, Order]:
        raw = top.mapping("orders")
        if not raw:
            raise top.error(None, "declare at least one order: [orders.NAME] kind = ...")
        orders: dict[str, Order] = {}
        node = top.table("orders", list(raw))
        for name in raw:
            entry = node.table(name, ("kind", "successor"))
            kind = entry.text("kind")
            if kind == "integer":
                if not entry.has("successor"):
                    raise entry.error(
                        None,
                        "an integer order must say successor = true (offsets: through x is "
                        "before x+1) or false (timestamps: events may sit between integers)",
                    )
                orders[name] = Order.integer(name, entry.boolean("successor", False))
            elif kind == "string":
                if entry.has("successor") and entry.raw("successor") is not False:
                    raise entry.error("successor", "a string order has no exact successor")
                orders[name] = Order.string(name)
            else:
                raise entry.error("kind", f"'integer' or 'string', got {_shown(kind)}")
        return orders

    def _epochs(self, top: Table, orders: Mapping[str, Order]) -> tuple[EpochDef, ...]:
        nodes = top.tables("epochs", ("epoch", "members"))
        if not nodes:
            raise top.error(None, "declare the membership: [[epochs]] epoch = 1, members = {...}")
        out: list[EpochDef] = []
        for node in nodes:
            epoch = node.integer("epoch", 1, _MAX_EPOCH)
            if out and epoch <= out[-1].epoch:
                raise node.error(
                    "epoch", f"epochs strictly increase; {epoch} follows {out[-1].epoch}"
                )
            members: dict[str, str] = {}
            for partition, order_name in node.mapping("members").items():
                if type(order_name) is not str or order_name not in orders:
                    raise node.error(
                        "members",
                        f"member {partition!r} names order {_shown(order_name)}, which is not "
                        f"declared (orders: {', '.join(orders)})",
                    )
                members[partition] = order_name
            out.append(EpochDef(epoch, MappingProxyType(members), node.line()))
        return tuple(out)

    def _truth(
        self, top: Table, orders: Mapping[str, Order], epochs: tuple[EpochDef, ...]
    ) -> dict[tuple[int, str], tuple[EventDef, ...]]:
        by_key: dict[tuple[int, str], list[EventDef]] = {}
        positions: dict[str, Coordinate] = {}
        finality: dict[str, bool] = {}
        declared = {e.epoch: e for e in epochs}
        for node in top.tables("truth", ("partition", "epochs", "events")):
            partition = node.text("partition")
            if node.has("epochs"):
                raw = node.raw("epochs")
                if not isinstance(raw, list) or not raw:
                    raise node.error("epochs", "a non-empty array of epoch numbers is required")
                block_epochs = [self.integer((*node.path, "epochs"), e, 1, _MAX_EPOCH) for e in raw]
            else:
                block_epochs = [e.epoch for e in epochs if partition in e.members]
                if not block_epochs:
                    raise node.error("partition", f"{partition!r} is not a member of any epoch")
            for e in block_epochs:
                if e not in declared:
                    raise node.error("epochs", f"epoch {e} is not declared in [[epochs]]")
                if partition not in declared[e].members:
                    raise node.error("partition", f"{partition!r} is not a member of epoch {e}")
            raw_events = node.raw("events")
            if not isinstance(raw_events, list):
                raise node.error(
                    None, "'events' is required: an array of { id = ..., at = ..., final = ... }"
                )
            for i, raw_event in enumerate(raw_events):
                where = (*node.path, "events")
                if not isinstance(raw_event, dict):
                    raise self.error(
                        where,
                        f"event {i + 1}: an inline table {{ id = ..., at = ... }} is required",
                    )
                for key in raw_event:
                    if key not in ("id", "at", "final"):
                        raise self.error(
                            where, f"event {i + 1}: unknown field {key!r} (allowed: id, at, final)"
                        )
                event_id = raw_event.get("id")
                if type(event_id) is not str or not event_id:
                    raise self.error(
                        where,
                        f"event {i + 1}: id must be a non-empty string, got {_shown(event_id)}",
                    )
                final = raw_event.get("final", True)
                if type(final) is not bool:
                    raise self.error(
                        where,
                        f"event {event_id!r}: final must be true or false, got {_shown(final)}",
                    )
                at = raw_event.get("at")
                for e in block_epochs:
                    order = orders[declared[e].members[partition]]
                    try:
                        order.validate(at, "at")
                    except BadValue as exc:
                        raise self.error(
                            where, f"event {event_id!r}: position {_shown(at)}: {exc.problem}"
                        ) from None
                assert type(at) is int or type(at) is str
                known_final = finality.setdefault(event_id, final)
                if known_final != final:
                    raise self.error(
                        where,
                        f"event {event_id!r} is final = {str(known_final).lower()} elsewhere; "
                        "finality belongs to the event (finalize it with a step instead)",
                    )
                known = positions.setdefault(event_id, at)
                if known != at:
                    raise self.error(
                        where,
                        f"event {event_id!r} is at {known!r} elsewhere; an event keeps its "
                        "position (give a moved copy a new id)",
                    )
                for e in block_epochs:
                    by_key.setdefault((e, partition), []).append(EventDef(event_id, at, final))
        owner: dict[tuple[int, str], str] = {}
        out: dict[tuple[int, str], tuple[EventDef, ...]] = {}
        for (e, partition), events in by_key.items():
            for ev in events:
                other = owner.setdefault((e, ev.id), partition)
                if other != partition:
                    raise top.error(
                        "truth",
                        f"event {ev.id!r} belongs to both {other!r} and {partition!r} in epoch {e}",
                    )
            seen_ids: set[str] = set()
            dup: list[str] = []
            for ev in events:  # linear in the events (a 100k-event partition reads at once)
                if ev.id in seen_ids:
                    dup.append(ev.id)
                seen_ids.add(ev.id)
            if dup:
                raise top.error(
                    "truth", f"event {dup[0]!r} is listed twice for {partition!r} in epoch {e}"
                )
            out[(e, partition)] = tuple(sorted(events, key=lambda ev: (_sort_key(ev.at), ev.id)))
        return out

    def _broken(self, top: Table) -> Broken | None:
        node = top.opt_table("broken", ("property", "accept", "step"))
        if node is None:
            return None
        prop = node.text("property")
        if prop not in RULE_NAMES:
            raise node.error("property", f"{prop!r} is not one of {', '.join(RULE_NAMES)}")
        accept = node.texts("accept")
        for item in accept:
            if item not in RULE_NAMES:
                raise node.error("accept", f"{item!r} is not one of {', '.join(RULE_NAMES)}")
        step = node.opt_integer("step", 1, _MAX_STEPS)
        return Broken(prop, accept, step, self.line(node.path))


def _sort_key(at: Coordinate) -> tuple[int, int | str]:
    return (0, at) if isinstance(at, int) else (1, at)


# ---------------------------------------------------------------------------
# Entry points


def load_text(text: str, origin: str, stem: str | None = None) -> Scenario:
    """Validate one scenario's TOML ``text``; ``origin`` names it in errors.

    ``stem`` is the file name without ``.toml`` (the scenario's name must equal
    it); by default the last component of ``origin``.
    """
    if stem is None:
        stem = FilePath(origin).name.removesuffix(".toml")
    return _Loader(Document(text, origin, scenario_error), stem).load()


def load_file(path: FilePath | str) -> Scenario:
    """Read and validate one scenario file; :class:`ScenarioError` names file and line."""
    path = FilePath(path)
    doc = Document.from_file(str(path), scenario_error)
    return _Loader(doc, path.name.removesuffix(".toml")).load()


def _decode(raw: bytes, origin: str, stem: str) -> Scenario:
    return _Loader(Document.from_bytes(raw, origin, scenario_error), stem).load()


def shipped_names() -> tuple[str, ...]:
    """The names of the scenarios shipped as package data of ``fencepost.scenarios``."""
    root = importlib.resources.files("fencepost.scenarios")
    return tuple(
        sorted(
            entry.name.removesuffix(".toml")
            for entry in root.iterdir()
            if entry.name.endswith(".toml") and entry.is_file()
        )
    )


def load_shipped(name: str) -> Scenario:
    """Load the shipped scenario ``name``."""
    names = shipped_names()
    if name not in names:
        raise ScenarioError(name, None, "", f"no shipped scenario of that name{hint(name, names)}")
    resource = importlib.resources.files("fencepost.scenarios") / f"{name}.toml"
    return _decode(resource.read_bytes(), f"scenarios/{name}.toml", name)


def load_shipped_all() -> list[Scenario]:
    return [load_shipped(name) for name in shipped_names()]


def scenario_files(paths: Sequence[FilePath | str]) -> list[FilePath]:
    """The scenario files named by ``paths``: files as given, folders' ``*.toml`` sorted.

    Raises :class:`ScenarioError` for a path that does not exist or a folder
    without scenario files.
    """
    out: list[FilePath] = []
    for given in paths:
        path = FilePath(given)
        if path.is_dir():
            found = sorted(p for p in path.glob("*.toml") if p.is_file())
            if not found:
                raise ScenarioError(
                    str(path), None, "", "the folder holds no *.toml scenario files"
                )
            out.extend(found)
        elif path.is_file():
            if path.suffix != ".toml":
                raise ScenarioError(str(path), None, "", "a scenario file ends in .toml")
            out.append(path)
        elif path.exists():
            raise ScenarioError(
                str(path), None, "", "not a regular file or folder (a device or a pipe?)"
            )
        else:
            raise ScenarioError(str(path), None, "", "no such file or folder")
    return out


#: A short guide to the format, printed by ``fencepost scenarios --format-help``.
FORMAT_HELP = """\
A scenario is one TOML file, NAME-ok.toml or NAME-bad.toml (name = the file name):

  name, description, source        what it shows and where it comes from (citation)
  properties = [...]               the section-7 properties it exercises (all are checked)
  policy = "monotone" | "reset"    cutover policy; stream, scope, max_retries (default 3)
  variant = "relabel"              -bad only: the known bug the schedule runs against
  not_on = { model = "why" }       targets that cannot express it, and why
  [orders.NAME] kind = "integer", successor = true|false   (or kind = "string")
  [[epochs]] epoch = 1, members = { A = "NAME", ... }
  [[truth]] partition = "A", epochs = [1, 2] (default: all its epochs),
            events = [{ id = "a1", at = 100, final = true }, ...]
  [[steps]] do = ...:
    certify       partition, cut             an honest reader certifies a true cut
    misconfigure  partition, kind, cut       provisional | wrong_scope | wrong_epoch
    finalize      events = [ids]             the source finalizes events
    reshard       epoch                      the next epoch's membership becomes durable
    serve         partition, token?, events, next?, claim?, final?, lost?   a provider page
    publish       publisher, faults?, pause_before?, pause_nth?
    ingest        reader, partition, faults?, pause_before?, pause_nth?, max_pages?
    resume        worker, pause_before?, pause_nth?
    crash         worker                     a paused process dies; it restarts empty
    faults = { write_publication = ["applied_lost", "ok"] }  one mode per successive call:
             ok | lost (not applied, response lost) | applied_lost (writes only)
    expect = { outcome, reason, epoch, cut }   how the request ending here ends
    record = { epoch, cut, revision, writer }  the publication record after the step
    checkpoints = { A = "before 100", B = "none" }, generations = { A = 2 }
  [broken] property = "no_relabeling", accept = [...], step = N    -bad only
Cuts are written "nothing", "before X" or "through X".
"""
