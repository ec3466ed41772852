"""``fencepost conform``: test any implementation through the JSON-lines protocol.

Exit status: 0 conformant, 1 not conformant (a property or protocol rule
broken, or none of the requested levels implemented), 2 usage error (or an
output that could not be written), 3 an internal error of fencepost (no verdict;
the message says how to reproduce it), 130 interrupted by Ctrl-C (SIGINT): every
SUT process is ended and the summary shows the phases that ran before it.
Progress goes to stderr (rich), the summary to stdout (``--json`` for machines).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import signal
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from fencepost.harness.conformance import MAX_SCHEDULES, TIMEOUT_RANGE, timeout_problem
from fencepost.harness.protocol import LEVELS, READS, SYNC_LEVEL
from fencepost.harness.rules import HarnessError
from fencepost.harness.worlds import (
    CURSORS,
    DEFAULT_PARTITIONS,
    DEFAULT_READS,
    DEFAULT_STARTUP_TIMEOUT,
    DEFAULT_WORLD,
    LATE_COMMITS,
    PARTITIONINGS,
    WIRE_UNITS,
    WORLDS,
)
from fencepost.reports.text import printable
from fencepost.views.output import (
    OutputError,
    check_output,
    report_options,
    wants_report,
    write_outputs,
)

if TYPE_CHECKING:
    from rich.progress import TaskID

    from fencepost.harness.conformance import ConformOptions, ConformReport, Phase
    from fencepost.harness.late_search import LateOptions, LateReport
    from fencepost.harness.results import TranscriptLine
    from fencepost.harness.transport import SubprocessSut


def _levels(value: str) -> frozenset[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in LEVELS]
    if SYNC_LEVEL in unknown:
        raise click.BadParameter(
            f"level {SYNC_LEVEL} is tested only in the {LATE_COMMITS} world; add "
            f"--world {LATE_COMMITS}",
            param_hint="--levels",
        )
    if unknown or not names:
        raise click.BadParameter(
            f"unknown level(s) {', '.join(unknown) or '(none given)'}; choose from "
            f"{', '.join(LEVELS)}, comma-separated",
            param_hint="--levels",
        )
    return frozenset(names)


@click.command(name="conform", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--world",
    type=click.Choice(list(WORLDS)),
    default=DEFAULT_WORLD,
    show_default=True,
    help=f"The world to test in: {DEFAULT_WORLD} (levels {', '.join(LEVELS)}) or "
    f"{LATE_COMMITS} (level {SYNC_LEVEL}: an incremental-sync tool against a table whose "
    "writers commit out of cursor order).",
)
@click.option(
    "--max-commit-delay",
    type=click.IntRange(min=0),
    default=None,
    help="late-commits: the bound D on how late a row commits after its cursor value, in the "
    "cursor's units (seconds for timestamps) [default: 10].",
)
@click.option(
    "--cursor",
    type=click.Choice(sorted(CURSORS)),
    default=None,
    help="late-commits: the cursor's type [default: timestamp: stored in ms, queried in s].",
)
@click.option(
    "--horizon",
    is_flag=True,
    default=None,
    help="late-commits: the source certifies a horizon on every page (as PostgreSQL's xmin).",
)
@click.option(
    "--reads",
    type=click.Choice(READS),
    default=None,
    help=f"late-commits: how a query's pages are read: live (a paginated API, each page when "
    f"asked) or snapshot (one SQL statement: every page from the snapshot of its first) "
    f"[default: {DEFAULT_READS}].",
)
@click.option(
    "--partitions",
    type=click.Choice(list(PARTITIONINGS)),
    default=None,
    help="late-commits: "
    + "; ".join(f"{k}: {v}" for k, v in PARTITIONINGS.items())
    + f" [default: {DEFAULT_PARTITIONS}].",
)
@click.option(
    "--stories",
    default=None,
    metavar="NAME,...",
    help="late-commits: run only these scripted stories exhaustively (comma-separated; "
    "default: every story).",
)
@click.option(
    "--levels",
    default=",".join(LEVELS),
    show_default=True,
    help="Comma-separated protocol levels to test (those the SUT declares).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Base seed of the search.")
@click.option(
    "--schedules",
    type=click.IntRange(0, MAX_SCHEDULES),
    default=20,
    show_default=True,
    help="Random schedules to run after the exhaustive ones.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 8),
    default=2,
    show_default=True,
    help="Most workers (SUT processes) per role in random worlds.",
)
@click.option(
    "--timeout",
    type=float,
    default=10.0,
    show_default=True,
    help=f"Seconds the SUT gets to answer each message ({TIMEOUT_RANGE[0]:g} to "
    f"{TIMEOUT_RANGE[1]:g}).",
)
@click.option(
    "--startup-timeout",
    type=float,
    default=DEFAULT_STARTUP_TIMEOUT,
    show_default=True,
    help="Seconds a freshly started SUT process gets to answer hello (its start-up: an "
    "interpreter, a library's import); --timeout applies to every later message.",
)
@click.option(
    "--depth",
    type=click.IntRange(0, 3),
    default=1,
    show_default=True,
    help="Exhaustive search: steps inserted into each scripted base schedule.",
)
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Write JUnit XML.")
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write summary, failure reports, transcripts and regression files to this folder.",
)
@click.option("--replay", type=int, default=None, help="Run only the case with this seed.")
@click.option(
    "--replay-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Run the steps of a saved regression file (no search).",
)
@click.option(
    "--save",
    type=click.Path(path_type=Path),
    help="Save a failure as a replayable regression file (a folder gets <rule>-<seed>-bad.jsonl).",
)
@click.option(
    "--fail-fast", is_flag=True, help="Stop at the first failing phase (default: run every phase)."
)
@click.option(
    "--fresh-processes",
    is_flag=True,
    help="Start fresh SUT processes for every run, even if the SUT can reset.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@report_options("each failure drawn as a timeline")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def command(
    world: str,
    max_commit_delay: int | None,
    cursor: str | None,
    horizon: bool | None,
    reads: str | None,
    partitions: str | None,
    stories: str | None,
    levels: str,
    seed: int,
    schedules: int,
    workers: int,
    timeout: float,
    startup_timeout: float,
    depth: int,
    junit: Path | None,
    report_dir: Path | None,
    replay: int | None,
    replay_file: Path | None,
    save: Path | None,
    fail_fast: bool,
    fresh_processes: bool,
    as_json: bool,
    html: Path | None,
    summary_md: Path | None,
    command: tuple[str, ...],
) -> None:
    """Test the implementation started by COMMAND against the conformance protocol.

    The harness starts COMMAND once per worker, plays the stores, the provider
    and the network, and checks every property after every step. A failure is
    shrunk to the shortest schedule found and reported with its transcript and
    the seed that replays it.

    Example: fencepost conform -- fencepost sut

    Example: fencepost conform --world late-commits -- fencepost adapter dlt
    """
    from fencepost.harness.conformance import ConformOptions, conform
    from fencepost.harness.conformance import replay as replay_seed
    from fencepost.harness.transport import SubprocessSut

    if not command:
        raise click.UsageError(
            "give the SUT command after --, e.g. fencepost conform -- fencepost sut"
        )
    for option, value in (("--timeout", timeout), ("--startup-timeout", startup_timeout)):
        problem = timeout_problem(value)
        if problem is not None:
            raise click.BadParameter(problem, param_hint=option)
    _check_outputs(junit, report_dir, save)
    check_output(html, "--html")
    check_output(summary_md, "--summary-md")
    if replay is not None and replay_file is not None:
        raise click.UsageError("--replay and --replay-file exclude each other")
    _check_world(
        world, max_commit_delay, cursor, horizon, reads, partitions, stories, levels, replay_file
    )
    if world == LATE_COMMITS:
        from fencepost.harness.late_search import LateOptions

        _late(
            LateOptions(
                cursor=cursor or "timestamp",
                max_commit_delay=10 if max_commit_delay is None else max_commit_delay,
                horizon=bool(horizon),
                reads=reads or DEFAULT_READS,
                partitions=partitions or DEFAULT_PARTITIONS,
                stories=None if stories is None else _stories(stories),
                seed=seed,
                schedules=schedules if _given("schedules") else LateOptions.schedules,
                timeout=timeout,
                depth=depth,
                fail_fast=fail_fast,
                reuse=not fresh_processes,
            ),
            command,
            startup_timeout,
            replay,
            replay_file,
            as_json,
            junit,
            report_dir,
            save,
            html,
            summary_md,
        )
    options = ConformOptions(
        levels=_levels(levels),
        seed=seed,
        schedules=schedules,
        workers=workers,
        timeout=timeout,
        depth=depth,
        fail_fast=fail_fast,
        reuse=not fresh_processes,
    )
    shown = shlex.join(command)
    factory = SubprocessSut(command, prefetch=min(4, 2 * workers), startup=startup_timeout)
    try:
        if replay_file is not None:
            report = _replay_file(factory, replay_file, options)
        elif replay is not None:
            _check_seed(replay)
            report = replay_seed(factory, replay, options)
        else:
            with _Progress() as progress:
                report = conform(factory, options, progress.update, progress.ended)
    except HarnessError as error:
        _internal_error(error, shown)
    except KeyboardInterrupt:  # before the phases began, or in a replay: nothing to report
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        factory.close()
        click.echo(
            "fencepost conform: INTERRUPTED (Ctrl-C) before any phase ended: no verdict; "
            "every SUT process was ended"
        )
        sys.exit(EXIT_INTERRUPTED)
    finally:
        factory.close()
    if not report.started:
        first = report.failures[0] if report.failures else None
        _not_started(
            first.violation.message if first else None,
            first.transcript if first else (),
            first.stderr if first else {},
            shown,
        )
    _emit(report, shown, as_json, junit, report_dir, save)
    if wants_report(html, summary_md):
        from fencepost.views.conform import conform_report

        write_outputs(conform_report(report, shown), html, summary_md)
    if report.interrupted is not None:
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(0 if report.ok else 1)


def _check_seed(seed: int) -> None:
    """A frontier seed that names no case is a usage error (exit 2), not fencepost's."""
    from fencepost.harness.seeds import family_of

    try:
        family_of(seed)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--replay") from None


def _given(name: str) -> bool:
    """Whether the option ``name`` was given on the command line (not left to its default)."""
    source = click.get_current_context().get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _stories(value: str) -> tuple[str, ...]:
    """The story names of ``--stories``, each one the late-commit world has (else exit 2)."""
    from fencepost.harness.late_stories import STORY_NAMES

    names = tuple(v.strip() for v in value.split(",") if v.strip())
    unknown = [n for n in names if n not in STORY_NAMES]
    if unknown or not names:
        raise click.BadParameter(
            f"unknown stor{'ies' if len(unknown) > 1 else 'y'} "
            f"{', '.join(unknown) or '(none given)'}; choose from {', '.join(STORY_NAMES)}, "
            "comma-separated",
            param_hint="--stories",
        )
    return names


def _check_world(
    world: str,
    max_commit_delay: int | None,
    cursor: str | None,
    horizon: bool | None,
    reads: str | None,
    partitions: str | None,
    stories: str | None,
    levels: str,
    replay_file: Path | None,
) -> None:
    """Refuse options that mean nothing in the chosen world, naming the option (exit 2)."""
    if world != LATE_COMMITS:
        for name, value in (
            ("--max-commit-delay", max_commit_delay),
            ("--cursor", cursor),
            ("--horizon", horizon),
            ("--reads", reads),
            ("--partitions", partitions),
            ("--stories", stories),
        ):
            if value is not None:
                raise click.BadParameter(
                    f"means something only in the {LATE_COMMITS} world; add --world "
                    f"{LATE_COMMITS}, or leave it out",
                    param_hint=name,
                )
    else:
        if _given("levels") and {v.strip() for v in levels.split(",") if v.strip()} != {SYNC_LEVEL}:
            raise click.BadParameter(
                f"the {LATE_COMMITS} world tests only level {SYNC_LEVEL}; leave --levels out "
                f"(or give --levels {SYNC_LEVEL})",
                param_hint="--levels",
            )
        if _given("workers"):
            raise click.BadParameter(
                f"the {LATE_COMMITS} world runs one tool worker, its syncs one after the "
                "other; leave --workers out",
                param_hint="--workers",
            )
    if replay_file is not None:
        from fencepost.harness.late_report import regression_world

        found = regression_world(replay_file)
        if found == LATE_COMMITS and world != LATE_COMMITS:
            raise click.BadParameter(
                f"{replay_file} is a regression file of the {LATE_COMMITS} world; add "
                f"--world {LATE_COMMITS}",
                param_hint="--replay-file",
            )
        if found is not None and found != LATE_COMMITS and world == LATE_COMMITS:
            raise click.BadParameter(
                f"{replay_file} is a regression file of the {DEFAULT_WORLD} world; leave "
                f"--world {LATE_COMMITS} out",
                param_hint="--replay-file",
            )


def _late(
    options: LateOptions,
    command: tuple[str, ...],
    startup_timeout: float,
    replay: int | None,
    replay_file: Path | None,
    as_json: bool,
    junit: Path | None,
    report_dir: Path | None,
    save: Path | None,
    html: Path | None,
    summary_md: Path | None,
) -> NoReturn:
    """The late-commit world: search (or replay), report, and exit 0 or 1."""
    from fencepost.harness.late_report import (
        late_report_json,
        render_late_summary,
        save_late_regression,
        write_late_junit,
        write_late_report_dir,
    )
    from fencepost.harness.late_search import SeedError, late_conform, late_replay
    from fencepost.harness.transport import SubprocessSut

    shown = shlex.join(command)
    factory = SubprocessSut(command, prefetch=2, startup=startup_timeout)
    try:
        if replay_file is not None:
            report = _late_replay_file(factory, replay_file, options)
        elif replay is not None:
            try:
                report = late_replay(factory, replay, options)
            except SeedError as exc:
                raise click.BadParameter(str(exc), param_hint="--replay") from None
        else:
            with _Progress() as progress:
                report = late_conform(factory, options, progress.update)
    except HarnessError as error:
        _internal_error(error, shown, options.flags())
    finally:
        factory.close()
    if not report.started:
        violation, transcript = report.handshake[0] if report.handshake else (None, ())
        _not_started(violation.message if violation else None, transcript, {}, shown)
    if as_json:
        click.echo(json.dumps(late_report_json(report, shown), indent=2))
    else:
        click.echo(render_late_summary(report, shown))
    try:
        if junit is not None:
            write_late_junit(junit, report, shown)
        if report_dir is not None:
            write_late_report_dir(report_dir, report, shown)
        if save is not None and report.findings:
            for finding in report.findings if save.is_dir() else report.findings[:1]:
                saved = save_late_regression(save, finding, report.sut)
                click.echo(f"saved regression file: {saved}", err=True)
    except OSError as exc:
        raise click.FileError(str(exc.filename or ""), hint=exc.strerror or str(exc)) from None
    if wants_report(html, summary_md):
        from fencepost.views.late_commits import late_report

        write_outputs(late_report(report, shown), html, summary_md)
    sys.exit(0 if report.ok else 1)


def _late_replay_file(factory: SubprocessSut, path: Path, options: LateOptions) -> LateReport:
    """Run a saved regression file of the late-commit world once (no search, no shrinking)."""
    import time

    from fencepost.harness.conformance import Phase, greet, never_greeted
    from fencepost.harness.late_power import PowerTable
    from fencepost.harness.late_report import load_late_regression, replay_late_regression
    from fencepost.harness.late_search import LateFinding, LateReport, RunTotals
    from fencepost.harness.late_story import failure_key
    from fencepost.harness.report import RegressionError

    try:
        regression = load_late_regression(path)
    except RegressionError as exc:
        raise click.BadParameter(str(exc), param_hint="--replay-file") from None
    started = time.monotonic()
    hello, broken = greet(factory, options.timeout)
    findings: list[LateFinding] = []
    phases: list[Phase] = []
    notes: list[str] = []
    handshake = [] if broken is None else [(broken.violation, broken.transcript)]
    totals = RunTotals()
    if broken is None:
        result, skipped = replay_late_regression(factory, regression, timeout=options.timeout)
        notes = [
            f"step {number} of {path.name} could not run now and was not executed: {step}"
            for number, step in skipped
        ]
        d = result.delivery
        totals = RunTotals(
            1,
            len(result.syncs),
            1 if d and d.lost else 0,
            len(d.lost) if d else 0,
            1 if d and d.duplicated else 0,
            len(d.duplicated) if d else 0,
            d.absorbed if d else 0,
        )
        name = f"replay of {path.name}"
        phases.append(Phase(name, 1, result.messages, time.monotonic() - started, not result.ok))
        if not result.ok:
            findings.append(
                LateFinding(
                    failure_key(result), regression.seed, name, result, len(result.executed)
                )
            )
    return LateReport(
        sut=factory.description,
        sut_name=hello.name if hello is not None else "",
        options=dataclasses.replace(
            options,
            cursor=regression.setup.cursor_type,
            max_commit_delay=regression.setup.max_commit_delay
            // WIRE_UNITS[regression.setup.cursor_type],
            horizon=regression.setup.horizon,
            reads=regression.setup.reads,
        ),
        declared=hello.levels if hello is not None else (),
        delivery=hello.delivery if hello is not None else "at-least-once",
        phases=tuple(phases),
        findings=tuple(findings),
        seconds=time.monotonic() - started,
        totals=totals,
        power=PowerTable.empty(),
        notes=tuple(notes),
        handshake=tuple(handshake),
        started=not never_greeted(broken),
        searched=False,
    )


#: The exit status after a Ctrl-C (SIGINT): 128 + 2, as shells report a process it stopped.
EXIT_INTERRUPTED = 130


#: The exit status of an internal error: fencepost broke, the SUT was not judged.
EXIT_INTERNAL_ERROR = 3


def _internal_error(error: HarnessError, shown: str, flags: str = "") -> NoReturn:
    """Say that fencepost broke (not the SUT), how to reproduce it, and exit 3."""
    import traceback

    lines = [
        f"fencepost conform: INTERNAL ERROR in {error}",
        "This is a bug in fencepost, not a verdict on the implementation under test: no",
        "conformance result was reached. Please report it with the command below and the",
        "traceback.",
    ]
    if error.seed is not None:
        world = f"{flags} " if flags else ""
        lines.append(f"  reproduce: fencepost conform {world}--replay {error.seed} -- {shown}")
    click.echo("\n".join(lines), err=True)
    click.echo("".join(traceback.format_exception(error.cause)), err=True)
    sys.exit(EXIT_INTERNAL_ERROR)


#: The exit status when the SUT cannot be tested at all (usage: the command after ``--``).
EXIT_USAGE = 2


def _not_started(
    cause: str | None,
    transcript: Iterable[TranscriptLine],
    stderr: Mapping[str, str],
    shown: str,
) -> NoReturn:
    """No process of the SUT answered ``hello``: say why on the first line, and exit 2.

    Not a verdict (nothing was tested, so "NOT CONFORMANT" would be false) and not
    fencepost's own error (exit 3): the command after ``--`` does not start a program that
    speaks the protocol, which is a usage problem. The cause comes first, then what was
    exchanged, the program's last stderr lines, and what to check.
    """
    cause = cause or "it never answered hello"
    lines = [
        f"fencepost conform: cannot test the SUT: {cause}",
        f"  command: {shown}",
        "  nothing was tested, so there is no verdict (exit 2: the command after -- does not",
        "  start a program that answers hello with hello_ok; docs/conformance-protocol.md,",
        '  "Handshake")',
    ]
    exchanged = [str(line) for line in transcript if line.direction != "**"]
    if exchanged:
        lines.append("  exchanged (-> to the SUT, <- from it):")
        lines += [f"    {line}" for line in exchanged]
    for tail in stderr.values():
        if tail.strip():
            lines.append("  its stderr, last lines:")
            lines += [f"    | {line}" for line in tail.strip().splitlines()[-15:]]
    lines.append(f"  check: {_startup_hint(cause)}")
    click.echo(printable("\n".join(lines)), err=True)
    sys.exit(EXIT_USAGE)


def _startup_hint(cause: str) -> str:
    """What to try, from the cause's words (the OS's, or the harness's)."""
    if "No such file or directory" in cause:
        return (
            "the program's path (a relative path is read from the current folder; a bare "
            "name is looked up on PATH), e.g. fencepost conform -- ./my-impl --conformance"
        )
    if "Permission denied" in cause:
        return (
            "that the file is executable (chmod +x), or run it through its interpreter, "
            "e.g. fencepost conform -- python3 my_impl.py"
        )
    return (
        "that the command starts your implementation in its conformance mode and that it "
        "reads JSON lines on stdin and answers hello on stdout (run it by hand and type "
        '{"type":"hello","protocol":1})'
    )


def _check_outputs(junit: Path | None, report_dir: Path | None, save: Path | None) -> None:
    """Refuse output paths that cannot be written before any run starts.

    Finding out after a long search that the JUnit file or the regression file
    cannot be written would lose the result.
    """
    check_output(junit, "--junit")
    if save is not None and not save.is_dir():  # a folder keeps every failure
        check_output(save, "--save")
    if report_dir is not None and report_dir.exists() and not report_dir.is_dir():
        raise click.BadParameter(f"{report_dir} exists and is not a folder", param_hint="--report")
    if report_dir is not None and not report_dir.exists() and not report_dir.parent.is_dir():
        raise click.BadParameter(
            f"{report_dir}: the folder {report_dir.parent} does not exist", param_hint="--report"
        )


def _replay_file(factory: SubprocessSut, path: Path, options: ConformOptions) -> ConformReport:
    """Run a saved regression file once against the SUT (no search, no shrinking)."""
    from fencepost.harness.conformance import (
        ConformReport,
        Phase,
        failure_from_run,
        greet,
        never_greeted,
    )
    from fencepost.harness.report import (
        RegressionError,
        Replayed,
        load_regression,
        replay_regression,
    )

    try:
        regression = load_regression(path)
    except RegressionError as exc:
        raise click.BadParameter(str(exc), param_hint="--replay-file") from None
    hello, failure = greet(factory, options.timeout)
    greeted = not never_greeted(failure)
    name = hello.name if hello is not None else ""
    declared = hello.levels if hello is not None else ()
    messages = 0
    notes: tuple[str, ...] = ()
    if failure is None:
        outcome = replay_regression(factory, regression, timeout=options.timeout)
        if isinstance(outcome, Replayed):
            run = outcome.result
            messages = run.messages
            notes = tuple(
                f"step {number} of {path.name} could not run now and was not executed: {step}"
                for number, step in outcome.skipped
            )
            if not run.ok:
                failure = failure_from_run(regression.seed, "regression", run, len(run.executed), 0)
        else:
            failure = outcome
    phase = Phase(f"replay of {path.name}", 1, messages, 0.0, failure is not None)
    return ConformReport(
        sut=factory.description,
        sut_name=name,
        declared=declared,
        tested=declared,
        phases=(phase,),
        failures=() if failure is None else (failure,),
        equivalent_representations=0,
        seconds=0.0,
        notes=notes,
        searched=False,
        started=greeted,
    )


def _emit(
    report: ConformReport,
    shown: str,
    as_json: bool,
    junit: Path | None,
    report_dir: Path | None,
    save: Path | None,
) -> None:
    from fencepost.harness.report import (
        render_summary,
        report_json,
        save_regression,
        write_junit,
        write_report_dir,
    )

    if as_json:
        click.echo(json.dumps(report_json(report), indent=2))
    else:
        click.echo(render_summary(report, shown))
    option = "--junit"
    try:
        if junit is not None:
            write_junit(junit, report, shown)
        option = "--report"
        if report_dir is not None:
            write_report_dir(report_dir, report, shown)
        option = "--save"
        if save is not None and report.failures:
            # A folder keeps every failure; a file name keeps the first.
            for failure in report.failures if save.is_dir() else report.failures[:1]:
                saved = save_regression(save, failure, report.sut)
                click.echo(f"saved regression file: {saved}", err=True)
    except OSError as exc:
        where = exc.filename or {"--junit": junit, "--report": report_dir, "--save": save}[option]
        raise OutputError(option, where, exc) from None


class _Progress:
    """Live progress on stderr (rich), one bar per phase.

    A phase that ends is marked (``✓`` passed, ``✗ ... FAILED`` found a bug) and its clock
    stops there: it shows how long the phase took, not how long the run has gone on. A
    phase whose end is not announced (the late-commit world) stops its clock when the
    next phase starts.
    """

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        console = Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")))
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            # no bars in logs: a file or a pipe gets the summary on stdout only
            disable=not console.is_terminal,
        )
        self._tasks: dict[str, TaskID] = {}

    def __enter__(self) -> _Progress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for task in self._tasks.values():
            self._progress.stop_task(task)
        self._progress.stop()

    def update(self, phase: str, done: int, total: int | None) -> None:
        task = self._tasks.get(phase)
        if task is None:
            for earlier in self._tasks.values():  # a new phase: the earlier ones are over
                self._progress.stop_task(earlier)
            task = self._progress.add_task(f"  {phase}".replace("[", "\\["), total=total)
            self._tasks[phase] = task
        self._progress.update(task, completed=done, total=total)

    def ended(self, phase: Phase) -> None:
        """Mark ``phase`` passed or FAILED and stop its clock."""
        from rich.markup import escape

        task = self._tasks.get(phase.name)
        if task is None:
            task = self._progress.add_task("", total=1)
            self._tasks[phase.name] = task
        if phase.failed:
            description = f"[bold red]\u2717 {escape(phase.name)} FAILED[/]"
            self._progress.update(task, description=description)
        else:
            description = f"[green]\u2713[/] {escape(phase.name)}"
            self._progress.update(
                task, description=description, total=phase.runs, completed=phase.runs
            )
        self._progress.stop_task(task)
