"""Misbehaving SUTs are reported as SUT failures with a transcript; nothing is left running.

Each fake SUT is a short stdlib-only Python program that speaks the protocol
correctly up to one deliberate fault. After every run the test checks that each
process the harness started is gone (reaped, not a zombie) and that no process
of its process group survives, grandchildren included.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fencepost.harness.conformance import handshake
from fencepost.harness.probes import run_probes
from fencepost.harness.rules import Rule
from fencepost.harness.runner import run_schedule
from fencepost.harness.schedule import Publish
from fencepost.harness.transport import ISOLATION_VARIABLE, SubprocessSut, isolation_prefix
from fencepost.harness.world import EpochSetup, EventSpec, PartitionSetup, WorldSetup
from fencepost.judge.values import Order

WORLD = WorldSetup(
    order=Order.integer("offsets", True),
    epochs=(EpochSetup(1, (PartitionSetup("A", (EventSpec("a1", 1),)),)),),
    publishers=("w1",),
    env_checkpoints=True,
)
#: One attempt; the harness then answers every call normally (drain).
SCHEDULE = (Publish("w1"),)

PROGRAM = """
import json, os, subprocess, sys, time

rid = None


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\\n")
    sys.stdout.flush()


def send_together(*objs):
    # One write: the lines reach the harness together, so none arrives "late".
    sys.stdout.write("".join(json.dumps(obj) + "\\n" for obj in objs))
    sys.stdout.flush()


def next_read(msg, done):
    n = int(msg["call_id"][1:])
    if n == 1:
        send({{"type": "call", "call_id": "c2", "op": "read_membership", "stream": "s"}})
    elif n == 2:
        send({{"type": "call", "call_id": "c3", "op": "read_checkpoints", "stream": "s",
              "epoch": 1}})
    else:
        done()


def sleeper(marker, env=None, **options):
    # Writes its pid as the host sees it (/proc is the host's) and whether it leads a session
    # of its own (it left the SUT's), then becomes `sleep 100`; returns once that is written,
    # so the test always finds it.
    code = ("import os, sys; leader = int(os.getsid(0) == os.getpid()); "
            "open(sys.argv[1] + '.tmp', 'w').write('%s %d' % (os.readlink('/proc/self'), leader)); "
            "os.rename(sys.argv[1] + '.tmp', sys.argv[1]); os.execvp('sleep', ['sleep', '100'])")
    subprocess.Popen([sys.executable, "-c", code, marker], env=env, **options)
    while not os.path.exists(marker):
        time.sleep(0.01)


def withheld(request_id=None):
    send({{"type": "publish_ok", "id": rid if request_id is None else request_id,
          "outcome": "withheld", "epoch": 1, "cut": None, "reason": "missing_checkpoint"}})


for line in sys.stdin:
    msg = json.loads(line)
    kind = msg.get("type")
    if kind == "hello":
        {hello}
    elif kind == "shutdown":
        {shutdown}
    elif kind == "publish":
        rid = msg["id"]
        {publish}
    elif kind == "reply":
        {reply}
"""

HELLO = 'send({"type": "hello_ok", "protocol": 1, "name": "fake", "levels": ["publisher"]})'
READ = 'send({"type": "call", "call_id": "c1", "op": "read_publication", "stream": "s"})'
HONEST = "next_read(msg, withheld)"


def fake(tmp_path: Path, startup: float = 60.0, **parts: str) -> SubprocessSut:
    body = {"hello": HELLO, "shutdown": "sys.exit(0)", "publish": READ, "reply": HONEST}
    body.update(parts)
    script = tmp_path / "fake_sut.py"
    script.write_text(textwrap.dedent(PROGRAM).format(**body))
    return SubprocessSut([sys.executable, str(script)], prefetch=0, startup=startup)


def _state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _zombie_of_ours(entry: Path) -> bool:
    """A zombie whose parent is this process; False when the process is gone already
    (other processes, another test worker's among them, exit while /proc is scanned)."""
    try:
        return f") Z {os.getpid()} " in (entry / "stat").read_text()
    except OSError:
        return False


def assert_nothing_left(factory: SubprocessSut) -> None:
    factory.close()
    assert factory.started, "the test must have started a process"
    for pid in factory.started:
        assert _state(pid) is None, f"SUT process {pid} was not reaped (state {_state(pid)})"
        deadline = time.monotonic() + 30  # a fail-safe: the kill is awaited
        while _group_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _group_alive(pid), f"a process of SUT group {pid} survived teardown"
    zombies = [
        p.name
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and _state(int(p.name)) == "Z" and _zombie_of_ours(p)
    ]
    assert not zombies, f"zombie children of the test process: {zombies}"


#: The per-call limit where a test expects anything but a hang: long, so that a loaded
#: machine never turns a slow answer into one (it costs nothing: answers end the wait).
PATIENT = 30.0


def run(factory: SubprocessSut, timeout: float = PATIENT) -> tuple[Rule, str]:
    result = run_schedule(factory, WORLD, SCHEDULE, timeout=timeout)
    assert_nothing_left(factory)
    first = result.first
    assert first is not None, "the fake SUT's fault went unnoticed"
    assert result.transcript, "a failure is reported with its transcript"
    return first.rule, first.message


def test_a_well_behaved_fake_passes(tmp_path: Path) -> None:
    # It reads the record, the membership and the checkpoints, and withholds
    # (partition A has no checkpoint): honest, so the run is clean.
    factory = fake(tmp_path)
    result = run_schedule(factory, WORLD, SCHEDULE, timeout=PATIENT)
    assert_nothing_left(factory)
    assert result.ok, result.violations
    # hello, hello_ok, publish, 3 calls, 3 replies, publish_ok, shutdown
    assert result.messages == 11


def test_withholding_without_reading_is_dishonest(tmp_path: Path) -> None:
    factory = fake(tmp_path, publish="withheld()")
    rule, message = run(factory)
    assert rule is Rule.HONEST_OUTCOME
    assert "without having read" in message


def test_crash_in_the_middle_of_a_call(tmp_path: Path) -> None:
    rule, message = run(fake(tmp_path, reply="os._exit(3)"))
    assert rule is Rule.SUT_CRASH
    assert "status 3" in message


def test_hang_hits_the_per_call_time_limit(tmp_path: Path) -> None:
    started = time.monotonic()
    rule, message = run(fake(tmp_path, reply="time.sleep(60)"), timeout=0.5)
    assert rule is Rule.SUT_HANG
    assert "0.5s" in message
    # Not the SUT's 60 s: the bound only separates "gave up" from "waited it out",
    # with room for a loaded machine's process start-up.
    assert time.monotonic() - started < 45


def test_a_hanging_sut_and_its_grandchild_are_killed(tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"
    spawn = f"sleeper({str(marker)!r}); time.sleep(60)"
    rule, _ = run(fake(tmp_path, reply=spawn), timeout=0.5)
    assert rule is Rule.SUT_HANG
    grandchild, leader = map(int, marker.read_text().split())
    assert leader == 0  # it stayed in the SUT's session: the group kill is what ended it
    deadline = time.monotonic() + 30  # a fail-safe: the kill is awaited
    while _state(grandchild) not in (None, "Z", "X") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _state(grandchild) in (None, "Z", "X"), "the SUT's own child outlived the run"


def test_a_grandchild_in_a_session_of_its_own_is_killed_too(tmp_path: Path) -> None:
    """setsid leaves the SUT's process group; the inherited token still finds it."""
    marker = tmp_path / "daemon.pid"
    spawn = f"sleeper({str(marker)!r}, start_new_session=True); time.sleep(60)"
    rule, _ = run(fake(tmp_path, reply=spawn), timeout=0.5)
    assert rule is Rule.SUT_HANG
    daemon, leader = map(int, marker.read_text().split())
    assert leader == 1  # recorded while it lived: it had left the SUT's session and group
    deadline = time.monotonic() + 30  # a fail-safe: the kill is awaited
    while _state(daemon) not in (None, "Z", "X") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _state(daemon) in (None, "Z", "X"), "a daemonized descendant outlived the run"


def test_a_blank_line_answers_nothing(tmp_path: Path) -> None:
    rule, message = run(fake(tmp_path, reply='print("", flush=True); time.sleep(60)'))
    assert rule is Rule.CALL_PAIRING
    assert "blank line" in message


def test_garbage_line(tmp_path: Path) -> None:
    rule, message = run(fake(tmp_path, reply='print("this is not json", flush=True)'))
    assert rule is Rule.MESSAGE_SCHEMA
    assert "not JSON" in message


def test_huge_line_is_cut_off(tmp_path: Path) -> None:
    huge = 'sys.stdout.write("x" * (3 << 20)); sys.stdout.flush(); time.sleep(60)'
    rule, message = run(fake(tmp_path, reply=huge))
    assert rule is Rule.LINE_TOO_LONG
    assert str(1 << 20) in message


def test_reply_with_the_wrong_id(tmp_path: Path) -> None:
    rule, message = run(fake(tmp_path, reply="next_read(msg, lambda: withheld(999))"))
    assert rule is Rule.CALL_PAIRING
    assert "999" in message


def test_unknown_field_in_a_call(tmp_path: Path) -> None:
    extra = (
        'send({"type": "call", "call_id": "c1", "op": "read_publication", "stream": "s", '
        '"stram": "s"})'
    )
    rule, message = run(fake(tmp_path, publish=extra))
    assert rule is Rule.MESSAGE_SCHEMA
    assert "stram" in message


def test_unsolicited_message_while_idle(tmp_path: Path) -> None:
    twice = (
        'next_read(msg, lambda: send_together(*[{"type": "publish_ok", "id": rid, '
        '"outcome": "withheld", "epoch": 1, "cut": None, "reason": "missing_checkpoint"}] * 2))'
    )
    rule, message = run(fake(tmp_path, reply=twice))
    assert rule is Rule.CALL_PAIRING
    assert "unsolicited" in message


def test_error_answer_to_a_valid_request(tmp_path: Path) -> None:
    error = 'send({"type": "error", "id": rid, "message": "cannot"})'
    rule, message = run(fake(tmp_path, publish=error))
    assert rule is Rule.SUT_ERROR
    assert "cannot" in message


def test_call_of_another_level(tmp_path: Path) -> None:
    fetch = (
        'send({"type": "call", "call_id": "c1", "op": "fetch_page", "partition": "A", '
        '"token": None})'
    )
    rule, message = run(fake(tmp_path, publish=fetch))
    assert rule is Rule.CALL_PAIRING
    assert "fetch_page" in message


def test_endless_calls_are_a_runaway(tmp_path: Path) -> None:
    again = 'send({"type": "call", "call_id": "c9", "op": "read_publication", "stream": "s"})'
    rule, _ = run(fake(tmp_path, reply=again))
    assert rule is Rule.RUNAWAY


def test_bad_exit_code_after_shutdown(tmp_path: Path) -> None:
    factory = fake(tmp_path, shutdown="sys.exit(5)")
    name, levels, failure = handshake(factory, 2.0)
    assert_nothing_left(factory)
    assert failure is not None and failure.violation.rule is Rule.SHUTDOWN
    assert "status 5" in failure.violation.message
    assert name == "fake" and levels == ("publisher",)


def test_missing_hello(tmp_path: Path) -> None:
    factory = fake(tmp_path, hello='send({"type": "compare_ok", "id": 1, "result": 0})')
    _, _, failure = handshake(factory, 2.0)
    assert_nothing_left(factory)
    assert failure is not None and failure.violation.rule is Rule.HANDSHAKE
    assert failure.transcript


def test_silent_sut_hangs_the_handshake(tmp_path: Path) -> None:
    factory = fake(tmp_path, startup=0.5, hello="pass")
    _, _, failure = handshake(factory, 0.5)
    assert_nothing_left(factory)
    assert failure is not None and failure.violation.rule is Rule.SUT_HANG
    assert "start-up budget of 0.5s" in failure.violation.message


def test_command_that_does_not_exist(tmp_path: Path) -> None:
    factory = SubprocessSut([str(tmp_path / "no-such-program")])
    _, _, failure = handshake(factory, 1.0)
    factory.close()
    assert failure is not None and failure.violation.rule is Rule.SUT_CRASH
    assert "cannot start" in failure.violation.message


@pytest.mark.parametrize("levels", ['["publisher", "publisher"]', '["sideways"]'])
def test_bad_levels_in_hello_ok(tmp_path: Path, levels: str) -> None:
    hello = f'send({{"type": "hello_ok", "protocol": 1, "name": "f", "levels": {levels}}})'
    factory = fake(tmp_path, hello=hello)
    _, _, failure = handshake(factory, 2.0)
    assert_nothing_left(factory)
    assert failure is not None and failure.violation.rule is Rule.HANDSHAKE


def test_untrusted_strings_never_break_a_report(tmp_path: Path) -> None:
    """A lone surrogate and terminal escapes from a SUT end up escaped in every report."""
    import json
    import xml.etree.ElementTree as ET

    from click.testing import CliRunner

    from fencepost.cli import main

    hostile = (
        'sys.stdout.write(\'{"type": "hello_ok", "protocol": 1, '
        '"name": "evil\\\\ud800\\\\u001b[2J", "levels": ["publisher"]}\\n\'); '
        "sys.stdout.flush()"
    )
    error = (
        'sys.stdout.write(\'{"type": "error", "id": \' + str(rid) + \', "message": '
        '"bad \\\\ud800 \\\\u0007 \\\\u001b[31m"}\\n\'); sys.stdout.flush()'
    )
    factory = fake(tmp_path, hello=hostile, publish=error)
    junit = tmp_path / "junit.xml"
    report = tmp_path / "report"
    result = CliRunner().invoke(
        main,
        [
            "conform",
            "--levels",
            "publisher",
            "--schedules",
            "0",
            "--depth",
            "0",
            "--junit",
            str(junit),
            "--report",
            str(report),
            "--",
            *factory.argv,
        ],
    )
    assert result.exit_code == 1, result.output
    assert "\x1b" not in result.output and "\\ud800" in result.output
    ET.parse(junit)  # parses: every character is one XML can carry
    summary = json.loads((report / "summary.json").read_text())
    assert summary["conformant"] is False
    for path in report.iterdir():
        path.read_text(encoding="utf-8")  # every file is valid UTF-8


def test_invisible_characters_and_links_from_a_sut_are_neutral_in_every_output(
    tmp_path: Path,
) -> None:
    """U+202E and U+2066 (Trojan Source) from a SUT are shown as U+XXXX in the terminal,
    JUnit, the report folder, the HTML page and the Markdown summary; a URL it sends never
    becomes a link in the Markdown; --json escapes them too."""
    import json

    from click.testing import CliRunner

    from fencepost.cli import main

    hostile = (
        'sys.stdout.write(\'{"type": "hello_ok", "protocol": 1, '
        '"name": "evil\\\\u202egnp.exe", "levels": ["publisher"]}\\n\'); '
        "sys.stdout.flush()"
    )
    error = (
        'sys.stdout.write(\'{"type": "error", "id": \' + str(rid) + \', "message": '
        '"see https://evil.example/x www.evil.example me@evil.example op\\\\u2066-1"}\\n\'); '
        "sys.stdout.flush()"
    )
    factory = fake(tmp_path, hello=hostile, publish=error)
    out = {name: tmp_path / name for name in ("junit.xml", "page.html", "summary.md")}
    report = tmp_path / "report"
    args = ["conform", "--levels", "publisher", "--schedules", "0", "--depth", "0"]
    args += ["--junit", str(out["junit.xml"]), "--report", str(report)]
    args += ["--html", str(out["page.html"]), "--summary-md", str(out["summary.md"])]
    result = CliRunner().invoke(main, [*args, "--", *factory.argv])
    assert result.exit_code == 1, result.output
    texts = {"terminal": result.output}
    texts |= {name: path.read_text(encoding="utf-8") for name, path in out.items()}
    texts |= {p.name: p.read_text(encoding="utf-8") for p in report.iterdir()}
    for name, text in texts.items():
        assert "\u202e" not in text and "\u2066" not in text, name
    for name in ("terminal", "page.html", "summary.md", "summary.txt"):
        assert "evilU+202Egnp.exe" in texts[name], name
    for name in ("terminal", "junit.xml", "page.html", "summary.txt"):
        assert "opU+2066-1" in texts[name], name
    md = texts["summary.md"]
    assert "://" not in md and "www." not in md and "@evil" not in md
    assert "https&#58;//evil.example/x" in md and "www&#46;evil.example" in md
    as_json = CliRunner().invoke(main, [*args[:7], "--json", "--", *factory.argv])
    assert "\u202e" not in as_json.output and json.loads(as_json.output)["sut_name"].endswith(
        "\u202egnp.exe"
    )


def test_a_lone_surrogate_from_a_sut_is_a_schema_failure_not_a_crash(tmp_path: Path) -> None:
    read = (
        'sys.stdout.write(\'{"type": "call", "call_id": "c\\\\ud800", "op": '
        '"read_publication", "stream": "s"}\\n\'); sys.stdout.flush()'
    )
    rule, message = run(fake(tmp_path, publish=read))
    assert rule is Rule.MESSAGE_SCHEMA
    assert "lone surrogate" in message


@pytest.mark.parametrize("isolation", ["namespace", "none"])
def test_a_daemon_that_left_the_session_and_cleared_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    """setsid plus an empty environment escapes the group and the token; only the PID
    namespace catches it. Teeth: without the namespace it survives (and the test kills it)."""
    if isolation == "none":
        monkeypatch.setenv(ISOLATION_VARIABLE, "none")
    else:
        assert isolation_prefix(), "unshare --pid must work here (root or user namespaces)"
    marker = tmp_path / "daemon.pid"
    spawn = f"sleeper({str(marker)!r}, env={{}}, start_new_session=True); time.sleep(60)"
    rule, _ = run(fake(tmp_path, reply=spawn), timeout=0.5)
    assert rule is Rule.SUT_HANG
    daemon, leader = map(int, marker.read_text().split())
    assert leader == 1
    if isolation == "none":
        # The teardown is over when run() returns: whatever it caught is dead already.
        survived = _state(daemon) not in (None, "Z", "X")
        with contextlib.suppress(ProcessLookupError):
            os.kill(daemon, signal.SIGKILL)
        assert survived, "without a namespace nothing finds it (what docs/robustness.md says)"
    else:
        deadline = time.monotonic() + 30  # a fail-safe: the namespace's end is awaited
        while _state(daemon) not in (None, "Z", "X") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _state(daemon) in (None, "Z", "X"), "a daemon outlived its PID namespace"


HELLO_OK = {"type": "hello_ok", "protocol": 1, "name": "fake", "levels": ["publisher"]}
EXTRA = {
    "unsolicited": 'send_together(HELLO_OK, {"type": "compare_ok", "id": 5, "result": 0})',
    "blank": 'sys.stdout.write(json.dumps(HELLO_OK) + "\\n\\n"); sys.stdout.flush()',
    "late": 'send(HELLO_OK); time.sleep(0.2); send({"type": "compare_ok", "id": 5, "result": 0})',
}


@pytest.mark.parametrize("extra", sorted(EXTRA))
def test_a_line_right_after_hello_ok_is_call_pairing_not_error_handling(
    tmp_path: Path, extra: str
) -> None:
    hello = f"HELLO_OK = {HELLO_OK!r}; {EXTRA[extra]}"
    # The SUT never answers a request, so its extra line (even the late one, 0.2 s after
    # hello_ok) always arrives first: a long per-call limit keeps a loaded machine from
    # turning it into a hang, and costs nothing (the line ends the wait).
    # In the error-handling probes (the first exchange after the handshake) ...
    factory = fake(tmp_path, hello=hello, reply="pass")
    probes = run_probes(factory, frozenset({"publisher"}), timeout=PATIENT)
    assert_nothing_left(factory)
    assert probes.violations and probes.violations[0].rule is Rule.CALL_PAIRING, probes
    assert "unsolicited" in probes.violations[0].message or "blank" in probes.violations[0].message
    # ... and in a world's run, before the first request.
    rule, message = run(fake(tmp_path, hello=hello))
    assert rule is Rule.CALL_PAIRING, message
