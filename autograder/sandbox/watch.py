"""Trusted parent side: a `cancel` for run_child that reads a tool's log while the tool writes it."""


class LogWatch:
    """Stops a tool's child as soon as its log holds the verdict: racecheck's first hazard report decides the race
    check, and a racy kernel's run goes on reporting for minutes (a tiled kernel without its second barrier at 288^3:
    over 400 s on an H100, BENCHMARKS.md 2026-11-27). `decided(text)` says whether the log so far decides; the
    sandbox names the tool's own log files (see_outputs) and this `cancel` reads them each time it is polled."""

    def __init__(self, decided):
        self.decided, self.files, self.fired, self.inner = decided, [], False, None

    def around(self, inner):
        self.inner = inner
        return self

    def see_outputs(self, files):
        self.files = list(files)

    def begun(self):
        self.inner.begun()

    def is_set(self):
        if self.inner.is_set():
            return True
        for path in () if self.fired else self.files:
            try:
                with open(path, "rb") as f:
                    text = f.read(1 << 20).decode("utf-8", "replace")
            except OSError:
                continue
            self.fired = self.fired or bool(self.decided(text))
        return self.fired
