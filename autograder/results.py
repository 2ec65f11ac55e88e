"""Write a Report as Gradescope results.json and as a readable summary."""
import json
import os
import tempfile


def to_gradescope(report):
    tests = [{"name": f"stage {c.stage}: {c.name}", "score": round(c.score, 4), "max_score": round(c.max_score, 4),
              "status": c.status if c.status != "skipped" else "passed", "output": c.output,
              "visibility": "visible", "tags": [c.stage, c.key, c.status]} for c in report.checks]
    summary = f"Graded on the {'GPU' if report.device == 'gpu' else 'CUDA simulator (no GPU)'} in {report.seconds:.1f} s."
    if report.provisional:
        summary += (" PROVISIONAL: some checks (speed, GPU tools) were not run here and count neither way;"
                    " the final grade comes from the GPU tier.")
    out = {"score": round(report.score, 4), "max_score": round(report.max_score, 4), "output": summary,
           "execution_time": round(report.seconds, 2), "visibility": "visible", "stdout_visibility": "hidden",
           "tests": tests, "extra_data": {"device": report.device, "provisional": report.provisional,
                                          "sandbox": report.sandbox,
                                          "stages": report.stages}}
    if report.leaderboard:
        board = report.leaderboard[0]
        out["leaderboard"] = [{"name": "TFLOP/s at N=%d" % board["n"], "value": round(board["tflops"], 3)}]
        if "percent_of_cublas" in board:
            out["leaderboard"].append({"name": "% of cuBLAS", "value": round(board["percent_of_cublas"], 1)})
    return out


def write_json_atomic(path, data):
    """Write JSON so a reader never sees a half-written file."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


MARK = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP"}


def summary(report):
    lines = [f"{report.submission}: {report.score:g} / {report.max_score:g} points "
             f"({'GPU' if report.device == 'gpu' else 'simulator'}, {report.seconds:.1f} s, seed {report.seed})"]
    for c in report.checks:
        lines.append(f"  {MARK[c.status]}  {c.score:4g}/{c.max_score:<4g} stage {c.stage}: {c.name}")
        if c.status != "passed":
            lines.extend("          " + ln for ln in c.output.splitlines()[:12])
    if report.provisional:
        lines.append("  Provisional: checks marked SKIP need a GPU and count neither way.")
    return "\n".join(lines)
