"""Reading PTX text (no imports beyond `re`): what the structure checks and the plan checks need to know of a
compiled kernel. Used by the simulator tier's compile child (runner/run.py) and by the parent
(sandbox/plan.py), which reads the GPU tier's PTX itself."""
import re

_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([A-Za-z_$%][\w$]*)\s*\(([^)]*)\)", re.M)
_PARAM = re.compile(r"\.param\s+\.([a-z]\d+)\b")
_SHARED = re.compile(r"^\s*(?:\.visible\s+)?\.shared\s+\.align\s+\d+\s+\.b8\s+\w+\[(\d+)\];", re.M)
_BARRIER = re.compile(r"\b(?:bar|barrier)\.sync\b")


def entries(ptx):
    """{entry name: [PTX parameter types]} of a PTX module."""
    return {m.group(1): _PARAM.findall(m.group(2)) for m in _ENTRY.finditer(ptx)}


def facts(texts):
    """The structure checks' facts from PTX: static shared arrays (bytes each) and barrier instructions."""
    text = "\n".join(texts)
    return {"shared_arrays": [int(n) for n in _SHARED.findall(text)], "barriers": len(_BARRIER.findall(text))}
