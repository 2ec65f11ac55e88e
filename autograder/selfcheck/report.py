"""Notebook side: what a self-check found, and the quiet it runs in (nothing here grades)."""
import warnings
from dataclasses import dataclass, field


@dataclass
class SelfCheck:
    """What one self-check found; its repr is the one-line summary a notebook shows."""
    stage: str
    device: str
    results: list = field(default_factory=list)   # (name, passed, message)
    figures: dict = field(default_factory=dict)    # numbers behind the plot
    skipped: list = field(default_factory=list)    # (name, why): checks that could not run here, counted neither way

    @property
    def passed(self):
        return bool(self.results) and all(ok for _, ok, _ in self.results)

    def __repr__(self):
        n = sum(1 for _, ok, _ in self.results if ok)
        return f"<self-check of stage {self.stage} ({self.device}): {n} of {len(self.results)} passed>"


def quiet_numba_warnings():
    """Send Numba's warnings nowhere (both numba's and numba-cuda's classes): a graded cell must not write stderr."""
    for path in ("numba.core.errors", "numba.cuda.core.errors"):
        try:
            module = __import__(path, fromlist=["NumbaWarning"])
        except Exception:  # an older or newer layout: the module filter below still applies
            continue
        warnings.filterwarnings("ignore", category=module.NumbaWarning)
    warnings.filterwarnings("ignore", module=r"numba(\.|$)")
