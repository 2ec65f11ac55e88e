"""Trusted parent side: the static scan's verdict. A host-side shortcut zeroes the whole stage."""
from ..scan import host_shortcuts


def judge(g):
    """(check, findings): the 0-point shortcuts check of StageGrader `g` and the scan's findings."""
    findings = host_shortcuts(g.src.source)
    check = g.check("shortcuts", "No host-side shortcuts")
    if findings:
        return check.verdict(False, "Host-side shortcuts found; the whole stage scores 0:\n  "
                             + "\n  ".join(findings)), findings
    return check.verdict(True, "no NumPy/CuPy/cuBLAS products, host copies of operands or dynamic code"), findings
