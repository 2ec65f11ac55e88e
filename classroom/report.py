"""One grading run's results.json, turned into what GitHub shows: Classroom points, a job summary, a page.

- ``to_classroom``: the result of one GitHub Classroom "runner" step, the JSON
  that classroom-resources/autograding-grading-reporter reads (base64 in the
  step output ``result``; ``encode`` makes that string).
- ``job_summary``: Markdown for ``$GITHUB_STEP_SUMMARY``: the points per stage
  and a table of every check, failures explained.
- ``feedback_page``: the course's feedback page (course.feedback) for one run.

Each reads only the Gradescope-shaped results.json that ``python -m autograder
grade`` writes (autograder/engine/report.py); a check's real status (passed, failed,
skipped) is the third of its tags.
"""
import base64
import html
import json

from autograder.stages import STAGES

RUNNER_ID = "matmul"    # the workflow's grading step id: the reporter reads env MATMUL_RESULTS
MESSAGE_CHARS = 2000    # longest check message passed to Classroom
MARK = {"passed": "✅ pass", "failed": "❌ fail", "skipped": "⏭️ not run"}


def checks(results):
    """[(stage, key, status, name, score, max_score, output)] of a results dict, status as the engine saw it."""
    rows = []
    for t in results.get("tests", []):
        tags = list(t.get("tags") or [])
        stage, key, status = tags[:3] if len(tags) >= 3 else ("", "", t.get("status", "failed"))
        name = t["name"].split(": ", 1)[1] if t["name"].startswith("stage ") and ": " in t["name"] else t["name"]
        rows.append((stage, key, status, name, float(t.get("score", 0)), float(t.get("max_score", 0)),
                     t.get("output", "")))
    return rows


def is_gpu(results):
    return results.get("extra_data", {}).get("device") == "gpu"


def is_provisional(results):
    return bool(results.get("extra_data", {}).get("provisional", not is_gpu(results)))


def stage_points(results):
    """{stage: (score, max_score)} in the order of the course's stages."""
    got = {}
    for stage, _, _, _, score, max_score, _ in checks(results):
        s, m = got.get(stage, (0.0, 0.0))
        got[stage] = (s + score, m + max_score)
    order = [s.name for s in STAGES if s.name in got] + [s for s in got if s not in {x.name for x in STAGES}]
    return {s: got[s] for s in order}


def _fmt(x):
    return f"{round(x, 4):g}"


# ----------------------------------------------------------------------------
# GitHub Classroom


def to_classroom(results, files=None):
    """The Classroom runner result: {"version": 1, "status", "max_score", "tests": [...]}.

    One test per check of the engine. A check that was not run (speed in the
    simulator) is worth 0 of 0 and shows as passed with "(not run)" before its
    name. ``status`` is "pass" when every check passed, "fail" otherwise, and
    "error" when grading did not finish (``extra_data.error`` or no checks).
    ``files``: {stage: the student's file graded for it}: each test's filename, and
    its test_code is the command that grades that file alone."""
    files = files or {}
    device = results.get("extra_data", {}).get("device", "sim")
    tests = []
    for stage, _, status, name, score, max_score, output in checks(results):
        label = f"stage {stage}: {name}" if stage else name
        if status == "skipped":
            label = "(not run) " + label
        message = output if len(output) <= MESSAGE_CHARS else output[:MESSAGE_CHARS] + "\n[... cut]"
        tests.append({"name": label, "status": "fail" if status == "failed" else "pass",
                      "score": round(score, 4), "max_score": round(max_score, 4), "message": message,
                      "test_code": (f"python -m autograder grade {files[stage]} --stage {stage} --device {device}"
                                    if files.get(stage) else ""),
                      "filename": files.get(stage, ""), "line_no": 0,
                      "execution_time": ""})
    error = results.get("extra_data", {}).get("error")
    if error or not tests:
        status = "error"
    else:
        status = "pass" if all(t["status"] == "pass" for t in tests) else "fail"
    if error:
        tests.append({"name": "grading finished", "status": "fail", "score": 0, "max_score": 0,
                      "message": str(error), "test_code": "", "filename": "", "line_no": 0,
                      "execution_time": ""})
    return {"version": 1, "status": status, "max_score": round(float(results.get("max_score", 0)), 4),
            "tests": tests}


def encode(payload):
    """The step output value: base64 of the compact JSON (what the reporter decodes)."""
    return base64.b64encode(json.dumps(payload, separators=(",", ":")).encode("utf-8")).decode("ascii")


def decode(value):
    return json.loads(base64.b64decode(value).decode("utf-8"))


# ----------------------------------------------------------------------------
# Job summary (Markdown)


def _cell(text):
    """Text safe in one Markdown table cell: HTML escaped, no link syntax, pipes escaped, one line."""
    return (html.escape(str(text), quote=False).replace("[", "&#91;").replace("]", "&#93;").replace("|", "\\|")
            .replace("\r", "").replace("\n", "<br>"))


def job_summary(results, graded=None, title="Matrix multiplication autograder"):
    """Markdown: total, provisional note, points per stage, every check, why the failed ones failed."""
    graded = graded or {}
    gpu = is_gpu(results)
    tier = "GPU tier" if gpu else "CUDA simulator tier"
    lines = [f"## {_cell(title)}: {_fmt(results.get('score', 0))} / {_fmt(results.get('max_score', 0))} points "
             f"({tier}{', PROVISIONAL' if is_provisional(results) else ''})", ""]
    if is_provisional(results):
        lines += ["> **PROVISIONAL.** The simulator cannot time kernels or run the GPU tools: those checks are "
                  "shown as not run and count neither way. The grade comes from the GPU tier.", ""]
    error = results.get("extra_data", {}).get("error")
    if error:
        lines += [f"> **Grading did not finish:** {_cell(error)}", ""]
    lines += [f"Graded on the {'GPU' if gpu else 'CUDA simulator'} in {_fmt(results.get('execution_time', 0))} s.", ""]
    points = stage_points(results)
    if points:
        lines += ["| stage | graded file | points |", "|---|---|---|"]
        lines += [f"| {_cell(s)} | {_cell(graded.get(s, ''))} | {_fmt(got)} / {_fmt(most)} |"
                  for s, (got, most) in points.items()]
        lines.append("")
        lines += ["| result | stage | check | points |", "|---|---|---|---|"]
        for stage, _, status, name, score, max_score, _ in checks(results):
            lines.append(f"| {MARK.get(status, MARK['failed'])} | {_cell(stage)} | {_cell(name)} | "
                         f"{_fmt(score)} / {_fmt(max_score)} |")
        lines.append("")
    failed = [r for r in checks(results) if r[2] == "failed"]
    for stage, _, _, name, _, _, output in failed:
        text = output if len(output) <= MESSAGE_CHARS else output[:MESSAGE_CHARS] + "\n[... cut]"
        lines += [f"<details><summary>❌ stage {_cell(stage)}: {_cell(name)}</summary>", "", "<pre>",
                  html.escape(text), "</pre>", "</details>", ""]
    for board in results.get("leaderboard", []):
        lines.append(f"- leaderboard: {_cell(board['name'])} = {_cell(board['value'])}")
    return "\n".join(lines).rstrip() + "\n"


# ----------------------------------------------------------------------------
# Feedback page (HTML)


def course_record(results, student, assignment, cfg, sub_hash=""):
    """The ``extra_data["course"]`` record course.feedback.page reads (as course.grade_class writes it)."""
    from course.feedback import course_record as record
    error = results.get("extra_data", {}).get("error")
    return record(student, assignment, cfg, {s: got for s, (got, _) in stage_points(results).items()}, sub_hash,
                  [str(error)] if error else [])


def feedback_page(results, student, assignment, cfg, sub_hash=""):
    """The course's feedback page (course.feedback.page) for this run; results are not modified."""
    from course import feedback
    data = json.loads(json.dumps(results))
    data.setdefault("extra_data", {})["course"] = course_record(results, student, assignment, cfg, sub_hash)
    return feedback.page(student, assignment, data)


def plain_page(results, student, assignment, why=""):
    """A page without figures, for when the course's page cannot be made (``why`` says so on the page)."""
    e = html.escape
    rows = "".join(f"<tr><td>{e(MARK.get(status, MARK['failed']))}</td><td>{e(stage)}</td><td>{e(name)}"
                   f"<pre>{e(output)}</pre></td><td>{_fmt(score)} / {_fmt(most)}</td></tr>"
                   for stage, _, status, name, score, most, output in checks(results))
    note = f"<p><small>{e(why)}</small></p>" if why else ""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(assignment)}: {e(student)}</title></head>"
            f"<body><h1>{e(assignment)}: feedback for {e(student)}</h1><p><b>{_fmt(results.get('score', 0))} "
            f"points</b> of {_fmt(results.get('max_score', 0))}. {e(results.get('output', ''))}</p>{note}"
            f"<table><tr><th>result</th><th>stage</th><th>check and why</th><th>points</th></tr>{rows}</table>"
            "</body></html>\n")
