"""The grading child's process: entry.py starts it inside the sandbox, says hello, and hands the job to its side.

- builder/ (beside student code, no GPU): imports the module, records the launcher's plan at every shape, compiles it.
- runner/ (never imports student code): runs the checked plan from PTX, times it, runs the GPU tools' targets.
- sim/ (beside student code): runs the checked plan in Numba's simulator, with its instruments.

None of it scores anything: the parent judges the facts it reports (autograder/checks/); protocol.py is the shape of
everything that crosses the line.
"""
