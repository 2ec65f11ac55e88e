"""Any text a notebook cell may hold, with its lines numbered as Python numbers them.

Python ends a line at \\n, \\r\\n or \\r only; str.splitlines also breaks at U+2028, U+2029, U+0085, \\v, \\f and
\\x1c-\\x1e. A comment or a string holding one of those split the graded script where Python does not: a comment's
tail became code (a grammar finding on honest code) and every line number after it was off by one. JSON may also
hold a lone surrogate (\\ud800), which no UTF-8 file can: writing the graded script failed in the parent.
"""
import re

BREAK = re.compile(r"\r\n|\r|\n")
SURROGATE = re.compile("[\ud800-\udfff]")


def lines(text):
    """The lines of `text` as Python and Jupyter count them (a final line break ends the last line)."""
    parts = BREAK.split(text)
    if parts and parts[-1] == "":
        parts.pop()
    return parts


def cell_text(value):
    """(a cell's source as one text, what was wrong with it or ""): nbformat writes a string or a list of strings;
    anything else is read as empty, and pieces that are not strings are left out."""
    if isinstance(value, str):
        return _unicode(value)
    if isinstance(value, list):
        text = "".join(v for v in value if isinstance(v, str))
        text, problem = _unicode(text)
        if not all(isinstance(v, str) for v in value):
            problem = "parts of its source that are not text were left out" + (f"; {problem}" if problem else "")
        return text, problem
    if value is None:
        return "", ""
    return "", f"its source is {type(value).__name__}, not text: read as empty"


def _unicode(text):
    """`text` with any lone surrogate (JSON's \\ud800, no character) as U+FFFD, and what was replaced."""
    found = SURROGATE.findall(text)
    if not found:
        return text, ""
    return (SURROGATE.sub("\ufffd", text),
            f"{len(found)} lone surrogate{'s' if len(found) > 1 else ''} ({ascii(found[0])[1:-1]}: not a character) "
            "read as U+FFFD")


_HIDDEN = {"\u2028": "U+2028 (LINE SEPARATOR)", "\u2029": "U+2029 (PARAGRAPH SEPARATOR)", "\x85": "U+0085 (NEXT LINE)",
           "\x0b": "U+000B (VERTICAL TAB)", "\x0c": "U+000C (FORM FEED)", "\x1c": "U+001C", "\x1d": "U+001D",
           "\x1e": "U+001E"}


def hidden_breaks(text):
    """The characters of `text` that str.splitlines ends a line at and Python does not, named ("" for none)."""
    found = [name for char, name in _HIDDEN.items() if char in text]
    return ", ".join(found)


def renumber_cells(history):
    """Make the line cache IPython keeps of each cell in `history` (the notebook's cell texts: its `_ih`) number
    lines as Python does. IPython caches a cell as str.splitlines of its text, so after a U+2028 inspect.getsource
    (the self-check's reading of the notebook's functions) and tracebacks read the wrong lines."""
    import linecache
    texts = [t for t in history if isinstance(t, str) and hidden_breaks(t)] if isinstance(history, list) else []
    for name, entry in list(linecache.cache.items()) if texts else ():
        if not (isinstance(entry, tuple) and len(entry) == 4 and entry[1] is None):
            continue  # a file on disk: Python's own reading of it numbers lines as Python does
        for text in texts:
            if entry[0] == len(text) and entry[2] == [ln + "\n" for ln in text.splitlines()]:
                linecache.cache[name] = (entry[0], None, [ln + "\n" for ln in lines(text)], name)
                break
