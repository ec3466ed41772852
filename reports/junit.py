"""JUnit XML for CI: the one writer every command's ``--junit`` uses.

A command describes its results as a :class:`Suite` of :class:`Case` values
(``fencepost conform``: one case per phase; ``fencepost check``: one per part;
``fencepost scenarios``: one per scenario and target) and :func:`junit_xml`
writes them. Every string goes through :func:`~fencepost.reports.text.xml_text`
here, so no producer can forget it: a SUT's control characters, lone surrogates
and invisible characters never make the file unreadable or spoof what it shows.

Cost: linear in the size of the results.
"""

from __future__ import annotations

from dataclasses import dataclass
from xml.etree import ElementTree

from fencepost.reports.text import xml_text


@dataclass(frozen=True)
class Outcome:
    """How a case ended, when not passed: ``kind`` is failure, error or skipped."""

    kind: str
    message: str
    type: str | None = None
    text: str | None = None


@dataclass(frozen=True)
class Case:
    """One test case; ``outcome`` None means it passed."""

    classname: str
    name: str
    seconds: float | None = None
    outcome: Outcome | None = None
    output: str | None = None


@dataclass(frozen=True)
class Suite:
    """One test suite: its cases, properties (name, value) and standard output."""

    name: str
    cases: tuple[Case, ...]
    seconds: float | None = None
    properties: tuple[tuple[str, str], ...] = ()
    output: str | None = None


def _count(suite: Suite, kind: str) -> str:
    return str(sum(1 for c in suite.cases if c.outcome is not None and c.outcome.kind == kind))


def junit_xml(suite: Suite) -> str:
    """The suite as a JUnit XML document (``<testsuites>`` holding one ``<testsuite>``)."""
    root = ElementTree.Element("testsuites")
    seconds = suite.seconds
    if seconds is None:
        seconds = sum(c.seconds or 0.0 for c in suite.cases)
    node = ElementTree.SubElement(
        root,
        "testsuite",
        name=xml_text(suite.name),
        tests=str(len(suite.cases)),
        failures=_count(suite, "failure"),
        errors=_count(suite, "error"),
        skipped=_count(suite, "skipped"),
        time=f"{seconds:.3f}",
    )
    if suite.properties:
        props = ElementTree.SubElement(node, "properties")
        for name, value in suite.properties:
            ElementTree.SubElement(props, "property", name=xml_text(name), value=xml_text(value))
    for case in suite.cases:
        attributes = {"classname": xml_text(case.classname), "name": xml_text(case.name)}
        if case.seconds is not None:
            attributes["time"] = f"{case.seconds:.3f}"
        element = ElementTree.SubElement(node, "testcase", attributes)
        outcome = case.outcome
        if outcome is not None:
            detail = {"message": xml_text(outcome.message)}
            if outcome.type is not None:
                detail["type"] = xml_text(outcome.type)
            child = ElementTree.SubElement(element, outcome.kind, detail)
            if outcome.text is not None:
                child.text = xml_text(outcome.text)
        if case.output is not None:
            ElementTree.SubElement(element, "system-out").text = xml_text(case.output)
    if suite.output is not None:
        ElementTree.SubElement(node, "system-out").text = xml_text(suite.output)
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
