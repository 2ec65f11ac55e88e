"""Notebook side: the self-check's plot: the data-reuse figures in the simulator, the kernel's timings on a GPU.

A part of _Run (run.py); autograder/figures.py draws the figures. Nothing here grades.
"""
from .. import figures
from ..builder import launches as L
from .explain import _explain

GPU_SIZES = (256, 512, 1024, 2048)     # square N of the timing plot on a GPU
GPU_REPEATS = 5                        # timed runs per kernel and size (the median counts)


class _Plot:
    """The plot of one self-check run, drawn from what its checks left in the run's report."""

    def timings(self):
        """Median milliseconds of the student's kernel and the references over GPU_SIZES."""
        np, cuda = self.np, self.cuda
        from ..runner.references import REFERENCES
        refs = ["naive_coalesced"] + (["transposed_unpadded"] if self.stage.padded_b else [])
        rows = {"yours": []}
        rows.update({r: [] for r in refs})
        sizes = [n for n in GPU_SIZES if not self.stage.square_tiles_only or n % (self.tile or 16) == 0]
        start, end = cuda.event(), cuda.event()
        for n in sizes:
            A, B, dA, dB = self.inputs(n, n, n)
            dC = cuda.device_array((n, n), np.float32)
            recorded = L.record_launches(self.module, self.stage.launcher, dA, dB, dC)
            L.validate(recorded, self.stage.kernel, dA, dB, dC)
            runs = {"yours": lambda: L.replay(recorded)}
            runs.update({r: (lambda f=REFERENCES[r]: f(dA, dB, dC)) for r in refs})
            for name, run in runs.items():
                run()
                cuda.synchronize()
                samples = []
                for _ in range(GPU_REPEATS):
                    start.record()
                    run()
                    end.record()
                    end.synchronize()
                    samples.append(cuda.event_elapsed_time(start, end))
                rows[name].append(float(np.median(samples)))
        return {"sizes": sizes, "ms": rows, "repeats": GPU_REPEATS}

    def plot(self):
        try:
            import matplotlib
            import matplotlib.pyplot as plt
        except ImportError:
            print("(matplotlib is not installed: no plot)")
            return
        if self.sim:
            fig = figures.reuse_figure(plt, self.stage, self.tile, self.report.figures.get("instruments"))
        else:
            try:
                self.report.figures["timings"] = timings = self.timings()
            except Exception as exc:
                print("timing plot not drawn: " + _explain(exc, self.files))
                return
            fig = figures.timing_figure(plt, self.stage, timings)
        if fig is None:
            return
        try:
            from IPython.display import display
            display(fig)
        except ImportError:
            if matplotlib.get_backend().lower() != "agg":
                plt.show()
        plt.close(fig)
