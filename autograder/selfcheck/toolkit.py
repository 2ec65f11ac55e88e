"""Notebook side: tell a missing CUDA compiler from a kernel the compiler rejects, by the compile error's text."""
import re

from ..engine.report import TOOLKIT_INSTALL  # noqa: F401 (the grader's install line, one text for both)

_LIB_NOT_FOUND = re.compile(r'DynamicLibNotFoundError: Failure finding "([^"]+)"')
_TOOLKIT_GONE = (re.compile(r"libNVVM (cannot be found|is not available)|libdevice\S* (cannot be found|not found)|"
                            r"No such file[^\n]*libdevice", re.I), re.compile(r"NvvmSupportError"))


def toolkit_missing(compile_error):
    """What of the CUDA compiler is missing, by a compile error's text ("" when the error is the kernel's own).

    numba-cuda without its cu13 extra (the self-check wheel's plain dependencies) has no NVVM, libdevice or CUDA
    runtime library: the compile then fails on a library lookup, not on the kernel."""
    found = _LIB_NOT_FOUND.search(compile_error)
    if found:
        return f"{found.group(1)} not found"
    found = _TOOLKIT_GONE[0].search(compile_error) or _TOOLKIT_GONE[1].search(compile_error)
    return found.group(0) if found else ""
