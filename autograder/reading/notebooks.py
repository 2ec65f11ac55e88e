"""Notebook JSON of bounded depth, and one normaliser of its cells and their nbgrader metadata.

Python's json module recurses once per level of nesting: a 10 KB file of brackets raised RecursionError in the
parent. The depth is measured first, without recursion, and a notebook deeper than MAX_DEPTH is not read. Fields of
the wrong type (a list as a grade_id) are read as absent, with a note, instead of failing where they are used.
"""
import json
import re
from dataclasses import dataclass

from .files import NotRead, read_text
from .source import cell_text, hidden_breaks

MAX_DEPTH = 64  # nbformat's notebooks nest 6 levels deep; widget state perhaps 20
MAX_CELLS = 2000  # a stage's notebook has about 20; 720,000 empty ones (33 MB) held the class run's parent 3 minutes
_STRING = re.compile(r'"[^"]*"?')   # once escapes are gone; to the end of the text where it is never closed
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def depth(text):
    """How deep the JSON text nests (brackets inside strings do not count): linear, in C and numpy, for any text."""
    import numpy as np
    text = text.replace("\\\\", "").replace('\\"', "")  # escaped backslashes, then escaped quotes
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text)).encode("ascii")
    if not brackets:
        return 0
    codes = np.frombuffer(brackets, dtype=np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1)
    return int(max(np.cumsum(steps, dtype=np.int64).max(), 0))


def load_notebook(path, follow=False):
    """(a notebook's cells, where it breaks off). A whole notebook gives (cells, None). One whose JSON breaks off
    part-way (a save or an upload cut short) gives the cells before the break and (the number of the cell it breaks
    off in, or None where every cell is whole; the text after the last whole cell): `broken_off` says it. NotRead,
    saying why, where no cell can be read (an empty file, text that is not a notebook, nesting past MAX_DEPTH)."""
    text = read_text(path, follow=follow)
    if not text.strip():
        raise NotRead(path, f"not a readable notebook: the file is empty ({len(text.encode())} bytes)")
    deep = depth(text)
    if deep > MAX_DEPTH:
        raise NotRead(path, _too_deep())
    try:
        try:
            nb = json.loads(text)
        except ValueError as exc:
            whole = _whole_cells(text, path)
            if whole is None:
                raise NotRead(path, f"not a readable notebook: not JSON ({exc})") from exc
            return _few(whole[0], path), whole[1]
    except RecursionError:  # the last guard: no text of a student's stops the grader
        raise NotRead(path, _too_deep()) from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise NotRead(path, "not a readable notebook: it has no list of cells")
    return _few(cells, path), None


def _few(cells, path):
    """`cells`, or NotRead where there are more than MAX_CELLS of them."""
    if len(cells) > MAX_CELLS:
        raise NotRead(path, f"not a readable notebook: {len(cells):,} cells, more than the {MAX_CELLS:,} a notebook "
                            "may have (a stage's notebook has about 20): keep your work in the stage's cells")
    return cells


def _too_deep():
    return f"not a readable notebook: its JSON nests more than {MAX_DEPTH} levels deep (a notebook nests about 6)"


def _whole_cells(text, path=""):
    """(the whole cells of a notebook's JSON that breaks off part-way, (the cell it breaks off in, the rest)), or
    None where the text has no list of cells to read (nbformat writes "cells" first). The decoder starts where the
    list starts, so the depth is measured again from there: a stray quote before it pairs the quotes of the whole
    text differently."""
    start = re.search(r'"cells"\s*:\s*\[', text)
    if start is None:
        return None
    if depth(text[start.end():]) > MAX_DEPTH:
        raise NotRead(path, _too_deep())
    decoder, cells, pos = json.JSONDecoder(), [], start.end()
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if text.startswith("]", pos):
            return cells, (None, text[pos:])
        try:
            cell, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return cells, (len(cells) + 1, text[pos:])
        cells.append(cell)


def broken_off(cut):
    """What a notebook that breaks off part-way (load_notebook's `cut`) is told."""
    number, _ = cut
    where = f"part-way through cell {number}" if number else "after its last cell"
    return (f"the notebook breaks off {where} (the file is truncated or damaged there: a save or an upload that "
            "did not finish)")


@dataclass
class Cell:
    """One cell as the grader reads it: every field of the type it must have, or absent."""
    number: int            # from the top of the notebook, markdown included, as a student counts them
    kind: str = ""         # "code", "markdown", ... ("" where the cell says none)
    source: str = ""
    grade: bool = False    # an nbgrader test cell (not part of the graded script)
    grade_id: str = None
    tags: tuple = ()
    notes: tuple = ()      # what was read as absent, and why


_KIND = {str: "text", bool: "true or false", list: "a list", dict: "a table", int: "a number", float: "a number"}


def _field(notes, owner, key, want, what):
    """owner[key] when it is of type `want`, else None (with a note where it was there but of another type)."""
    value = owner.get(key) if isinstance(owner, dict) else None
    if value is None or isinstance(value, want):
        return value
    notes.append(f"its {what} is {_KIND.get(type(value), type(value).__name__)}, not {_KIND[want]}: read as absent")
    return None


def read_cell(cell, number):
    """The normalised Cell of a notebook's JSON cell (the one reader of cell metadata)."""
    notes = []
    if not isinstance(cell, dict):
        return Cell(number, notes=(f"cell {number} is a {type(cell).__name__}, not a cell: read as empty",))
    kind = _field(notes, cell, "cell_type", str, "cell_type") or ""
    source, problem = cell_text(cell.get("source"))
    if problem:
        notes.append(problem)
    separators = hidden_breaks(source)
    if separators:
        notes.append(f"it holds {separators}, which Python does not end a line at: its lines are numbered as Python "
                     "numbers them")
    meta = _field(notes, cell, "metadata", dict, "metadata") or {}
    nbgrader = _field(notes, meta, "nbgrader", dict, "nbgrader metadata") or {}
    grade = bool(_field(notes, nbgrader, "grade", bool, "nbgrader grade"))
    grade_id = _field(notes, nbgrader, "grade_id", str, "nbgrader grade_id")
    tags = _field(notes, meta, "tags", list, "tags") or []
    if not all(isinstance(t, str) for t in tags):
        notes.append("tags that are not text were left out")
    return Cell(number, kind, source, grade, grade_id, tuple(t for t in tags if isinstance(t, str)),
                tuple(f"cell {number}: {n}" for n in notes))


def read_cells(cells):
    """[Cell] of a notebook's list of JSON cells."""
    return [read_cell(c, n) for n, c in enumerate(cells, 1)]
