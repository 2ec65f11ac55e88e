"""Untrusted side: the grading child's entry point. Runs one check's work and reports raw facts.

Two kinds of child start here. A child that imports the student's module (every simulator-tier child, the PTX
compile, and in the GPU tier the build child alone, which runs without a GPU) runs beside student code. A GPU
runner (correctness, the GPU tools' runs, timing) never imports it: it loads the build child's PTX and
launches the plan the parent checked, so nothing it measures shares a process with student Python.

Started by the parent (autograder/sandbox) inside the sandbox as ``python -I
child/entry.py SCRATCH`` with the job as JSON on stdin. It loads the submission by
file path (its folder is never put on sys.path, so a shipped numpy.py or
sitecustomize.py is not imported), runs the task and writes the job's
``result_path``: raw output arrays plus a JSON ``facts`` record that carries
the parent's nonce.
It never scores anything: the parent compares, judges and scores.
"""
import json
import os
import sys
import time

SCRATCH = sys.argv[1] if __name__ == "__main__" else None


def load_student_module(path, name):
    """Import the file as the UTF-8 text the parent checked: compiled from a str, whose coding declaration Python
    ignores (an import from the file would decode it by its own declaration: other code than the grammar read)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    with open(path, encoding="utf-8") as f:
        code = compile(f.read(), path, "exec", dont_inherit=True)
    exec(code, module.__dict__)
    return module


def wait_for_turn(job):
    """A part of the child's work is done (the timing child: started, then prepared): say so on the parent's pipe,
    then wait for its "go" on stdin (the parent says it once the next part may run, the timing once the GPU is the
    grader's alone; it kills the child instead when the check must not run)."""
    fd = job.get("ready_fd")
    if fd is not None:
        os.write(fd, b"ready\n")  # sandbox.run.READY; the pipe stays open for the next wait
    if sys.stdin.readline().strip() != "go":
        os._exit(0)
    given = sys.stdin.readline()  # fields of the job given only now, with the "go" (sandbox.run_child's turn)
    if given.strip():
        job.update(json.loads(given))


def tell(job, word):
    """Tell the parent where the work is: b"b" as a shape begins, b"s" once its kernels are compiled and about to
    run. From each b"s" the child has only the seconds its work needs (sandbox.run_child's `work`: start-up is
    over); the parent counts the b's to know which shape a killed child was on."""
    fd = job.get("started_fd")
    if fd is not None:
        try:
            os.write(fd, word)
        except OSError:
            pass


def runner(job):
    """A GPU-tier child that measures: it gets kernels as PTX and a launch plan, and never imports student code."""
    return job["device"] == "gpu" and job["task"] in ("run", "speed", "speed_parts")


def main():
    begun = time.perf_counter()
    job = json.loads(sys.stdin.readline())
    tell(job, b"h")  # hello: the sandbox started this child (what goes wrong from here is not the sandbox's)
    nonce = job.pop("nonce")
    sys.path.insert(0, job["grader_root"])
    import warnings
    warnings.simplefilter("ignore")  # Numba performance warnings are not the student's failure
    if job["device"] == "sim":
        import threading
        threading.stack_size(1 << 20)  # without greenlet, 1024 threads' default 8 MiB stacks overrun RLIMIT_AS
        from autograder.sim.green import install as install_block_scheduler
        from autograder.sim.gpu_options import accept_gpu_options
        from autograder.sim.warp import install as install_warp_functions
        install_block_scheduler()  # a block's threads as greenlets, or a counting barrier (sim/green.py)
        accept_gpu_options()
        install_warp_functions()  # the warp functions numba's simulator lacks (sim/warp.py)
    import numpy as np
    from autograder.protocol import describe_error
    facts, arrays = {}, {}
    module = loaded = None
    started = time.perf_counter()
    try:
        if job["task"] == "warm":  # the grader's own kernels only: no student module
            from autograder.runner import timing
            facts, arrays = timing.task_warm(job)
        elif runner(job):  # a GPU-tier runner: launches the build child's checked plan, never the module
            if job["task"] == "run":
                from autograder.runner.run import wait_without_spinning
                wait_without_spinning()
        else:
            if job["device"] == "ptx":  # the build child, or the simulator tier's compile child: no GPU
                from autograder.builder.task import stand_in
                stand_in(job["cc"])
            module = load_student_module(job["module_path"], job["module"])
        loaded = time.perf_counter()
    except Exception as exc:
        from autograder.builder.task import compile_error_facts, compiler_error
        if job["device"] == "ptx" and compiler_error(exc):
            facts.update(compile_error_facts(exc))  # an explicit signature, compiled at import as on a GPU
        else:
            facts["import_error"] = describe_error(exc, job.get("module_path"))
    if module is not None or runner(job):
        try:
            if job["task"] == "run":
                from autograder.runner.run import PlanLaunches, task_run
                if module is None:  # a GPU runner: the plan from PTX
                    late = {}
                    if job.get("late"):  # started before its plan existed: the CUDA context first (gpu/tools.py)
                        from numba import cuda
                        began_late = time.perf_counter()
                        cuda.current_context()
                        if job.get("warm_up"):  # a profiler's set-up on its first kernel, while the plans are built
                            from autograder.runner.references import warm_up
                            try:
                                warm_up()
                            except Exception:  # then ncu's kernels do not add up: each stage is profiled alone
                                pass
                        late["context"] = time.perf_counter() - began_late
                        wait_for_turn(job)  # the kernels and plans come with the "go"
                        late["waited for plans"] = time.perf_counter() - began_late - late["context"]
                    began_load = time.perf_counter()
                    source, execute = PlanLaunches(job), None
                    late["kernels loaded"] = time.perf_counter() - began_load
                else:  # the simulator: the plan with the module's kernels
                    from autograder.sim.plans import SimPlanLaunches, execute
                    source, execute = SimPlanLaunches(job, module), execute(job)
                # the inputs are read only now: a runner started before its plan gets them with its "go"
                inputs = np.load(job["inputs_path"], allow_pickle=False)
                facts, arrays = task_run(job, source, inputs, lambda word: tell(job, word), execute)
                if module is None:  # where a GPU runner's seconds went (the parent's profile)
                    facts["clock_s"] = {**late, **{f"shape {i}": s.get("replay_s", 0.0)
                                                   for i, s in enumerate(facts["shapes"])}}
            elif job["task"] == "speed":
                from autograder.runner import timing
                launches = None
                if module is not None:  # the simulator: the plan with the module's kernels
                    from autograder.sim.plans import speed_launches
                    launches = speed_launches(job, module)
                facts, arrays = timing.task_speed(job, lambda: wait_for_turn(job), launches)
            elif job["task"] == "speed_parts":  # the grade's one timing child (engine/timing_together.py)
                from autograder.runner import timing
                facts, arrays = timing.task_speed_parts(job, lambda: wait_for_turn(job))
            elif job["task"] == "build":
                from autograder.builder.task import task_build
                facts, arrays = task_build(job, module)
            else:
                raise ValueError(f"unknown task {job['task']!r}")
        except Exception as exc:
            facts["task_error"] = describe_error(exc, job.get("module_path"))
    facts["nonce"] = nonce
    facts["seconds"] = time.perf_counter() - started
    import resource
    usage = resource.getrusage(resource.RUSAGE_SELF)
    facts["cpu_s"] = usage.ru_utime + usage.ru_stime  # every thread of this process, for the parent's profile
    # Where the child's own seconds went (the parent's profile): grader imports, the student module (numba's
    # import with it), the task.
    facts["phases"] = {"imports_s": started - begun, "module_s": (loaded if loaded is not None else
                                                                  time.perf_counter()) - started}
    facts["phases"]["task_s"] = facts["seconds"] - facts["phases"]["module_s"]
    with open(job["result_path"], "wb") as f:  # the one file the sandbox lets the child write
        np.savez(f, facts=np.array(json.dumps(facts)), **arrays)
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: student atexit hooks and finalizers do not run


if __name__ == "__main__":
    main()
