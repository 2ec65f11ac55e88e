"""Simulator side (beside student code): run the build's checked plans in Numba's simulator. The kernels are looked up
by name in the module; the launcher never runs here (the build child alone called it), so what the simulator runs is
the program the build compiled."""
from autograder.builder.launches import replay
from autograder.protocol import LaunchError


class SimPlanLaunches:
    """The simulator's launches: the parent's checked plan of each shape (recorded by the build child, which alone
    ever calls the launcher), with each kernel looked up by its name in the module. What the simulator runs is what
    the build compiled: the same kernels, grids, blocks and arguments."""

    def __init__(self, job, module):
        from autograder.numba_objects import is_cuda_kernel, is_device_function
        self.plans, self.kernels = job["plans"], []
        for name in job["kernels"]:
            kernel = getattr(module, name, None)
            if not is_cuda_kernel(kernel) or is_device_function(kernel):
                raise RuntimeError(f"{name} is not a kernel of the module")
            self.kernels.append((name, kernel))

    def prepare(self, i, A, B, C):
        import numpy as np
        plan = self.plans[i]
        if "error" in plan:  # the launcher failed at this shape in the build child (or its plan was refused)
            raise LaunchError(plan["error"]["message"])
        operands = {"A": A, "B": B, "C": C}
        recorded = []
        for item in plan["launches"]:
            name, kernel = self.kernels[item["kernel"]]
            args = tuple(operands[a] if isinstance(a, str) else
                         (bool(a["value"]) if a["type"] == "bool" else getattr(np, a["type"])(a["value"]))
                         for a in item["args"])
            recorded.append((name, kernel, (tuple(item["grid"]), tuple(item["block"]), 0, item["shared"]), args))
        return (lambda: replay(recorded)), len(recorded), recorded


def execute(job):
    """How the simulator child runs shape i's launches: instrumented (sim/instrument.py; `blocks_of[i]`, where the
    job has it, are the blocks of each launch a sampled run simulates), or with C's stores watched for lost updates
    (sim/writes.py)."""
    if job.get("instrument"):
        blocks_of = job.get("blocks_of") or []

        def instrumented(run, recorded, A, B, C, shape_facts, i):
            from autograder.sim.instrument import run_instrumented
            blocks = blocks_of[i] if i < len(blocks_of) else None  # None: every block runs
            shape_facts["instruments"] = run_instrumented(recorded, A, B, C, {**job, "blocks": blocks})
        return instrumented

    def tracked(run, recorded, A, B, C, shape_facts, i):
        from autograder.sim.writes import run_tracked
        run_tracked(run, C, job, shape_facts)  # stores to C by two threads (lost updates)
    return tracked


def speed_launches(job, module):
    """The timing task's student launches in the simulator (runner/timing.task_speed): `(plan, ops)` -> a callable
    that runs that plan on the operands, with the module's kernels looked up by name."""
    def launches(plan, ops):
        source = SimPlanLaunches({"plans": [{"launches": plan}], "kernels": job["kernel_names"]}, module)
        return source.prepare(0, ops.A, ops.B, ops.C)[0]
    return launches
