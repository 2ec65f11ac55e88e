"""Whose fault an outcome is: a type the trusted parent sets from what it knows itself, never read from text.

    Fault.CODE        the student's code: it crashed, exited, forged or malformed its report, computed wrong
    Fault.TIME_LIMIT  the student's time limit: a kernel (or launcher) ran past the limit derived from its work
    Fault.GRADER      the grader: its sandbox did not start (the child never said hello), a process stuck in the
                      driver after a kill, no CUDA compiler on the grading machine, a GPU tool or the GPU watch
                      failing, a reference kernel's own runs failing

A reason travels as `Why`, text that carries its fault, so a check that depends on another inherits the kind with
the reason. A check failed for the grader's fault counts neither way and flags a re-grade (engine/report.Check);
the other two fail. Words a judge puts before a reason do not change whose fault it is: pass the kind on
(`Why(text, fault_of(reason))`)."""
import enum


class Fault(enum.Enum):
    CODE = "the student's code"
    TIME_LIMIT = "the student's time limit"
    GRADER = "the grader"


class Why(str):
    """A reason (the text students and instructors read) with whose fault it is."""

    def __new__(cls, text, fault):
        why = super().__new__(cls, text)
        why.fault = Fault(fault)
        return why

    def __reduce__(self):  # pickles and copies keep the kind
        return (Why, (str(self), self.fault))


def fault_of(reason):
    """The fault a reason carries, or None for plain text (a failure of the student's code where a check fails)."""
    return getattr(reason, "fault", None)


def grader(text):
    return Why(text, Fault.GRADER)


def time_limit(text):
    return Why(text, Fault.TIME_LIMIT)


def code(text):
    return Why(text, Fault.CODE)


def keep(reason, text):
    """`text` (built from `reason`) with `reason`'s fault, where it has one."""
    fault = fault_of(reason)
    return Why(text, fault) if fault else text
