"""Trusted parent side: the grade's one correctness runner on a GPU. Each GPU process costs a CUDA context, and the
driver makes contexts one at a time for the whole host (about 0.16 s each, BENCHMARKS.md): five stages with a
runner each, four grades at once on four GPUs, and every context of the host waits seconds. So one runner launches
every stage's checked plans, one shape after another, from each stage's own PTX (CorrectTogether), and each stage
gets its own shapes' results. A stage whose results that run did not bring (the runner stopped on another stage's
shape, or before any) runs its groups again in children of its own, as before: a stage never loses its verdict for
another's sake, and a kernel that never ends is stopped on its own shape, as it would be alone."""
import time
from concurrent.futures import Future

from ..outcome import Fault, fault_of, grader
from ..protocol import renumbered
from .children import _AnyCut, _Cut, _slice


class OneChild:
    """What the grade's shared children have in common: stages join while the grade plans, each with a future; the
    child runs once every stage joined and there are two or more; every future it does not answer is answered with
    None, and that stage runs its own child."""

    def __init__(self):
        self.members = []  # (grader, ..., future): the last item is the stage's future

    def start(self, pool):
        if len(self.members) < 2:
            self._release()
            return
        pool.submit(self._run)

    def _release(self):
        for *_, future in self.members:
            if not future.done():
                future.set_result(None)

    def _run(self):
        try:
            self._together()
        finally:
            self._release()


class CorrectTogether(OneChild):
    """One GPU runner for the correctness check of every stage of a grade that joined (engine.grade). Members:
    (grader, {group: shapes}, {group: drawn inputs}, future of (results, left) or None)."""

    def join(self, g, groups, drawn):
        """A future of stage `g`'s first correctness round: ({group: ChildResult}, [groups to run again]), or None
        where the stage runs its own runner (Children.run_correctness)."""
        future = Future()
        self.members.append((g, groups, drawn, future))
        return future

    def _together(self):
        first, others = self.members[0][0], [m[0] for m in self.members[1:]]
        shapes_of = {id(g): [s for shapes in groups.values() for s in shapes] for g, groups, _, _ in self.members}
        part, refused = [], {}  # the members whose plans the runner got, in its order; its start refused: why
        # stopped where a stage taking part ran out of time elsewhere (none that gave no plan: its build's time-out
        # is its own); filled as the plans are given, read as the runner runs
        cut = _AnyCut([])
        grace, start = first.cfg["limits"]["sibling_grace_s"], first.gpu_limits["gpu_start_s"]

        def given(ready):
            kernels, plans, firsts, arrays = [], [], [], {}
            for g, groups, drawn, future in self.members:
                ran, why = g.runner_job("run", shapes_of[id(g)], count=len(shapes_of[id(g)]))  # waits for the build
                if why:  # no plan: the stage's verdict is its build's, as in its own runner
                    future.set_result(({group: g.not_run(why) for group in groups}, []))
                    continue
                offset = len(kernels)
                kernels += ran["kernels"]
                firsts.append(offset)
                plans += [renumbered(plan, offset) for plan in ran["plans"]]
                for group, shapes in groups.items():
                    for j in range(len(shapes)):
                        i = len(arrays) // 2
                        arrays[f"A{i}"], arrays[f"B{i}"] = drawn[group][f"A{j}"], drawn[group][f"B{j}"]
                part.append(g)
                cut.cuts.append(_Cut(g, grace, start))
            if len(part) < 2:  # nothing to share: each stage left runs its own runner
                refused["why"] = "not run: fewer than two stages were built"
                return refused["why"]
            ready.give_inputs(arrays)
            if not ready(first.cfg["limits"]["gpu_start_s"]):
                refused["why"] = grader("not gradable: the correctness runner did not start in time")
                return refused["why"]
            return {"kernels": kernels, "plans": plans, "count": len(plans), "stage_kernels": firsts}

        members = {id(g): (g, groups, future) for g, groups, _, future in self.members}
        count = sum(len(s) for s in shapes_of.values())
        job = {"task": "run", "device": "gpu", "kernel": first.stage.kernel, "count": count, "late": True}
        timeout = sum(g.run_timeout(shapes_of[id(g)]) for g, *_ in self.members)
        work = max(g.after_start(shapes_of[id(g)]) for g, *_ in self.members)
        names = ", ".join(g.stage.name for g, *_ in self.members)
        result = first.run(job, None, (), timeout, f"the correctness runner of stages {names}", False, given, work,
                           shared_with=others, cut=cut)
        if refused:
            return
        for g, results, left in deal(result, [(g, members[id(g)][1]) for g in part]):
            members[id(g)][2].set_result((results, left) if results is not None else None)


def deal(result, part):
    """[(grader, {group: ChildResult} or None, [groups to run again])] of one runner that ran the shapes of `part`
    ([(grader, {group: shapes})], in order) one after another. Each stage whose shapes all ran gets its groups'
    results. Where the runner stopped early, the group of the shape it stopped on keeps that result (and a time-out
    there is its stage's), the groups of that stage it did not finish run again, and every other stage it did not
    bring results for gets None: it runs its own runner."""
    spans, i = [], 0
    for g, groups in part:
        spans.append({})
        for group, shapes in groups.items():
            spans[-1][group] = (i, i + len(shapes))
            i += len(shapes)
    total = i
    facts = result.facts if isinstance(result.facts, dict) else {}
    done = len(facts.get("shapes", []))
    at = result.started - 1 if result.problem else (done - 1 if done < total else total)
    if at < 0 or result.cancelled or not 0 <= at <= total:  # nothing to tell the stages apart by
        return [(g, None, []) for g, _ in part]
    dealt = []
    for s, (g, groups) in enumerate(part):
        results, left, mine = {}, [], False
        for group, (a, b) in spans[s].items():
            if a <= at < b:
                mine = True
                results[group] = _own(_slice(result, a, b, problem=True), s)
            elif b <= at and not result.problem:
                results[group] = _own(_slice(result, a, b, problem=False), s)
            else:
                left.append(group)
        if mine and result.timed_out and fault_of(result.problem) is Fault.TIME_LIMIT:
            with g._timeout_lock:  # the stage whose shape ran out of time: its other children get their grace
                if not g.timed_out:
                    g.timed_out = "the correctness check of this stage did not finish within its limit"
                    g.timeout_at = time.monotonic()
        dealt.append((g, results or None, left))
    return dealt


def _own(result, s):
    """A stage's slice with its own stage kernel as the driver loaded it (its registers: the compile check), not the
    first stage's: the runner reports each stage's first kernel (stage_kernels); a slice without them has none."""
    kernels = result.facts.get("stage_kernels") if isinstance(result.facts.get("stage_kernels"), list) else []
    facts = {k: v for k, v in result.facts.items() if k not in ("kernel", "stage_kernels")}
    if s < len(kernels):
        facts["kernel"] = kernels[s]
    result.facts = facts
    return result
