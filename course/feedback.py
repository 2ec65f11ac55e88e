"""What `make grade` shows: a feedback page per student, and the class summary.

Everything here reads the per-student results (Gradescope-shaped results.json
plus the ``extra_data["course"]`` record written by course.grade_class), so a
page or the summary can be rebuilt from the stored results alone.
"""
import base64
import datetime
import html
import io
import re

from autograder.grammar import CONTRACT
from autograder.stages import STAGES

from . import fence, printable

STATUS = {"passed": ("PASS", "#1a7f37"), "failed": ("FAIL", "#cf222e"), "skipped": ("NOT RUN", "#6e7781")}
REUSE = re.compile(r"every loaded element is used ([\d.]+) times.*?at least ([\d.]+)", re.S)
LABELS = {"shortcuts": "kernel module grammar", "compiles": "compile"}  # a check's short name in a comment
SPEEDUP = re.compile(r": ([\d.]+)x \(needs ([\d.]+)x")


def course_record(student, assignment, cfg, stage_scores, sub_hash="", problems=(), **extra):
    """The ``extra_data["course"]`` record `page` reads: the one builder of `make grade` and the classroom tools."""
    from autograder.config import stage_max
    maxima = stage_max(cfg)
    return {"student": student, "assignment": assignment, "submission_sha256": sub_hash,
            "stage_scores": stage_scores, "gradebook_max": maxima, "gradebook_total": sum(maxima.values()),
            "problems": list(problems),
            "graded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), **extra}


def checks_of(results):
    """[(stage, key, status, name, score, max, output)] of a results dict (the real status, not Gradescope's)."""
    rows = []
    for t in results.get("tests", []):
        stage, key, status = (t.get("tags") or ["", "", t.get("status", "failed")])[:3]
        name = t["name"].split(": ", 1)[1] if t["name"].startswith("stage ") else t["name"]
        rows.append((stage, key, status, name, t["score"], t["max_score"], t.get("output", "")))
    return rows


def stage_maxima(results):
    """{stage: the points this run's tier could give} (a simulator run's speed checks are worth 0 in it)."""
    maxima = {}
    for stage, _key, _status, _name, _got, max_score, _out in checks_of(results):
        maxima[stage] = maxima.get(stage, 0.0) + max_score
    return maxima


def stage_points(results, stage):
    """'8 / 8' in the GPU tier's units, with the tier said where it has fewer points than the gradebook's."""
    course = results["extra_data"]["course"]
    got, full = course["stage_scores"].get(stage, 0.0), course["gradebook_max"][stage]
    tier = stage_maxima(results).get(stage, full)
    if results["extra_data"].get("device") == "gpu" or tier == full:
        return f"{got:g} / {full:g}"
    return f"{got:g} / {tier:g} in the simulator; {full:g} with a GPU"


BELOW = " (the likely cause is below)"


ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.")


def _shorten(line, width):
    """`line` in at most `width` characters, cut after a whole sentence where one fits."""
    if len(line) <= width:
        return line
    ends = [m.start() for m in re.finditer(r"\. ", line[:width - 3])
            if not line[:m.start() + 1].lower().endswith(ABBREVIATIONS)]   # "e.g. " ends no sentence
    end = ends[-1] if ends else -1
    return line[:end + 1] if end > width // 3 else line[: width - 3] + "..."


def _reason(output, width=220):
    """The first line of a check's message, with its likely cause where the message gives one further down (a
    comment has no "below")."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()] or ["no reason given"]
    line = lines[0] if not lines[0].endswith(":") or len(lines) < 2 else f"{lines[0]} {lines[1]}"
    cause = next((ln for ln in lines[1:] if ln.startswith("Likely cause:")), "")
    if cause and cause not in line:
        return _shorten(line.replace(BELOW, ""), width) + " " + _shorten(cause, width + 80)
    return _shorten(line.replace(BELOW, ""), width)


def code_span(text):
    """A student's text (a file name, a check's first line, which may quote an exception) as a markdown code span,
    on one line: nbgrader's feedback page renders a score cell's comment as markdown, HTML and links included, and
    formgrader's comment box shows it as typed. The fence is longer than any run of backticks in the text."""
    text = printable(text, lines=False)
    marks = fence(text)
    return f"{marks} {text} {marks}"


def stage_comments(results):
    """{stage: comment}: why each lost point was lost, one line per reason, for the score cell's comment in
    nbgrader's gradebook (formgrader shows it beside the score; nbgrader's feedback prints it)."""
    comments = {}
    course = results["extra_data"]["course"]
    student, assignment = course.get("student", "<student>"), course.get("assignment", "<assignment>")
    where, page_path = f"submitted/{student}/{assignment}/", f"feedback/{student}/{assignment}/index.html"
    for stage in STAGES:
        rows = [r for r in checks_of(results) if r[0] == stage.name]
        if not rows:
            continue
        failed = [(key, name, output) for _, key, status, name, _g, _m, output in rows if status == "failed"]
        zeroed = [output for key, _name, output in failed if key == "shortcuts"]
        if zeroed:  # the grammar zeroed the stage: its finding is the one reason, the other checks did not run
            failed = [("shortcuts", "kernel module grammar", zeroed[0])]
        reasons = {}
        for key, name, output in failed:
            reasons.setdefault(_reason(output), []).append(name if key == "correct" else LABELS.get(key, key.replace("_", " ")))
        head = f"make grade: {stage_points(results, stage.name)}."
        if not reasons:
            lines = [head + " Every check passed."]
        elif len(reasons) == 1 and len(failed) > 1:
            lines = [head, f"Failed ({len(failed)} checks): {code_span(next(iter(reasons)))}"]
        else:
            lines = [head] + [f"Failed {', '.join(dict.fromkeys(names))}: {code_span(why)}"
                              for why, names in reasons.items()]
        graded = (results["extra_data"].get("files") or {}).get(stage.name)
        if graded and graded != f"{stage.module}.ipynb":
            lines.insert(1, f"File graded: {code_span(where + graded)} (shown under the released name "
                            f"{stage.module}.ipynb).")
        if any(status == "skipped" for _, _k, status, *_ in rows):
            lines.append("Speed not timed here (no GPU): this grade is provisional.")
        lines.append(f"The feedback page {code_span(page_path)} has each check's full message.")
        comments[stage.name] = "\n".join(lines)
    return comments


def _png(fig):
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def stage_figure(results):
    """PNG (base64) of the points per stage, plus data reuse (simulator) or speed-ups (GPU) where reported."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    course = results["extra_data"]["course"]
    rows = checks_of(results)
    extra = {}
    for stage, key, status, name, score, max_score, output in rows:
        m = REUSE.search(output) if key == "data_reuse" else SPEEDUP.search(output) if key == "speed" else None
        if m:
            extra[stage] = [float(v) for v in m.groups()]
    panels = 2 if extra else 1
    fig, axes = plt.subplots(1, panels, figsize=(5.4 * panels, 3.2), squeeze=False)
    ax = axes[0][0]
    names = [s.name for s in STAGES]
    full = [course["gradebook_max"][n] for n in names]
    got = [course["stage_scores"].get(n, 0.0) for n in names]
    ax.bar(names, full, color="#e5e7eb", label="stage total (GPU tier)")
    ax.bar(names, got, color="#2563eb", label="your points")
    ax.set_ylabel("points")
    ax.set_title("Points per stage")
    ax.tick_params(axis="x", labelrotation=20)
    ax.legend(fontsize=8)
    if extra:
        ax = axes[0][1]
        stages = list(extra)
        gpu = results["extra_data"]["device"] == "gpu"
        ax.bar(stages, [extra[s][0] for s in stages], color="#7c3aed" if gpu else "#059669", width=0.5)
        ax.scatter(stages, [extra[s][1] for s in stages], color="k", marker="_", s=600, label="needed")
        ax.set_ylabel("speed-up over the reference" if gpu else "uses of each loaded element")
        ax.set_title("Speed (GPU, same run)" if gpu else "Data reuse (simulator load counter)")
        ax.set_xlim(-0.75, len(stages) - 0.25)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return _png(fig)


def page(student, assignment, results):
    """The feedback page of one student: what passed, what failed and why, and the figure."""
    course = results["extra_data"]["course"]
    e = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(assignment)}: {e(student)}</title>",
             "<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
             "table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem;"
             "vertical-align:top;text-align:left}pre{white-space:pre-wrap;margin:.2rem 0;font-size:.85rem}"
             ".tag{font-weight:bold}</style></head><body>",
             f"<h1>{e(assignment)}: feedback for {e(student)}</h1>",
             f"<p><b>{results['score']:g} points</b> of {results['max_score']:g} graded in this run "
             f"({course['gradebook_total']:g} in the full GPU tier). {e(summary_without_notes(results))}</p>"]
    parts += overridden(results)
    for note in results["extra_data"].get("notes", []):
        parts.append(f"<p><b>Note:</b> {e(note)}</p>")
    for problem in course.get("problems", []):
        parts.append(f"<p style='color:#cf222e'><b>Not gradable:</b> {e(problem)}</p>")
    if results.get("tests"):
        parts.append(f"<img alt='points per stage' src='data:image/png;base64,{stage_figure(results)}'>")
    for stage in STAGES:
        rows = [r for r in checks_of(results) if r[0] == stage.name]
        if not rows:
            continue
        parts.append(f"<h2>Stage {stage.number}: {e(stage.title)} ({e(stage_points(results, stage.name))})</h2>")
        graded = (results["extra_data"].get("files") or {}).get(stage.name)
        if graded:
            parts.append(f"<p>File graded: <code>{e(graded)}</code></p>")
        parts.append("<table><tr><th>result</th><th>points</th><th>check and why</th></tr>")
        for _, key, status, name, got, max_score, output in rows:
            label, color = STATUS.get(status, STATUS["failed"])
            parts.append(f"<tr><td class='tag' style='color:{color}'>{label}</td><td>{got:g} / {max_score:g}</td>"
                         f"<td>{e(name)}<pre>{e(output)}</pre></td></tr>")
        parts.append("</table>")
    tripped = any(key == "shortcuts" and status == "failed" for _, key, status, *_ in checks_of(results))
    parts.append(f"<details{' open' if tripped else ''}><summary>What a kernel module may contain (a stage "
                 "whose module holds anything else scores 0)</summary><table><tr><th>a kernel module may hold"
                 "</th><th>for example</th></tr>"
                 + "".join(f"<tr><td>{e(rule)}</td><td><code>{e(example)}</code></td></tr>"
                           for rule, example in CONTRACT) + "</table></details>")
    parts.append(f"<p><small>Graded {e(course['graded_at'])} on the "
                 f"{'GPU' if results['extra_data']['device'] == 'gpu' else 'CUDA simulator'} in "
                 f"{results['execution_time']:g} s; submission {e(course['submission_sha256'][:12])}.</small></p>"
                 "</body></html>")
    return "\n".join(parts)


def summary_without_notes(results):
    """The grade's summary line less its notes: the page shows each note once, as a paragraph of its own."""
    text = results["output"]
    for note in results["extra_data"].get("notes", []):
        text = text.replace("\nNote: " + note, "", 1)
    return text


def overridden(results):
    """The page's paragraphs on the scores a TA set by hand in formgrader (they stand over make grade's, as in the
    gradebook): both numbers per stage, and the total that counts."""
    overrides = results["extra_data"]["course"].get("overrides") or {}
    if not overrides:
        return []
    e = html.escape
    total = results["extra_data"]["course"].get("auto_score", results["score"]) + sum(
        o["manual"] - o["auto"] for o in overrides.values())
    parts = [f"<p><b>Your grade is {total:g} points:</b> your instructor set "
             f"{'a score' if len(overrides) == 1 else 'scores'} by hand, which count instead of make grade's:</p><ul>"]
    for stage, o in overrides.items():
        line = f"stage {stage}: {o['manual']:g} points set by hand (make grade's score: {o['auto']:g})"
        if o.get("regraded"):
            line += (f"; your submission was graded again since (make grade's score {o['regraded'][0]:g}, now "
                     f"{o['regraded'][1]:g}) and the score set by hand still stands")
        parts.append(f"<li>{e(line)}</li>")
    return parts + ["</ul>"]


def needs_a_look(results, width=72):
    """One short note of what in a student's results an instructor should look at (empty when nothing): a stage the
    kernel-module grammar zeroed (and for what), a time limit, a syntax error, a kernel the GPU compiler rejects, the
    course's problems (a missing notebook or cell, a second file of a stage). Stages not started yet are not news."""
    items = list(results["extra_data"]["course"].get("problems", [])) + list(results["extra_data"].get("notes", []))
    for t in results.get("tests", []):
        if t.get("status") != "failed":
            continue
        stage, key, out = (t.get("tags") or ["?", "?"])[0], (t.get("tags") or ["?", "?"])[1], t.get("output", "")
        if key == "shortcuts":
            finding = next((ln.strip() for ln in out.splitlines() if ln.strip().startswith("line ")), "")
            what = finding.split(": ", 2)[1] if finding.count(": ") >= 1 else "the grammar"
            items.append(f"{stage} zeroed ({what})")
        elif out.startswith("not gradable: the check did not finish"):
            items.append(f"{stage}: time limit")
        elif key == "compiles" and out.startswith("syntax error"):
            items.append(f"{stage}: syntax error")
        elif key == "compiles" and out.startswith("the GPU compiler rejected"):
            items.append(f"{stage}: does not compile")
    note = "; ".join(dict.fromkeys(items))
    return note if width is None or len(note) <= width else note[: width - 3] + "..."


def summary_table(rows):
    """Text table: one line per student with per-stage points and the total."""
    names = [s.name for s in STAGES]
    head = ["student"] + names + ["total", "of", "note"]
    body = [[r["student"]] + [f"{r['stages'].get(n, 0):g}" for n in names]
            + [f"{r['score']:g}", f"{r['max_score']:g}", r["note"]] for r in rows]
    body = [[printable(c, lines=False) for c in b] for b in body]  # a student's names and notes: one line each
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(b) for b in body])


def histogram_text(scores, max_score, bins=5):
    """A text histogram of total scores in `bins` equal ranges of 0..max_score."""
    if not scores or not max_score:
        return "(no scores)"
    counts = [0] * bins
    for s in scores:
        counts[min(bins - 1, int(bins * s / max_score))] += 1
    lines = []
    for i, c in enumerate(counts):
        lo, hi = max_score * i / bins, max_score * (i + 1) / bins
        lines.append(f"{lo:5.1f} - {hi:5.1f} {'] ' if i == bins - 1 else ') '}{'#' * c} {c}")
    return "\n".join(lines)


def load_plotting():
    """Import matplotlib (a second or more) ahead of histogram_png, in a thread while a class is graded."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401


def histogram_png(path, scores, max_score, bins=5):
    load_plotting()
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.hist(scores, bins=bins, range=(0, max_score or 1), color="#2563eb", edgecolor="white")
    ax.set_xlabel(f"total points (of {max_score:g} graded)")
    ax.set_ylabel("students")
    from matplotlib.ticker import MaxNLocator
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # whole students, never 0.5 of one
    ax.set_title("Class histogram")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    ticks = [float(t) for t in ax.get_yticks()]
    plt.close(fig)
    return ticks  # the y ticks drawn (whole students)


TIME_PARTS = (("compile_s", "compiling"), ("checks_s", "running the checks"), ("speed_s", "timing on the GPU"))


def timing_summary(rows):
    """One line an instructor reads: the median time a submission took to grade, and where it went (compiling, the
    checks, the GPU timing), from the engine's breakdown (results.json extra_data["timing"]); "" when no submission
    has one."""
    import statistics

    def median(key):
        values = [r["timing"][key] for r in rows if isinstance((r.get("timing") or {}).get(key), (int, float))
                  and not isinstance(r["timing"][key], bool)]
        return statistics.median(values) if values else None
    total = median("total_s")
    if total is None:
        return ""
    n = sum(1 for r in rows if isinstance((r.get("timing") or {}).get("total_s"), (int, float)))
    parts = [f"{median(k):.1f} s {what}" for k, what in TIME_PARTS if median(k) is not None]
    return (f"A submission took {total:.1f} s to grade (median of {n} submission{'s' if n != 1 else ''})"
            + (f": {', '.join(parts)}" if parts else "") + ".")
