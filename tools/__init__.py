"""Developer and instructor scripts that are not grading: GPU verification, the optimisation ladder,
known-bad variants of the solutions."""
