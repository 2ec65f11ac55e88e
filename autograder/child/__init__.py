"""Untrusted side: everything that runs inside a grading child, beside student code.

entry.py starts the child and loads the student's module by path; tasks.py
compiles and runs; timing.py times against the references; launches.py
records and replays the launcher's kernel launches; references.py holds the
reference kernels and the input fills. None of it scores anything: the parent
judges the facts it reports (autograder/checks/).
"""
