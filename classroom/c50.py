"""Classroom 50: the assignment's ``result.json``, its contract check, and the files for the config repository.

    python -P -m classroom.c50 grade --checkout DIR   grade the checkout (autograder.py runs this from the grader)
    python -m classroom.c50 validate RESULT_JSON  check a result.json against the contract
    python -m classroom.c50 build --release DIR [--out DIR] [--classroom NAME]   (``make release``)

Classroom 50 (github.com/foundation50/classroom50) grades in the student's
repository with GitHub Actions. Its runner runs ``autograder.py`` from the
assignment's bundle (``CLASSROOM/autograders/ASSIGNMENT/`` of the instructor's
``classroom50`` repository) with the student's checkout as working directory and
the submission's identity in the environment, then reads ``./result.json``.

``grade`` runs classroom.grade (the same picking rules and engine command as every
other way of grading here) into ``./grading/``, then writes:

- ``./result.json``: schema ``classroom50/result/v1``, one test per check of the
  engine with its points, plus a 0-point row that names the tier;
- ``./release-body.md``: the Release text (points per stage, every check, why the
  failed ones failed);
- ``status=`` and ``summary=`` into ``$GITHUB_OUTPUT``.

Points in result.json are whole numbers (the contract's ``score``/``max-score`` are
integers); a check's exact points stay in its row as ``points``.
"""
import argparse
import datetime
import json
import math
import os
import shutil
import sys

from autograder.engine.report import write_json_atomic, write_text_atomic
from autograder.gpu.tools import gpu_available
from autograder.repository import pick_files

from . import ROOT

SCHEMA = "classroom50/result/v1"
ASSIGNMENT_TYPES = ("individual", "group", "team")
IDENTITY = ("CLASSROOM", "ASSIGNMENT", "SUBMISSION_TAG", "COMMIT_URL", "RELEASE_URL")
MESSAGE_CHARS = 2000
HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "classroom50")          # autograder.py and the runtime blocks
OUT = os.path.join(ROOT, "build", "classroom50")
BUNDLE_LIMIT = 10 * 1024 * 1024                    # the runner refuses larger bundles


# ----------------------------------------------------------------------------
# results.json (the engine's report) -> result.json (Classroom 50's contract)


def whole(x):
    """Points as the contract's integer: exact when whole, else rounded down."""
    r = round(x)
    return int(r) if abs(x - r) < 1e-6 else int(math.floor(x))


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def tier_row(results):
    from .report import is_gpu, is_provisional
    if is_gpu(results):
        text = "graded on the GPU: real sizes, speed against reference kernels, compute-sanitizer, ncu"
    else:
        text = ("graded in the CUDA simulator: PROVISIONAL. Speed and the GPU tools were not run and count "
                "neither way; the grade comes from the GPU tier")
    return {"test-name": f"tier: {'GPU' if is_gpu(results) else 'simulator (provisional)'}", "passed": True,
            "score": 0, "max-score": 0, "message": text, "provisional": is_provisional(results)}


def to_result(results, env, files=None, when=None):
    """The result.json of one grading run: identity from Classroom 50's environment, one test per check."""
    from .report import checks
    files = files or {}
    tests = [tier_row(results)]
    for stage, key, status, name, score, max_score, output in checks(results):
        label = f"stage {stage}: {name}" if stage else name
        if status == "skipped":
            label = "(not run) " + label
        row = {"test-name": label, "passed": status != "failed", "score": whole(score), "max-score": whole(max_score),
               "stage": stage, "check": key, "status": status,
               "message": output if len(output) <= MESSAGE_CHARS else output[:MESSAGE_CHARS] + "\n[... cut]"}
        if files.get(stage):
            row["file"] = files[stage]
        if whole(score) != score or whole(max_score) != max_score:
            row["points"] = [score, max_score]
        tests.append(row)
    error = results.get("extra_data", {}).get("error")
    if error or len(tests) == 1:
        tests.append({"test-name": "grading finished", "passed": False, "score": 0, "max-score": 0,
                      "message": str(error or "the grading engine reported no checks")})
    owner = env.get("OWNER") or env.get("USERNAME") or ""
    return {"schema": SCHEMA, "classroom": env.get("CLASSROOM", ""), "assignment": env.get("ASSIGNMENT", ""),
            "assignment_type": env.get("ASSIGNMENT_TYPE") or "individual", "owner": owner,
            "submission": env.get("SUBMISSION_TAG", ""), "commit": env.get("COMMIT_URL", ""),
            "release": env.get("RELEASE_URL", ""), "review": env.get("REVIEW_URL") or env.get("COMMIT_URL", ""),
            "datetime": when or now_utc(),
            "score": sum(t["score"] for t in tests), "max-score": sum(t["max-score"] for t in tests),
            "tests": tests}


def status_and_summary(result):
    """The commit status and summary line Classroom 50 shows (success only when every test passed)."""
    tests = result["tests"]
    passed = sum(1 for t in tests if t["passed"])
    provisional = any(t.get("provisional") for t in tests)
    summary = (f"matmul: {result['score']}/{result['max-score']} ({passed}/{len(tests)} checks passed"
               f"{'; simulator tier, PROVISIONAL' if provisional else ''})")
    return ("success" if passed == len(tests) else "failure"), summary


# ----------------------------------------------------------------------------
# The contract, as the wiki's "Advanced Autograding" page documents it


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _is_utc_iso(text):
    if not isinstance(text, str) or not text.endswith("Z"):
        return False
    try:
        datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return False
    return True


def validate(result, classroom=None, assignment=None, owner=None, assignment_type=None):
    """Every way `result` breaks the result.json contract; [] when it holds.

    The fields and types of the wiki's table: ``schema`` exactly classroom50/result/v1;
    ``classroom``, ``assignment`` and ``owner`` strings matching the repository's identity
    when given; ``assignment_type`` individual or group (team too, which the runner
    knows); ``submission`` a submit/* tag; ``commit``, ``release``, ``review`` URLs;
    ``datetime`` (and ``graded_at`` when present) UTC ISO 8601; ``score`` and ``max-score``
    non-negative integers that are the sums over ``tests``; each test a ``test-name``, a
    boolean ``passed`` and integer ``score`` <= ``max-score``; ``submitted_by``, when
    present, an object with a ``username``."""
    if not isinstance(result, dict):
        return ["result.json is not a JSON object"]
    problems = []
    if result.get("schema") != SCHEMA:
        problems.append(f"schema is {result.get('schema')!r}, want {SCHEMA!r}")
    for field, want in (("classroom", classroom), ("assignment", assignment), ("owner", owner)):
        value = result.get(field)
        if not isinstance(value, str) or not value:
            problems.append(f"{field!r} must be a non-empty string")
        elif want is not None and value.lower() != want.lower():
            problems.append(f"{field!r} is {value!r}, want {want!r}")
    kind = result.get("assignment_type")
    if kind not in ASSIGNMENT_TYPES or (assignment_type is not None and kind != assignment_type):
        problems.append(f"'assignment_type' is {kind!r}, want {assignment_type or ' or '.join(ASSIGNMENT_TYPES)!r}")
    submission = result.get("submission")
    if not isinstance(submission, str) or not submission.startswith("submit/"):
        problems.append("'submission' must be a submit/* tag name")
    for field in ("commit", "release", "review"):
        value = result.get(field)
        if not isinstance(value, str) or not value.startswith(("https://", "http://")):
            problems.append(f"{field!r} must be a URL")
    if not _is_utc_iso(result.get("datetime")):
        problems.append("'datetime' must be UTC ISO 8601 (YYYY-MM-DDTHH:MM:SSZ)")
    if "graded_at" in result and not _is_utc_iso(result["graded_at"]):
        problems.append("'graded_at' must be UTC ISO 8601 when present")
    tests = result.get("tests")
    if not isinstance(tests, list):
        problems.append("'tests' must be a list")
        tests = []
    for i, t in enumerate(tests):
        if not isinstance(t, dict):
            problems.append(f"tests[{i}] is not an object")
            continue
        if not isinstance(t.get("test-name"), str) or not t["test-name"]:
            problems.append(f"tests[{i}].test-name must be a non-empty string")
        if not isinstance(t.get("passed"), bool):
            problems.append(f"tests[{i}].passed must be true or false")
        ts, tm = t.get("score"), t.get("max-score")
        if not (_is_int(ts) and ts >= 0 and _is_int(tm) and tm >= 0):
            problems.append(f"tests[{i}]: score and max-score must be non-negative integers")
        elif ts > tm:
            problems.append(f"tests[{i}]: score {ts} > max-score {tm}")
    score, max_score = result.get("score"), result.get("max-score")
    if not (_is_int(score) and score >= 0 and _is_int(max_score) and max_score >= 0):
        problems.append("'score' and 'max-score' must be non-negative integers")
    else:
        if score > max_score:
            problems.append(f"score {score} > max-score {max_score}")
        rows = [t for t in tests if isinstance(t, dict)]
        if all(_is_int(t.get("score")) and _is_int(t.get("max-score")) for t in rows):
            if score != sum(t["score"] for t in rows) or max_score != sum(t["max-score"] for t in rows):
                problems.append("'score' / 'max-score' are not the sums of the tests' score / max-score")
    by = result.get("submitted_by")
    if by is not None and not (isinstance(by, dict) and isinstance(by.get("username"), str) and by["username"]):
        problems.append("'submitted_by' must be an object with a non-empty 'username'")
    return problems


# ----------------------------------------------------------------------------
# grade: what autograder.py runs in the student's checkout


def _append(path, text):
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)


def device_from_env(env):
    device = (env.get("MATMUL_DEVICE") or "").strip()
    if device:
        if device not in ("gpu", "sim"):
            raise ValueError(f"MATMUL_DEVICE is {device!r}: use gpu or sim")
        return device
    return "gpu" if env.get("RUNNER_ENVIRONMENT") == "self-hosted" else "sim"


def grade_checkout(workspace=".", env=None):
    """Grade the checkout; write result.json, release-body.md, grading/; return the result dict."""
    from . import grade as grade_mod
    from . import report
    env = dict(os.environ if env is None else env)
    workspace = os.path.abspath(workspace)
    out = os.path.join(workspace, "grading")
    device = device_from_env(env)
    stages = grade_mod.parse_stages(env.get("MATMUL_STAGES", ""))
    student = env.get("OWNER") or env.get("USERNAME") or os.path.basename(workspace)
    # The runner writes the Summary page from release-body.md: keep classroom.grade's own step outputs out.
    saved = {k: os.environ.pop(k) for k in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY") if k in os.environ}
    try:
        results = grade_mod.grade(workspace, out, device, stages, student=student)
    finally:
        os.environ.update(saved)
    picked = pick_files(workspace, stages or _stages())
    files = {stage.name: rel for stage, _, rel, _ in picked}
    result = to_result(results, env, files)
    status, summary = status_and_summary(result)
    write_json_atomic(os.path.join(workspace, "result.json"), result)   # replaces a committed link, never follows it
    # as summary.md has it: the file graded and why another file of the stage was not ("... also defines stage ...")
    graded = {stage.name: " ".join(x for x in (rel, f"({note})" if note else "") if x)
              for stage, _, rel, note in picked if rel or note}
    body = report.job_summary(results, graded, title=f"{env.get('ASSIGNMENT') or 'matmul'}")
    write_text_atomic(os.path.join(workspace, "release-body.md"), body + f"\nStatus: {summary}\n")
    _append(env.get("GITHUB_OUTPUT"), f"status={status}\nsummary={summary}\n")
    print(summary)
    return result


def _stages():
    from autograder.stages import STAGES
    return STAGES


# ----------------------------------------------------------------------------
# build: the files for the instructor's classroom50 repository (make release)


def grader_files():
    """[(path on disk, path in the bundle's grader/)]: the grader-only files (the Gradescope zip's, less its two scripts)."""
    from .gradescope import bundle
    return [(path, name) for path, name in bundle.members() if name not in bundle.ENTRY]


def bundle_size(folder):
    """Bytes of the folder as a gzipped tarball (how publish-pages serves a bundle)."""
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(folder, arcname=os.path.basename(folder))
    return len(buf.getvalue())


def write_bundle(config, classroom="CLASSROOM", assignment="matmul"):
    """CONFIG/CLASSROOM/autograders/ASSIGNMENT/: autograder.py and grader/ (the grader-only files); its path."""
    from .template import TemplateError
    bundle_dir = os.path.join(os.path.abspath(config), classroom, "autograders", assignment)
    if os.path.isdir(bundle_dir):
        shutil.rmtree(bundle_dir)
    os.makedirs(bundle_dir)
    shutil.copyfile(os.path.join(FILES, "autograder.py"), os.path.join(bundle_dir, "autograder.py"))
    for path, name in grader_files():
        dest = os.path.join(bundle_dir, "grader", name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(path, dest)
    size = bundle_size(bundle_dir)
    if size > BUNDLE_LIMIT:
        raise TemplateError(f"{bundle_dir} packs to {size} bytes; Classroom 50 fetches at most {BUNDLE_LIMIT}")
    return bundle_dir


def build(release_dir, out=OUT, classroom="CLASSROOM", assignment="matmul"):
    """Write OUT/config/CLASSROOM/autograders/ASSIGNMENT/ (autograder.py + grader/), the runtime blocks
    and OUT/template/ (the student template for Classroom 50: no workflow, Classroom 50 adds its own)."""
    from . import template
    out = os.path.abspath(out)
    write_bundle(os.path.join(out, "config"), classroom, assignment)
    for name in ("runtime-gpu.json", "runtime-hosted.json"):
        shutil.copyfile(os.path.join(FILES, name), os.path.join(out, name))
    template.build(release_dir, os.path.join(out, "template"), flavor="classroom50")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m classroom.c50", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grade", help="grade a checkout (Classroom 50's runner environment)")
    g.add_argument("--checkout", default=".", help="the student's checkout (default: the working directory); "
                   "result.json and release-body.md are written there")
    v = sub.add_parser("validate", help="check a result.json against the contract")
    v.add_argument("path")
    b = sub.add_parser("build", help="the classroom50 config files and the student template (make release)")
    b.add_argument("--release", required=True, help="the release folder (build/course/release/matmul)")
    b.add_argument("--out", default=OUT, help="default: build/classroom50")
    b.add_argument("--classroom", default="CLASSROOM", help="the classroom's short name (folder in classroom50)")
    b.add_argument("--assignment", default="matmul", help="the assignment's slug (default: %(default)s)")
    args = p.parse_args(argv)
    if args.command == "grade":
        missing = [k for k in IDENTITY if not os.environ.get(k)]
        if missing:
            print(f"::error::{', '.join(missing)} not set: Classroom 50's runner sets them (docs/CLASSROOM.md)",
                  file=sys.stderr)
            return 1
        try:
            if device_from_env(os.environ) == "gpu" and not gpu_available():
                raise ValueError("the GPU tier was asked for (a self-hosted runner, or MATMUL_DEVICE=gpu) but "
                                 "nvidia-smi finds no GPU on this runner: no grade is recorded")
            result = grade_checkout(args.checkout)
        except ValueError as exc:
            print(f"::error::{exc}", file=sys.stderr)
            return 1
        problems = validate(result, os.environ["CLASSROOM"], os.environ["ASSIGNMENT"])
        if problems:
            print("::error::result.json breaks the contract: " + "; ".join(problems), file=sys.stderr)
            return 1
        return 0
    if args.command == "validate":
        try:
            with open(args.path, encoding="utf-8") as f:
                result = json.load(f)
        except (OSError, ValueError) as exc:
            print(f"error: {args.path}: {exc}", file=sys.stderr)
            return 2
        problems = validate(result)
        for problem in problems:
            print(f"{args.path}: {problem}")
        return 1 if problems else 0
    from .template import TemplateError
    try:
        out = build(args.release, args.out, args.classroom, args.assignment)
    except TemplateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    rel = os.path.relpath(out)
    print(f"wrote {rel}/config/{args.classroom}/autograders/{args.assignment}/ (autograder.py and grader/: copy into "
          f"your classroom50 repository), {rel}/runtime-gpu.json, {rel}/runtime-hosted.json and the student "
          f"template {rel}/template/ (docs/CLASSROOM.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
