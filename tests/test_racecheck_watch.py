"""racecheck is stopped once its log holds the verdict.

A tiled kernel without its second barrier makes racecheck report hazards for minutes (over 400 s at 288^3 on an
H100), so a racy submission held its GPU for the tool's whole time limit (30 s). The first hazard reports decide the
race check: the parent reads the tool's log while it is written and stops the run there. A stand-in tool (a shell
script in the sandbox, as compute-sanitizer is) writes the log; the real tool runs in the GPU tests."""
import os
import stat
import time

import pytest

from autograder import sandbox
from autograder.checks import races
from autograder.gpu import tools
from autograder.sandbox.watch import LogWatch
from checkkit import child_result

ERROR = "========= Error: Potential WAR hazard detected at __shared__ 0x{:x} in block (1,0,0) :\n"
WARNING = "========= Warning: (Warp Level Programming) Potential WAR hazard detected at __shared__ 0x{:x} in block (0,0,0) :\n"
INFO = "========= Info: Potential WAW hazard detected at __shared__ 0x{:x} in block (0,0,0) :\n"
SUMMARY = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"


class Never:
    """A stage's own cut that never stops the child (its correctness passed, no sibling ran out of time)."""

    def begun(self):
        pass

    def is_set(self):
        return False


def fake_tool(tmp_path, lines, then_sleep, summary=""):
    """A compute-sanitizer stand-in: writes `lines` to its --log-file, then sleeps `then_sleep` seconds and writes
    `summary`."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    path = folder / "compute-sanitizer"
    text = "".join(lines).replace("'", "")
    path.write_text("#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --log-file ] && log=$2; shift; done\n"
                    f"printf '%s' '{text}' >> \"$log\"\nsleep {then_sleep}\nprintf '%s' '{summary}' >> \"$log\"\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def run_tool(cfg, tmp_path, tool):
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)
    log = str(logs / "tool.log")
    watch = LogWatch(tools.first_hazards).around(Never())
    job = {"task": "run", "device": "sim", "count": 0}
    started = time.monotonic()
    result = sandbox.run_child(job, cfg["limits"], None, (tool, "--tool", "racecheck", "--log-file", log),
                               timeout=60, cancel=watch)
    text = open(log).read() if os.path.exists(log) else ""
    return result, text, watch, time.monotonic() - started


def test_a_racy_kernels_racecheck_stops_at_its_first_hazards(cfg, tmp_path):
    lines = [ERROR.format(i) for i in range(3)] + [WARNING.format(i) for i in range(3)]
    result, text, watch, seconds = run_tool(cfg, tmp_path, fake_tool(tmp_path, lines, then_sleep=50))
    assert watch.fired and seconds < 20, (seconds, result.problem)
    result.decided_early = True   # as gpu/tools._tool_run marks it
    facts = {**tools.racecheck_facts(result, text), "shapes": [(300, 70, 290)]}
    assert facts["stopped_early"] and facts["errors"] == 3 and facts["warnings"] == 3, facts
    ok, msg = races.judge_racecheck(facts)
    assert not ok and "stopped at its first 6 reports" in msg and "syncthreads" in msg and "WAR hazard" in msg, msg


def test_info_reports_and_a_clean_run_are_not_stopped(cfg, tmp_path):
    """Info-level reports are not what the race check fails, so they decide nothing: the run ends on its own and
    its summary is the verdict."""
    lines = [INFO.format(i) for i in range(8)]
    result, text, watch, seconds = run_tool(cfg, tmp_path, fake_tool(tmp_path, lines, then_sleep=2, summary=SUMMARY))
    assert not watch.fired and not result.cancelled and seconds > 2, result.problem
    # the stand-in never starts the runner, so its result is read as a finished runner's
    facts = {**tools.racecheck_facts(child_result({}), text), "shapes": [(300, 70, 290)]}
    assert races.judge_racecheck(facts)[0], facts


@pytest.mark.parametrize("count, decides", [(tools.HAZARD_SEEN - 1, False), (tools.HAZARD_SEEN, True)])
def test_how_many_reports_decide(count, decides):
    assert tools.first_hazards("".join(WARNING.format(i) for i in range(count))) is decides
    assert not tools.first_hazards("".join(INFO.format(i) for i in range(20)))
