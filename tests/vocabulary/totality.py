"""Totality checks: every name of the vocabulary has every home it needs, and no home
spells a name the vocabulary lacks.

One function per closed set of :mod:`fencepost.vocabulary`; each takes the set
(default: the vocabulary's) and the homes (default: read from the code, the
tests and the docs) and returns what is missing, one line per missing home, so
a planted name without a home, or a home without its name, is reported
(tests/vocabulary/test_totality.py checks both ways). docs/changing.md lists
the same homes per kind of change.

Cost: imports of the packages named, and reading a few source files; no run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from fencepost import vocabulary as V
from fencepost.vocabulary.backends import BackendName
from fencepost.vocabulary.conformance import WorldName
from fencepost.vocabulary.mutants import MutantName

ROOT = Path(__file__).resolve().parents[2]


def _source(*paths: str) -> str:
    return "\n".join((ROOT / p).read_text(encoding="utf-8") for p in paths)


def _docs_rule_kinds(text: str | None = None) -> dict[str, str]:
    """rule -> its kind in docs/conformance.md's table "What each failure means"."""
    text = _source("docs/conformance.md") if text is None else text
    kinds: dict[str, str] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[1] in ("property", "protocol", "sync property"):
            for name in re.findall(r"`([a-z_]+)`", cells[0]):
                kinds[name] = cells[1]
    return kinds


def _referenced(enum_name: str, members: Iterable[str], source: str) -> set[str]:
    """The members ``enum_name.MEMBER`` that ``source`` uses outside their definition."""
    return {m for m in members if re.search(rf"\b{enum_name}\.{m.upper()}\b", source)}


# --- rules ------------------------------------------------------------------------------------


def missing_rule_homes(
    properties: Mapping[str, str] = V.PROPERTIES,
    row_properties: Mapping[str, str] = V.ROW_PROPERTIES,
    protocol_rules: Mapping[str, str] = V.PROTOCOL_RULES,
    *,
    invariants: Collection[str] | None = None,
    judge_checks: Collection[str] | None = None,
    harness_rules: Mapping[str, str] | None = None,
    docs_kinds: Mapping[str, str] | None = None,
) -> list[str]:
    """Each property has a model invariant (unless the vocabulary says why not), a judge
    check and a harness rule that counts it as a property; each row property a judge check
    and a harness row rule; each protocol rule a harness rule; each its row in
    docs/conformance.md's table of failures, of its kind. Defaults read the code.

    ``harness_rules`` maps each harness rule to ``property``, ``sync property`` or
    ``protocol``; ``judge_checks`` holds the names a judge function reports."""
    from fencepost.harness.rules import Rule
    from fencepost.judge.properties import Property
    from fencepost.judge.rows import RowProperty
    from fencepost.model.invariants import INVARIANTS_BY_NAME

    if invariants is None:
        invariants = set(INVARIANTS_BY_NAME)
    if judge_checks is None:
        # a judge check: a judge function that reports the name (not just its enum member)
        body = "\n".join(
            line
            for line in _source("judge/properties.py", "judge/rows.py", "judge/decide.py").split(
                "\n"
            )
            if not re.match(r"\s+[A-Z_]+ = \"", line)
        )
        judge_checks = _referenced("Property", [p.value for p in Property], body) | _referenced(
            "RowProperty", [p.value for p in RowProperty], body
        )
    if harness_rules is None:
        harness_rules = {
            r.value: "property"
            if r.is_property
            else "sync property"
            if r.is_row_property
            else "protocol"
            for r in Rule
        }
    if docs_kinds is None:
        docs_kinds = _docs_rule_kinds()
    missing: list[str] = []
    kinds = (
        [(n, "property") for n in properties]
        + [(n, "sync property") for n in row_properties]
        + [(n, "protocol") for n in protocol_rules]
    )
    for name, kind in kinds:
        if kind == "property" and name not in invariants and name not in V.WITHOUT_MODEL_INVARIANT:
            missing.append(f"property {name}: no model invariant (fencepost.model.invariants)")
        if kind != "protocol" and name not in judge_checks:
            missing.append(f"{kind} {name}: no judge check (fencepost.judge)")
        if harness_rules.get(name) != kind:
            found = harness_rules.get(name, "no rule")
            missing.append(f"{kind} {name}: harness rule is {found} (fencepost.harness.rules)")
        if docs_kinds.get(name) != kind:
            found = docs_kinds.get(name, "no row")
            missing.append(f"{kind} {name}: docs/conformance.md's failure table has {found}")
    named = {n for n, _ in kinds}
    for name in sorted(set(invariants) - set(properties)):
        missing.append(f"model invariant {name}: not a property of the vocabulary")
    for name in sorted(set(harness_rules) - named):
        missing.append(f"harness rule {name}: not a rule of the vocabulary")
    for name in sorted(set(judge_checks) - named):
        missing.append(f"judge check {name}: not a rule of the vocabulary")
    return missing


# --- mutants ----------------------------------------------------------------------------------

#: Where the model and the Z3 relation switch a mutant on (``mutant == "NAME"``).
MODEL_SOURCES = ("model/merge.py", "model/publishers.py", "model/readers.py")
RELATION_SOURCES = ("properties/protocol_publishers.py", "properties/protocol_readers.py")

_BRANCH = re.compile(r"""mutant\s*(?:==|!=)\s*["']([^"']+)["']""")


def missing_mutant_homes(
    mutants: Mapping[str, MutantName] = V.MUTANTS,
    *,
    model: Collection[str] | None = None,
    catalog: Collection[str] | None = None,
    model_branches: Collection[str] | None = None,
    relation_branches: Collection[str] | None = None,
    claimed_rules: Mapping[str, Collection[str]] | None = None,
    documented: Collection[str] | None = None,
    proof_table: Collection[str] | None = None,
) -> list[str]:
    """Every known bug has its implementation in the catalog and its name in the catalog
    paragraph of docs/conformance.md; one the vocabulary marks ``in_model`` also a model
    mutant, a branch in the model's transitions, one in the Z3 relation and a row in
    docs/proofs.md's table of refutations; no home names a bug the vocabulary lacks; and
    every rule a catalog entry or a model mutant claims to be caught by is a rule of the
    vocabulary."""
    from fencepost.model.mutants import MUTANTS as MODEL
    from fencepost.mutants import CATALOG

    model = set(MODEL) if model is None else model
    catalog = set(CATALOG) if catalog is None else catalog
    if model_branches is None:
        model_branches = set(_BRANCH.findall(_source(*MODEL_SOURCES)))
    if relation_branches is None:
        relation_branches = set(_BRANCH.findall(_source(*RELATION_SOURCES)))
    if claimed_rules is None:
        claimed: dict[str, set[str]] = {}
        for name, v in CATALOG.items():
            claimed[f"catalog {name}"] = {r for rules in v.caught_by.values() for r in rules}
        for name, mutant in MODEL.items():
            claimed[f"model mutant {name}"] = {inv for _, inv in mutant.expected}
        claimed_rules = claimed
    if documented is None:
        text = _source("docs/conformance.md")
        section = text.split("## fencepost's own SUT and the mutant catalog", 1)[-1]
        documented = set(re.findall(r"`([a-z]+(?:-[a-z]+)*)`", section.split("\n## ", 1)[0]))
    if proof_table is None:
        rows = _source("docs/proofs.md").split("| mutant | refuted", 1)[-1].split("\n\n", 1)[0]
        proof_table = {
            n.strip()
            for line in rows.splitlines()[2:]
            for n in line.strip().strip("|").split("|")[0].split(",")
        }
    missing: list[str] = []
    for name, m in mutants.items():
        if name not in catalog:
            missing.append(f"mutant {name}: no catalog entry (fencepost.mutants.catalog)")
        if name not in documented:
            missing.append(f"mutant {name}: not listed in docs/conformance.md's mutant catalog")
        if m.in_model and name not in proof_table:
            missing.append(f"mutant {name}: no row in docs/proofs.md's table of refutations")
        if not (m.bug and m.source):
            missing.append(f"mutant {name}: no bug text or no source in the vocabulary")
        homes = (
            (model, "model mutant (fencepost.model.mutants)"),
            (model_branches, f"branch in the model's transitions ({', '.join(MODEL_SOURCES)})"),
            (relation_branches, f"branch in the Z3 relation ({', '.join(RELATION_SOURCES)})"),
        )
        for home, what in homes:
            if m.in_model and name not in home:
                missing.append(f"mutant {name}: no {what}")
            if not m.in_model and name in home:
                missing.append(f"mutant {name}: has a {what} but the vocabulary says not")
    for where, names in (
        ("catalog", catalog),
        ("model", model),
        ("model branch", model_branches),
        ("Z3 relation branch", relation_branches),
        ("docs/proofs.md row", proof_table),
    ):
        for name in sorted(set(names) - set(mutants)):
            missing.append(f"{where} {name}: not a mutant of the vocabulary")
    for who, rules in sorted(claimed_rules.items()):
        for rule in sorted(set(rules) - set(V.RULES)):
            missing.append(f"{who} is caught by {rule}: not a rule of the vocabulary")
    return missing


# --- store backends ---------------------------------------------------------------------------


def missing_backend_homes(
    backends: Mapping[str, BackendName] = V.STORE_BACKENDS,
    *,
    openers: Collection[str] | None = None,
    schemes: Collection[str] | None = None,
    contract_suite: Collection[str] | None = None,
    refinement: Collection[str] | None = None,
    scenario_runner: Collection[str] | None = None,
) -> list[str]:
    """Every store backend has an opener (and its URL schemes open it), a contract-suite
    entry (tests/store_backends.py), a refinement backend (a branch of
    ``fencepost.properties.backends.open_backend``) and, when it claims ``in_scenarios``,
    the scenario runner's; no home names a backend the vocabulary lacks."""
    from store_backends import STORE_BACKENDS as SUITE

    from fencepost.impl.open import OPENERS, OPENERS_BY_BACKEND
    from fencepost.scenarios.impl_runner import BACKENDS as SCENARIO_BACKENDS

    openers = set(OPENERS_BY_BACKEND) if openers is None else openers
    schemes = set(OPENERS) if schemes is None else schemes
    contract_suite = set(SUITE) if contract_suite is None else contract_suite
    if refinement is None:
        tree = ast.parse(_source("properties/backends.py"))
        refinement = {
            str(node.comparators[0].value)
            for fn in ast.walk(tree)
            if isinstance(fn, ast.FunctionDef) and fn.name == "open_backend"
            for node in ast.walk(fn)
            if isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Name)
            and node.left.id == "name"
            and isinstance(node.comparators[0], ast.Constant)
        }
    if scenario_runner is None:
        scenario_runner = set(SCENARIO_BACKENDS)
    missing: list[str] = []
    for name, b in backends.items():
        if name not in openers:
            missing.append(f"backend {name}: no opener (fencepost.impl.open.OPENERS_BY_BACKEND)")
        for scheme in b.schemes:
            if scheme not in schemes:
                missing.append(f"backend {name}: {scheme}: URLs open nothing (impl/open.py)")
        if name not in contract_suite:
            missing.append(f"backend {name}: no contract-suite entry (tests/store_backends.py)")
        if name not in refinement:
            missing.append(f"backend {name}: no refinement backend (properties/backends.py)")
        if b.in_scenarios and name not in scenario_runner:
            missing.append(f"backend {name}: the scenario runner does not drive it")
    for where, names in (
        ("opener", openers),
        ("contract-suite entry", contract_suite),
        ("refinement backend", refinement),
        ("scenario backend", scenario_runner),
    ):
        for name in sorted(set(names) - set(backends)):
            missing.append(f"{where} {name}: not a backend of the vocabulary")
    return missing


# --- levels, families, phases, worlds ---------------------------------------------------------


def missing_conformance_homes(
    families: Mapping[str, frozenset[str]] = V.FAMILY_LEVELS,
    phases: Mapping[str, str] = V.PHASES,
    worlds: Mapping[str, WorldName] = V.WORLDS,
    *,
    bases: Mapping[str, str] | None = None,
    plan: Collection[str] | None = None,
    gate_phases: Collection[str] | None = None,
    world_constants: Collection[str] | None = None,
    docs: str | None = None,
) -> list[str]:
    """Every family needs known levels and (but ``algebra``) a scripted base; every
    phase a place in the harness's plan of a whole run (``exhaustive`` stands for
    the phases of the scripted bases); the gate's phase timings name phases of the plan;
    every world a constant in ``fencepost.harness.worlds``, known levels and its
    ``--world`` in docs/conformance.md."""
    from fencepost.harness.bases import BASES
    from fencepost.harness.conformance import phase_plan
    from fencepost.harness.worlds import WORLDS as HARNESS_WORLDS

    if bases is None:
        bases = {name: base.family for name, base in BASES.items()}
    if plan is None:
        plan = phase_plan(V.LEVELS)
    if gate_phases is None:
        from fencepost.gate import _PHASE_SECONDS

        gate_phases = set(_PHASE_SECONDS)
    if world_constants is None:
        import fencepost.harness.worlds as worlds_module

        world_constants = {
            value
            for key, value in vars(worlds_module).items()
            if key.isupper() and isinstance(value, str) and value in HARNESS_WORLDS
        }
    docs = _source("docs/conformance.md") if docs is None else docs
    exhaustive = {V.exhaustive_phase(b, d) for b in bases for d in range(0, 10)}
    missing: list[str] = []
    for name, levels in families.items():
        if not levels <= set(V.LEVELS):
            missing.append(f"family {name}: levels {sorted(levels - set(V.LEVELS))} are unknown")
        if name != "algebra" and name not in set(bases.values()):
            missing.append(f"family {name}: no scripted base (fencepost.harness.bases)")
    for name in sorted(set(bases.values()) - set(families)):
        missing.append(f"scripted bases of family {name}: not a family of the vocabulary")
    for name in phases:
        ran = any(p in exhaustive for p in plan) if name == "exhaustive" else name in plan
        if not ran:
            missing.append(f"phase {name}: not in the harness's plan (phase_plan)")
    for name in plan:
        if name not in phases and name not in exhaustive:
            missing.append(f"harness phase {name}: not a phase of the vocabulary")
    for name in sorted(set(gate_phases) - set(plan)):
        missing.append(f"gate phase timing {name}: not a phase of the plan (cli/gate.py)")
    for name, world in worlds.items():
        if name not in world_constants:
            missing.append(f"world {name}: no constant in fencepost.harness.worlds")
        if not set(world.levels) <= set(V.DECLARABLE_LEVELS):
            missing.append(f"world {name}: a level it tests is not declarable")
        if f"--world {name}" not in docs and name != next(iter(worlds)):
            missing.append(f"world {name}: docs/conformance.md never shows --world {name}")
    for name in sorted(set(world_constants) - set(worlds)):
        missing.append(f"harness world {name}: not a world of the vocabulary")
    return missing


# --- tools ------------------------------------------------------------------------------------


def missing_tool_homes(
    tools: Mapping[str, str] = V.TOOL_ADAPTERS,
    *,
    adapters: Mapping[str, str] | None = None,
    review: Collection[str] | None = None,
    extras: Collection[str] | None = None,
) -> list[str]:
    """Every tool has an adapter (whose module file exists), a review model, a pip extra
    and a page docs/real-tools-<tool>.md; no home names a tool the vocabulary lacks."""
    import tomllib

    from fencepost.adapters import ADAPTERS
    from fencepost.review.tools import TOOLS

    adapters = {n: a.module for n, a in ADAPTERS.items()} if adapters is None else adapters
    review = set(TOOLS) if review is None else review
    if extras is None:
        project = tomllib.loads(_source("pyproject.toml"))["project"]
        extras = set(project["optional-dependencies"])
    missing: list[str] = []
    for name in tools:
        if name not in adapters:
            missing.append(f"tool {name}: no adapter (fencepost.adapters.ADAPTERS)")
        elif not (ROOT / "adapters" / f"{adapters[name]}.py").is_file():
            missing.append(f"tool {name}: adapters/{adapters[name]}.py does not exist")
        if name not in review:
            missing.append(f"tool {name}: no review model (fencepost.review.tools)")
        if name not in extras:
            missing.append(f"tool {name}: no pip extra (pyproject.toml)")
        if not (ROOT / "docs" / f"real-tools-{name}.md").is_file():
            missing.append(f"tool {name}: no page docs/real-tools-{name}.md")
    for where, names in (("adapter", adapters), ("review model", review)):
        for name in sorted(set(names) - set(tools)):
            missing.append(f"{where} {name}: not a tool of the vocabulary")
    return missing


# --- endpoint and order kinds -----------------------------------------------------------------


def missing_kind_homes(
    endpoints: Collection[str] = tuple(V.ENDPOINT_KINDS),
    orders: Collection[str] = tuple(V.ORDER_KINDS),
    *,
    endpoint_homes: Mapping[str, Collection[str]] | None = None,
    order_homes: Mapping[str, Collection[str]] | None = None,
) -> list[str]:
    """Every home of endpoint kinds (the implementation, the judge, the Z3 encoding,
    the model: its kinds beside the ``nothing`` sentinel) and of order kinds (the
    implementation's parsers, the judge's wire) spells exactly the vocabulary's."""
    import typing

    from fencepost.impl import cuts as impl_cuts
    from fencepost.impl.orders import ORDER_KINDS as IMPL_ORDERS
    from fencepost.judge import values as jv
    from fencepost.model.cuts import KIND_NAMES
    from fencepost.properties.cut_encoding import CutKind

    if endpoint_homes is None:
        endpoint_homes = {
            "fencepost.impl.cuts.Endpoint": [e.value for e in impl_cuts.Endpoint],
            "fencepost.judge.values.Endpoint": [e.value for e in jv.Endpoint],
            "fencepost.properties.cut_encoding.CutKind": list(typing.get_args(CutKind)),
            "fencepost.model.cuts (KIND_NAMES and NOTHING)": ["nothing", *KIND_NAMES],
        }
    if order_homes is None:
        order_homes = {
            "fencepost.impl.orders.ORDER_KINDS": list(IMPL_ORDERS),
            "fencepost.judge.values.OrderKind": [k.value for k in jv.OrderKind],
        }
    missing: list[str] = []
    for what, names, homes in (
        ("endpoint kind", endpoints, endpoint_homes),
        ("order kind", orders, order_homes),
    ):
        for home, spelled in homes.items():
            for name in names:
                if name not in spelled:
                    missing.append(f"{what} {name}: not in {home}")
            for name in sorted(set(spelled) - set(names)):
                missing.append(f"{home} has {what} {name}: not in the vocabulary")
    return missing


# --- outcomes and withheld reasons ------------------------------------------------------------


def missing_outcome_homes(
    outcomes: Collection[str] = tuple(V.OUTCOMES),
    reasons: Collection[str] = tuple(V.WITHHELD_REASONS),
    *,
    outcome_homes: Mapping[str, Collection[str]] | None = None,
    reason_homes: Mapping[str, Collection[str]] | None = None,
) -> list[str]:
    """Every home of attempt outcomes (the implementation, the model, the Z3 relation, the
    wire) and of withheld reasons (the implementation, the judge, the model, the Z3
    relation, the last two without the reasons of :data:`WITHOUT_MODEL_REASON`; the
    harness's situation coverage) spells
    exactly the vocabulary's, the reasons in the vocabulary's checking order."""
    from fencepost.harness import protocol
    from fencepost.harness.coverage import Situation
    from fencepost.impl.merge import WithheldReason as ImplReason
    from fencepost.impl.publisher import Outcome
    from fencepost.judge.merge import WithheldReason as JudgeReason
    from fencepost.model import state
    from fencepost.properties import protocol_state

    def constants(names: Iterable[str]) -> list[str]:
        return [getattr(state, n) for n in names]

    if outcome_homes is None:
        outcome_homes = {
            "fencepost.impl.publisher.Outcome": [o.value for o in Outcome],
            "fencepost.model.state": constants(
                ("PUBLISHED", "CONFIRMED", "UNCHANGED", "WITHHELD", "GAVE_UP")
            ),
            "fencepost.properties.protocol_state.OUTCOMES": list(protocol_state.OUTCOMES[1:]),
            "fencepost.harness.protocol.OUTCOMES": list(protocol.OUTCOMES),
        }
    model_reasons = [r for r in reasons if r not in V.WITHOUT_MODEL_REASON]
    if reason_homes is None:
        reason_homes = {
            "fencepost.impl.merge.WithheldReason": [r.value for r in ImplReason],
            "fencepost.judge.merge.WithheldReason": [r.value for r in JudgeReason],
            "fencepost.model.state": constants(
                (
                    "MISSING_CHECKPOINT",
                    "EPOCH_MISMATCH",
                    "SCOPE_MISMATCH",
                    "UNSUPPORTED_FINALITY",
                    "NO_COVERAGE",
                    "CUTOVER_PENDING",
                )
            ),
            "fencepost.properties.protocol_state.REASONS": list(protocol_state.REASONS[1:]),
            # the harness's situation coverage: a situation per reason it must see withheld
            "fencepost.harness.coverage.Situation": [
                s.value.removeprefix("withheld_")
                for s in Situation
                if s.value.startswith("withheld_")
            ],
        }
    partial = {"fencepost.model.state", "fencepost.properties.protocol_state.REASONS"}
    missing: list[str] = []
    for home, spelled in outcome_homes.items():
        missing += [f"outcome {o}: not in {home}" for o in outcomes if o not in spelled]
        missing += [
            f"{home} has outcome {o}: not in the vocabulary" for o in spelled if o not in outcomes
        ]
    for home, spelled in reason_homes.items():
        want = model_reasons if home in partial else list(reasons)
        missing += [f"withheld reason {r}: not in {home}" for r in want if r not in spelled]
        missing += [
            f"{home} has withheld reason {r}: not in the vocabulary"
            for r in spelled
            if r not in reasons
        ]
        if [r for r in spelled if r in want] != [r for r in want if r in spelled]:
            missing.append(f"{home} checks the withheld reasons in another order")
    return missing
