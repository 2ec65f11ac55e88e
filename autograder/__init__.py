"""Autograder for the Numba CUDA matrix-multiplication course."""
