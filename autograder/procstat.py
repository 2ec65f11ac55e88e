"""One reading of a process's (or a thread's) /proc stat line for every part that lists or measures processes: the
command name sits in parentheses and may itself hold spaces and ")", so the fields are what follows the last ")"."""
import os

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100   # the clock ticks of a CPU second


def read(path):
    """(command name, [state, ppid, pgrp, ...]: the fields after the name, utime at 11, stime at 12) of a stat file
    such as /proc/PID/stat or /proc/self/task/TID/stat; None when it is gone or not a stat line."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    cut = text.rfind(")")
    fields = text[cut + 2:].split()
    if cut < 0 or len(fields) < 13:
        return None
    return text[text.find("(") + 1:cut], fields


def cpu_seconds(fields):
    """User and system CPU seconds of a stat line's fields."""
    return (int(fields[11]) + int(fields[12])) / TICKS
