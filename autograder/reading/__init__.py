"""Trusted parent side: the one bounded reader of a submission's files.

Student files are untrusted input to the parent: a link out of the folder, a FIFO that never delivers, a notebook
nested a thousand levels deep, metadata of the wrong type, text with line separators Python does not count. Every
place that reads a submission (autograder/submission.py, course/records.py) goes through here, so none of them can
hang, crash or read outside the folder; what is not read is said with why (NotRead.why) and costs no stage.
    files       regular files only, never through a link, within size caps
    notebooks   notebook JSON of bounded depth; one normaliser of cells and their nbgrader metadata
    source      a cell's text as Python numbers its lines
"""
from .files import NotRead  # noqa: F401
