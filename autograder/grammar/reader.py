"""The module as the trusted parent reads it: its text parsed within the bounds (rules.MAX_*), without recursion, so
that no student text can hang or crash the grader; text past a bound is a finding that names its line."""
import ast

from ..reading.source import lines as source_lines
from .rules import CODING, MAX_DEPTH, MAX_INT_BITS, MAX_NODES, MAX_SOURCE_CHARS, MAX_STRING
from .text import _line


def coding_finding(source):
    """A finding for a coding declaration other than UTF-8 in the first two lines (PEP 263), or None."""
    for number, line in enumerate(source_lines(source)[:2], 1):
        cookie = CODING.match(line)
        if cookie and cookie.group(1).lower().replace("_", "-") not in ("utf-8", "utf8"):
            return (f"line {number}: the coding declaration {cookie.group(1)}: a kernel module is UTF-8 text; another "
                    "declaration makes Python read different code than the grader checked")
    return None


def _read(source):
    """(syntax tree, findings as (line, text), the source's lines): the module as the parent reads it, within the
    bounds (MAX_*). The tree is None where there is nothing safe to walk: the text does not parse (a syntax error
    is no finding: the compile check reports it from the child that compiles this same text), Python itself
    cannot read it, or it has more nodes or deeper nesting than the bounds. Never raises."""
    lines = source_lines(source)  # as Python numbers them (U+2028 ends no line)
    if len(source) > MAX_SOURCE_CHARS:
        return None, [(1, f"line 1: the file: {len(source):,} characters; a kernel module is at most "
                          f"{MAX_SOURCE_CHARS:,} (keep only its imports, constants, kernels and launchers)")], lines
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        if "integer string conversion" not in str(exc.msg):
            return None, [], lines
        n = exc.lineno or 1
        return None, [(n, f"line {n}: {_line(lines, n)}: an integer of more than 4,300 digits, which Python cannot "
                          f"read; a kernel module's numbers fit in {MAX_INT_BITS} bits (TILE = 16)")], lines
    except ValueError as exc:  # null bytes
        return None, [(1, f"line 1: the file: {exc}")], lines
    except (RecursionError, MemoryError, OverflowError) as exc:  # nesting past what Python's parser can hold
        n = max(range(1, len(lines) + 1), key=lambda i: len(lines[i - 1]), default=1)
        return None, [(n, f"line {n}: {_line(lines, n)}: nested too deeply for Python to read the module "
                          f"({type(exc).__name__}); write it in shorter steps")], lines
    return _bounded_tree(tree, lines)


def _bounded_tree(tree, lines):
    """(tree, findings, lines) for a parsed module: its nodes, nesting, strings and integers checked against the
    bounds without recursion. Nesting or size past them: no tree (nothing may walk it recursively)."""
    findings, count, stack = {}, 0, [(tree, 0, 1)]
    while stack:
        node, depth, line = stack.pop()
        count += 1
        if count > MAX_NODES:
            return None, [(1, f"line 1: the file: more than {MAX_NODES:,} pieces of syntax; a kernel module is a "
                              "few hundred lines (keep only its imports, constants, kernels and launchers)")], lines
        line = getattr(node, "lineno", line)
        if depth > MAX_DEPTH:  # named once, at its first line
            if line < findings.get("deep", (line + 1,))[0]:
                findings["deep"] = (line, f"line {line}: {_line(lines, line)}: nested more than {MAX_DEPTH} levels "
                                          "deep (statements and expressions together; a chain such as 1 + 1 + ... "
                                          "+ 1 nests one level per +): write it in shorter steps")
            continue
        value = getattr(node, "value", None) if isinstance(node, ast.Constant) else None
        if isinstance(value, (str, bytes)) and len(value) > MAX_STRING:
            findings[line, "string"] = (line, f"line {line}: {_line(lines, line)}: a string of {len(value):,} "
                                              f"characters; a kernel module's strings (docstrings too) are under "
                                              f"{MAX_STRING:,}: shorten it")
        elif type(value) is int and value.bit_length() > MAX_INT_BITS:
            findings[line, "int"] = (line, f"line {line}: {_line(lines, line)}: an integer of "
                                           f"{value.bit_length():,} bits; a kernel module's numbers fit in "
                                           f"{MAX_INT_BITS} bits (TILE = 16)")
        stack.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))
    return (None if "deep" in findings else tree), list(findings.values()), lines
