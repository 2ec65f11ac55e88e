"""Trusted parent side: a stage's verdicts from its children's facts. A check that depends on another is gated by
it and inherits its fault (outcome.py); the checks themselves are pure judges in autograder/checks/."""
import copy
import os


from ..checks import bank_conflicts, compiles, correct, data_reuse, races, shared_memory
from ..checks.correct import explain_error
from ..checks.titles import title
from ..checks import child_problem, depends_on, grader_fault
from ..outcome import keep, time_limit

SIM_JUDGES = {"races": races.judge_sim, "bank_conflicts": bank_conflicts.judge_sim, "data_reuse": None}


class Later:
    """A check judged only when called for: a GPU tool's verdict waits for its run, speed for the GPU's turn."""

    def __init__(self, judge):
        self.judge = judge

    @staticmethod
    def resolve(checks):
        """`checks` with every Later judged now, in order."""
        return [c.judge() if isinstance(c, Later) else c for c in checks]


def _done(future):
    """A child's future, or a part of one (engine/children._Part), has its result."""
    return (future.future if hasattr(future, "future") else future).done()


class Judging:
    """The judging half of a StageGrader (engine/stage.py)."""

    def gate_reason(self, key):
        """Why the later GPU check `key` (races, bank_conflicts, speed) must not run, or "".

        Waits for the compile and correctness children (started before any caller of this). A timeout anywhere
        in the stage stops every later GPU check; so do a kernel that does not compile and, for the GPU tools
        and (unless [speed] needs_correct is false) for speed, a wrong result on the correctness shapes."""
        with self._gate_lock:
            if self._gate is None:
                self._gate = self._compute_gate()
        compile_problem, wrong, fault = self._gate
        if self.timed_out:
            return time_limit(f"not run: {self.timed_out} (a kernel that never ends is stopped once per stage)")
        if fault:  # a check it depends on failed for the grader's own trouble: neither does this one count
            return fault
        if compile_problem:
            return "not run: " + compile_problem
        if wrong and (key != "speed" or self.cfg["speed"]["needs_correct"]):
            return (f"not run: the correctness checks failed ({wrong}); "
                    + ("speed counts only for a correct kernel" if key == "speed" else
                       "the GPU tools run only on a kernel that computes the right product"))
        return ""

    def gate_closed_now(self):
        """True once the compile and correctness children have all ended and the later GPU checks must not run
        (gate_reason); False while any of them still runs. Never waits."""
        if self._gate is None:
            started = dict(self.futures)  # a copy: the planning thread may still add to it
            if "compile" not in started:
                return False
            futures = [started["compile"]] + [v[0] for k, v in started.items() if k.startswith("correct:")]
            if not all(_done(f) for f in futures):
                return False
        return bool(self.gate_reason("races"))

    def _compute_gate(self):
        """(why the kernel does not compile, the correctness groups it failed, the grader's own fault in one of
        them): a check skipped for the grader's trouble makes those that depend on it skipped too, not failed."""
        if "compile" not in self.futures:  # a check run on its own (tools/verify_gpu/ times speed alone)
            return "", "", ""
        compiled = self.futures["compile"].result()
        fault = grader_fault(compiled)
        if fault:
            return "", "", depends_on("the compile check", fault)
        if compiles.judge(self, compiled).status != "passed":
            return "the kernel does not compile", "", ""
        groups = [k for k in self.futures if k.startswith("correct:")]
        wrong = []
        for key in groups:
            future, inputs = self.futures[key]
            group = key.split(":", 1)[1]
            fault = grader_fault(future.result())
            if fault:
                return "", "", depends_on(f"the correctness check '{group}'", fault)
            if correct.judge(self, group, future.result(), inputs, len(groups)).status != "passed":
                wrong.append(group)
        return "", ", ".join(wrong), ""

    def judge(self, futures):
        """Every check of the stage, in report order; call once the children started may be waited for."""
        return Later.resolve(self.judge_now(futures))

    def judge_now(self, futures):
        """judge's checks, those a tier judges later (Later: the GPU tools' and speed's) left to be judged: a grade
        judges every stage's correctness while the GPU tools still run, and times the stages only after."""
        if self.src.unreadable:  # the stage's only file could not be read (autograder/submission.py says why)
            return self.failed_all(self.src.unreadable)
        if self.deleted:
            name = os.path.basename(self.src.path)
            return self.failed_all("; ".join(f"the graded cell `{d}` is missing from {name}" for d in self.deleted)
                                   + ": it was deleted. Copy it back from the released notebook (the code cell under "
                                   "its heading, with the TODO to fill in): every graded cell must stay")
        if self.stubs:
            return self.judge_stubs()
        if self.findings:
            return self.judge_zeroed()
        compiled = self.compile_facts(futures)
        compile_check = compiles.judge(self, compiled)
        checks = []
        if self.stage.tiled:
            checks.append(shared_memory.judge(self, compiled))
        groups = [k for k in futures if k.startswith("correct:")]
        for key in groups:
            future, inputs = futures[key]
            checks.append(correct.judge(self, key.split(":", 1)[1], future.result(), inputs, len(groups)))
        if "instruments" in futures:
            small = self.judge_instruments(futures["instruments"].result())
            if "sampled" in futures:
                graded = self.judge_instruments(futures["sampled"].result(), self.sampled_inputs, sampled=True)
                small = [both(a, b, self.sampled_shape) for a, b in zip(small, graded)]
            checks.extend(small)
        checks.extend(self.tier_checks(futures))
        return [compile_check, self.shortcut] + checks

    def compile_facts(self, futures):
        """The compile check's child result."""
        return futures["compile"].result()

    def judge_stubs(self):
        return self.failed_all(f"not implemented yet: {' and '.join(self.stubs)} still "
                               f"{'raises' if len(self.stubs) == 1 else 'raise'} NotImplementedError")

    def judge_zeroed(self):
        """A stage the kernel-module grammar zeroed: no child ran; every check fails, saying why."""
        return self.failed_all(f"not run: the module holds what a kernel module may not (see "
                               f"'{title(self, 'shortcuts')}'), so the whole stage scores 0")

    def failed_all(self, why):
        """Every check of the stage failed with `why`, in the rows and order of a graded stage (the grammar's
        verdict stays as judged); in the simulator speed stays a visible skip."""
        def failed(key, group=None, share=1.0):
            return self.check(key, title(self, key, group), share).verdict(False, why)
        # the grammar judged no code of a stage whose file was never read: not a PASS, a row that says so
        grammar = (copy.copy(self.shortcut).skip("no file of this stage was read: " + why.split(":", 1)[0])
                   if self.src.unreadable else self.shortcut)
        checks = [failed("compiles"), grammar]
        if self.stage.tiled and "shared_memory" in self.points:
            checks.append(failed("shared_memory"))
        groups = list(self.shape_groups())
        checks += [failed("correct", group, 1.0 / len(groups)) for group in groups]
        checks += [failed(key) for key in self.instrument_keys()]
        return checks + self.tier_rows(failed)

    def judge_instruments(self, result, inputs=None, sampled=False):
        """The instrument checks from the instrumented run's `result`; its C is checked against `inputs` (default: those
        of run_instruments), and a wrong product voids every counter. `sampled`: the run of a few blocks of the timed
        size's grid (run_structure), whose written elements alone are checked."""
        problem = child_problem(result)
        if grader_fault(result):  # the grader's own trouble: each instrument check counts neither way
            return [self.check(key, title(self, key)).verdict(False, problem) for key in self.instrument_keys()]
        shape_facts = result.facts.get("shapes", [{}])[0] if not problem else {}
        if not problem and "error" in shape_facts:
            problem = explain_error(shape_facts["error"])
        inputs = inputs or getattr(self, "instrument_inputs", None)
        wrong = ""
        if not problem and "instruments" in shape_facts and inputs and sampled:
            wrong = correct.sampled_product(result.arrays.get("C0"), inputs["A0"], inputs["B0"], self.tol,
                                            shape_facts.get("writes_past_end", 0), shape_facts["instruments"])
        elif not problem and "instruments" in shape_facts and inputs:  # a wrong product's counters count for nothing
            wrong = correct.instrumented_product(result.arrays.get("C0"), inputs["A0"], inputs["B0"], self.tol,
                                                 self.tile, shape_facts.get("writes_past_end", 0),
                                                 shape_facts["instruments"])
        checks = []
        for key in self.instrument_keys():
            judge = SIM_JUDGES[key]
            check = self.check(key, title(self, key))
            if problem or "instruments" not in shape_facts:
                checks.append(check.verdict(False, keep(problem, "not checked: the instrumented run failed: "
                                                         + (problem or "no facts"))))
                continue
            if wrong:
                checks.append(check.verdict(False, wrong))
                continue
            facts = shape_facts["instruments"]
            if key == "data_reuse":
                structure = self.cfg["structure"]
                note = getattr(self, "tile_note", "")
                passed, message = data_reuse.judge_sim(facts, self.tile or structure["tiles"][0],
                                                       structure["reuse_fraction"], tile_known=not note)
                checks.append(check.verdict(passed, message + (f" ({note})" if note else "")))
            else:
                checks.append(check.verdict(*judge(facts)))
        return checks


def both(small, graded, shape):
    """One instrument check from the drawn small run (`small`: partial tiles at every edge) and the sampled run at the
    graded size (`graded`, at `shape`): it passes only where both do; a failure or a skip of either is its verdict."""
    if small.status != "passed":
        return small
    if graded.status == "passed":
        small.output += "\nAt the graded size too: " + graded.output
        return small
    if graded.status == "failed":
        graded.output = (f"at M x K x N = {' x '.join(map(str, shape))} (the timed size's grid), in blocks the grader "
                         "drew: " + graded.output)
    return graded
