"""Gradescope's autograder: ``setup.sh`` and ``run_autograder`` here, packed with the grader by bundle.py."""
