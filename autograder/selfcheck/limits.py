"""The notebook self-check's time limit: the grader's own for the same shapes (engine/plan.sim_seconds), so a kernel
that never ends stops the self-check where it stops the grade, instead of hanging the notebook."""
import contextlib
import signal
import threading


class TimeLimit(BaseException):
    """A self-check launch ran past the grader's limit for its shapes (a BaseException: the simulator's threads
    catch Exception and would keep running)."""


@contextlib.contextmanager
def within(seconds):
    """Stop what runs inside after `seconds` (the grader's limit), raising TimeLimit, in the simulator: its kernels
    are Python, run in this thread. Where no alarm can be set (not the main thread), nothing is stopped."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def stop(signum, frame):
        raise TimeLimit(seconds)
    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def time_limit_message(seconds):
    """What a launch stopped at its limit is told: the grader's words."""
    return (f"did not finish within {seconds:.0f} s (the grader's limit for these shapes) and was stopped: look for a "
            "loop that never ends (a while loop whose condition never changes, or a barrier not all threads reach)")
