"""The class run's progress: a tqdm bar on a terminal, one plain line per graded student in a log."""
import sys

from . import printable


class _LineProgress:
    """Progress for a log that is not a terminal: one plain line per graded student (a redirected tqdm bar is a
    wall of carriage returns)."""

    def __init__(self, total, file):
        self.n, self.total, self.file, self.last = 0, total, file, ""

    def set_postfix_str(self, text):
        self.last = printable(text, lines=False)

    def update(self, n=1):
        self.n += n
        print(f"graded {self.n}/{self.total}" + (f": {self.last}" if self.last else ""), file=self.file, flush=True)

    def close(self):
        pass


def progress_bar(total, file=None):
    """A tqdm bar on a terminal, plain lines otherwise."""
    file = file or sys.stderr
    if not (hasattr(file, "isatty") and file.isatty()):
        return _LineProgress(total, file)
    from tqdm import tqdm
    bar = tqdm(total=total, unit="student", file=file, dynamic_ncols=True, leave=True)
    shown = bar.set_postfix_str  # a student's name on the bar: as written, on one line
    bar.set_postfix_str = lambda text, refresh=True: shown(printable(text, lines=False), refresh)
    return bar
