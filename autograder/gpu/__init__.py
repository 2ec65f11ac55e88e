"""Trusted parent side: the GPU tools (compute-sanitizer, ncu) wrapped around a grading child, and GPU detection."""
