"""tools/profile_grade.py --parent-cpu: the grading process's own CPU, charged to the grader's function each thread
was in (a class worker spends 13-14 CPU s a grade on a GPU host; BENCHMARKS.md)."""
import threading
import time

from autograder.checks import speed
from tools.profile_grade import ParentCpu


def test_a_thread_busy_in_a_grader_function_is_charged_to_it_and_a_waiting_one_to_nothing():
    import numpy as np
    X = np.ones((512, 2))
    stop, used = threading.Event(), []

    def busy():
        began = time.thread_time()
        while not stop.is_set():
            speed.expected_projection(512, 1, 2, X)
        used.append(time.thread_time() - began)
    waiter = threading.Thread(target=stop.wait)
    with ParentCpu(every=0.02) as sampler:
        workers = [threading.Thread(target=busy), waiter]
        for t in workers:
            t.start()
        time.sleep(1.0)
        stop.set()
        for t in workers:
            t.join()
    charged = {}   # by the grader's function, whatever the innermost frame (one function has several)
    for where, s in sampler.spent.items():
        charged[where.split(" <- ")[0]] = charged.get(where.split(" <- ")[0], 0.0) + s
    ours = sum(s for where, s in charged.items()
               if where.startswith(("autograder/protocol.py:", "autograder/checks/speed.py:")))
    # the busy thread's own CPU, within the clock's ticks; the waiting thread adds nothing
    assert 0.5 * used[0] - 0.05 <= ours <= sum(charged.values()) <= used[0] + 0.1, (used, sampler.table())
    assert used[0] > 0.1 and "| CPU s |" in sampler.table()
