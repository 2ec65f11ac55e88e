"""Trusted parent side: the checks, one module each, named by its points key in config.toml.

A check judges raw facts that a grading child reported (or that a GPU tool
wrote to a log the parent chose); it never imports or runs student code.
    compiles        the kernel compiles to PTX for the real GPU target
    shared_memory   shared tiles of the right shape and two barriers (from the PTX); in stage 4 the product reads B
                    from the padded tile, transposed (from the kernel's source: grammar/tiles.py)
    correct         outputs against a float64 reference, with the likely cause of a failure
    races           simulator race detector, or compute-sanitizer racecheck on a GPU
    bank_conflicts  simulator bank counter, or ncu's conflict count on a GPU
    data_reuse      simulator count of global loads per output
    speed           student kernel against a reference timed in the same child
    shortcuts       the kernel-module grammar (autograder/grammar.py): any finding zeroes the stage
"""


from ..outcome import Fault, fault_of, grader, keep


def missing_facts(facts, key):
    """(True, why) when an instrumented run left no facts under `key`."""
    if not isinstance(facts, dict) or key not in facts:
        return True, "the instrumented run produced no facts (the kernel did not run to the end)"
    return False, ""


def child_problem(result):
    """A message when a child did not deliver usable facts, else ''; it carries the problem's fault (outcome.py):
    the child's printed output, which student code controls, only follows it."""
    if result.problem:
        return keep(result.problem, result.problem + (f"\nOutput:\n{result.log[-2000:]}" if result.log.strip() else ""))
    for key in ("import_error", "task_error"):
        if key in result.facts:
            return result.facts[key]["message"]
    return ""


def grader_fault(result):
    """The child's problem when it is the grader's fault (the parent said so: a sandbox that did not start, a
    process stuck in the driver), else ''. A check that depends on such a child is not run either, and counts
    neither way (depends_on), instead of failing for what the grader did."""
    problem = child_problem(result) if result is not None else ""
    return problem if fault_of(problem) is Fault.GRADER else ""


def depends_on(what, problem):
    """The output of a check not run because `what` (a check it depends on) was not gradable: the grader's fault."""
    return grader(f"not gradable: not run because a check it depends on was not gradable ({what}):\n{problem}")
