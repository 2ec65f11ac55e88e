"""Trusted parent side: find the exercise stubs in a submission's source, without running it.

``unimplemented`` finds functions that still raise NotImplementedError. What a
kernel module may contain at all is autograder/grammar.py.
"""
import ast


def unimplemented(source, names):
    """Names among `names` whose function body still raises NotImplementedError."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):  # the grammar names the problem
        return []
    stubs = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Raise) and sub.exc is not None:
                    target = sub.exc.func if isinstance(sub.exc, ast.Call) else sub.exc
                    if isinstance(target, ast.Name) and target.id == "NotImplementedError":
                        stubs.append(node.name)
                        break
    return stubs
