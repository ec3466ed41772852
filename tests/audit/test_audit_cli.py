"""``fencepost audit`` on what ``fencepost demo --record`` wrote under kill -9 and lost
responses (exit 0), and on the same log with one read's result edited (exit 1, the
fragment drawn as a timeline)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

ARGS = ["--partitions", "3", "--events", "80", "--seed", "4", "--pages", "1", "--json"]


def fencepost(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fencepost", *args], capture_output=True, text=True, timeout=timeout
    )


def recorded_demo(tmp_path: Path) -> Path:
    """A demo recorded to LOG, killed with SIGKILL mid-run, restarted to the end."""
    db, log = tmp_path / "demo.db", tmp_path / "demo.log"
    extra = ["--record", str(log), "--lose-responses", "0.1"]
    first = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fencepost",
            "demo",
            "--db",
            str(db),
            *ARGS,
            *extra,
            "--interval",
            "0.02",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert first.stdout is not None
    for raw in first.stdout:
        line = json.loads(raw)
        if line["event"] == "round" and line["revision"] >= 3:
            break
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    second = fencepost("demo", "--db", str(db), *ARGS, *extra, "--interval", "0")
    assert second.returncode == 0, second.stderr
    return log


def edit_one_read(log: Path, out: Path) -> None:
    """The first read showing revision >= 3 shows revision - 2 instead (a stale read)."""
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    shown = {
        x["result"]["revision"]: x["result"]
        for x in lines
        if x["op"] == "read_publication" and x["status"] == "ok"
    }
    for x in lines:
        if (
            x["op"] == "read_publication"
            and x["status"] == "ok"
            and x["result"]["revision"] - 2 in shown
            and x["result"]["revision"] >= 3
        ):
            x["result"] = shown[x["result"]["revision"] - 2]
            break
    else:
        raise AssertionError("no read to edit")
    out.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_a_recorded_demo_under_kill_9_and_lost_responses_passes_then_an_edit_fails(
    tmp_path: Path,
) -> None:
    log = recorded_demo(tmp_path)
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.endswith("}")]
    assert any(x["status"] == "indefinite" for x in lines), "no lost response was recorded"
    assert len({x["worker"] for x in lines}) == 2  # two processes: killed, then resumed
    ok = fencepost("audit", str(log))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "every property decidable from the log holds" in ok.stdout

    edited = tmp_path / "edited.log"
    edit_one_read(log, edited)
    bad = fencepost("audit", str(edited))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "linearizability on stream demo" in bad.stdout
    assert "<-- at fault" in bad.stdout and "read record -> revision" in bad.stdout
    as_json: dict[str, Any] = json.loads(fencepost("audit", "--json", str(edited)).stdout)
    [violation] = [v for v in as_json["violations"] if v["property"] == "linearizability"]
    marked = [b for lane in violation["lanes"] for b in lane["boxes"] if b["marked"]]
    assert len(marked) == 1 and marked[0]["label"].startswith("read record")
    assert len(marked[0]["where"].split(":")) == 2

    # The same violation as a page and a summary (docs/ci.md): the fragment drawn as a
    # timeline, the breaking operation marked with the property and what it means.
    page, summary = tmp_path / "audit.html", tmp_path / "audit.md"
    drawn = fencepost("audit", "--html", str(page), "--summary-md", str(summary), str(edited))
    assert drawn.returncode == 1, drawn.stdout + drawn.stderr
    html = page.read_text()
    assert 'class="timeline"' in html and "linearizability" in html
    assert "mark-breach" in html and "consistent with real time" in html
    assert "http://" not in html and "https://" not in html
    assert "linearizability" in summary.read_text()
    missing = fencepost("audit", "--html", str(tmp_path / "nowhere" / "a.html"), str(edited))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
