"""autograder/procstat.py: the one reading of /proc stat lines for the parts that list or measure processes (the GPU's
exclusive watch, a class worker's children, the class benchmark, the grading process's CPU sampler)."""
import os
import subprocess
import sys
import time

import pytest

from autograder import procstat
from autograder.gpu.exclusive import descendants
from course.class_benchmark import cpu_by_pid

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="no /proc on this system")

NAME = "ev) R 1 1 (il"   # a command name that reads as fields to a parser that cuts at the first ")"


@pytest.fixture
def renamed_child():
    child = subprocess.Popen([sys.executable, "-c", f"open('/proc/self/comm', 'w').write({NAME!r}); "
                              "import time\nx = 0\nwhile True: x += 1"])
    try:
        for _ in range(100):
            stat = procstat.read(f"/proc/{child.pid}/stat")
            if stat and stat[0] == NAME:
                break
            time.sleep(0.02)
        yield child
    finally:
        child.kill()
        child.wait()


def test_a_command_name_with_a_parenthesis_and_fields_in_it_is_read_whole(renamed_child):
    name, fields = procstat.read(f"/proc/{renamed_child.pid}/stat")
    assert name == NAME and int(fields[1]) == os.getpid() and fields[0] in "RSD"
    time.sleep(0.3)
    assert procstat.cpu_seconds(procstat.read(f"/proc/{renamed_child.pid}/stat")[1]) > 0.05
    assert renamed_child.pid in descendants()
    program, cpu = cpu_by_pid()[renamed_child.pid]
    assert program == NAME and cpu > 0.05


def test_a_process_that_is_gone_or_a_file_that_is_no_stat_line_reads_as_none(tmp_path):
    (tmp_path / "stat").write_text("not a stat line")
    assert procstat.read(str(tmp_path / "stat")) is None
    assert procstat.read(str(tmp_path / "missing")) is None
