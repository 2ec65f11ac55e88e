"""The pool that feeds the worker slots (slots.py): one spawned process per slot, each grading one student at a time.

A worker is pinned to its slot's GPU (CUDA_VISIBLE_DEVICES, set before anything imports CUDA), grades with the class
run's grader and stages the student's result in ``COURSE/.grading/<assignment>/graded/<student>.json``; the parent
stores each staged result as it comes in (the gradebook, feedback and CSV have one writer). A worker that dies is
replaced, and its student is reported as not graded in this run.
"""
import collections
import concurrent.futures
import multiprocessing
import os
import threading

from .. import feedback
from ..lifetime import end_with_the_parent, stacks_on_usr1, stopping

_WORKER = {}  # a worker process's grader, kept between its students


def _init_worker(env, warm_cfg=None, grader=None):
    """First thing in a spawned worker: its GPU (CUDA_VISIBLE_DEVICES) before anything imports CUDA. In the GPU tier
    it then starts compiling the grader's own kernels (engine/kernels.py) in the background, and it makes its class
    grader (`grader`: the arguments of _worker_grader), so that this work overlaps the parent's opening of the
    gradebook instead of delaying the worker's first student. The sandbox warning, if any, was printed once by the
    parent, before the progress bar."""
    from autograder.sandbox import backends
    backends._warned.append(True)
    os.environ.update(env)
    stacks_on_usr1()
    end_with_the_parent()
    if warm_cfg is not None:
        from autograder.engine import kernels
        kernels.grader_folder(warm_cfg)
    if grader is not None:
        try:
            _worker_grader(*grader)
        except Exception:  # made again for the first student, whose grade then says what went wrong
            _WORKER.clear()


def _worker_grader(grader_class, course, assignment, device, seed, jobs, coursedir=None):
    """This worker's class grader, made once and kept between its students (coursedir: the course's folders as the
    parent read them, so that the worker never imports nbgrader)."""
    key = (course, assignment, device, seed, jobs)
    grader = _WORKER.get(key)
    if grader is None:
        grader = grader_class(course, assignment, device, seed, out=open(os.devnull, "w"), coursedir=coursedir)
        grader.set_jobs(jobs)
        _WORKER.clear()
        _WORKER[key] = grader
    return grader


def _grade_in_worker(grader_class, course, assignment, device, seed, jobs, force, student, folder):
    """Grade one student in a worker process with a `grader_class` (course.grade_class.ClassGrader) and stage the
    result; returns the staged file."""
    if stopping():  # SIGTERM came (course/lifetime.py): no grade starts, its checks would be stopped at once
        raise SystemExit(143)
    grader = _worker_grader(grader_class, course, assignment, device, seed, jobs)
    try:
        return grader.grade_and_stage(student, folder, force=force)[1]
    finally:
        if stopping():  # SIGTERM came during the grade, which has unwound (its folders removed, its children
            os._exit(143)  # stopped): the pool's loop would take the SystemExit as the task's result and wait on
            # for a next student, for ever where the run was killed (kill -9: nobody sends one, nobody reaps it)


def start_workers(slots, warm_cfg=None, grader=None):
    """One spawned worker process per slot (a ProcessPoolExecutor of one each), started now. warm_cfg: the grading
    config whose kernels a GPU worker compiles while it waits for its first student (None: none); grader: the
    arguments of the class grader each worker makes at once (_worker_grader; None: at its first student)."""
    ctx = multiprocessing.get_context("spawn")
    return [concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx, initializer=_init_worker,
                                                   initargs=(env, warm_cfg, grader)) for _, env in slots]


def run_pool(grader, gb, todo, slots, jobs, pools, bar):
    """Grade `todo` on the workers `pools` (one per slot; a dead one is replaced in the list, by the grader's
    start_workers); `grader` (this process) stores each result as it comes. Returns (graded, [(student, why)])."""
    threading.Thread(target=feedback.load_plotting, daemon=True).start()  # ready for the summary: it is idle now
    pending, running, failed, done = collections.deque(todo), {}, [], 0
    folders = dict(todo)

    def feed(i):
        if pending:
            student, folder = pending.popleft()
            fut = pools[i].submit(_grade_in_worker, type(grader), grader.course, grader.assignment, grader.device,
                                  grader.seed, jobs, grader.force, student, folder)
            running[fut] = (i, student)
    for i in range(len(pools)):
        feed(i)
    while running:
        finished, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
        for fut in finished:
            i, student = running.pop(fut)
            graded, staged = False, None
            try:
                staged, graded = fut.result(), True
            except concurrent.futures.process.BrokenProcessPool:
                failed.append((student, f"the worker on {slots[i][0]} died"))
                pools[i].shutdown(wait=False)
                pools[i] = grader.start_workers([slots[i]], jobs)[0]
            except Exception as exc:  # one student's failure does not stop the class
                failed.append((student, f"{type(exc).__name__}: {exc}"))
            feed(i)  # the worker's next student first: its GPU does not wait while this process stores
            if graded:
                if staged:
                    grader.collect_one(gb, student, folders[student], staged)
                    grader.write_csv(grader.rows())
                done += 1
            bar.update(1)
            bar.set_postfix_str(f"{student} ({slots[i][0]})")
    return done, failed
