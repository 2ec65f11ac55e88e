"""How a class run's worker processes live and end: SIGTERM unwinds a grade in progress (its temporary folders and
sandbox children removed), a worker ends with the run that started it, and SIGUSR1 prints where a process waits."""
import faulthandler
import os
import signal
import sys


def sigterm_unwinds():
    """SIGTERM raises SystemExit where the process is: every `finally` and temporary folder of a grade in progress
    is cleaned up (the student's code and the children's inputs), and the sandbox kills its children, before the
    process ends. Python's default ends it at once and leaves them behind."""
    def stop(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)   # a second SIGTERM ends it at once
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, stop)


def end_with_the_parent():
    """A worker ends when the class run that started it ends, however it ends (kill -9 included): the kernel sends
    it SIGTERM (PR_SET_PDEATHSIG), which unwinds it as sigterm_unwinds says."""
    sigterm_unwinds()
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)     # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent was gone before the request took effect
        raise SystemExit(143)


def stacks_on_usr1():
    """`kill -USR1 PID` makes this process print every thread's stack to stderr: where a run is waiting."""
    try:
        faulthandler.register(signal.SIGUSR1, file=sys.__stderr__, all_threads=True)
    except (AttributeError, ValueError, OSError):  # no stderr with a file descriptor: nothing to print to
        pass
