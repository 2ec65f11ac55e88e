"""Runner side: GPU children that never import student code. They load the build's PTX, launch the parent's checked
plan (plan_launch.py), check and time it (run.py, timing.py), beside the grader's own kernels (references.py)."""
