"""Both sides: load autograder/config.toml, the one file instructors edit, and check it against its schema.

The schema below declares every key once: its type, its default (what the
shipped config.toml holds) and what it does. Loading fails on an unknown key,
a missing key or a value of the wrong type, and the message names the key,
the file and the line, so a typo such as ``chek_timeout_s = 60`` is an error
at once, not a KeyError in the middle of a class.
"""
import math
import os
import re
import tomllib
from dataclasses import dataclass

from .stages import STAGES

DEFAULT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.toml")
# The checks a stage may give points for; each names its module in autograder/checks/.
CHECKS = ("compiles", "shared_memory", "correct", "races", "bank_conflicts", "data_reuse", "speed")


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Key:
    type: object      # float, int, str, bool, "ints" (a list of ints), "strs" (a list of strings), "points" or "speed_rule"
    default: object
    help: str
    choices: tuple = ()      # the values a str key may take
    minimum: float = 0       # numbers (and every int of a list) must be at least this
    length: int = 0          # a list of ints must have this many (0: any number, at least one)


SCHEMA = {
    "grading": {
        "relative_error": Key(float, 1e-5, "largest relative Frobenius error against the float64 reference that passes"),
        "compute_capability": Key("ints", [9, 0], "GPU compute capability the PTX compile targets, as [major, minor]",
                                  length=2),
    },
    "limits": {
        "check_timeout_s": Key(int, 240, "wall-clock seconds one grading child may run before it is killed"),
        "cpu_s": Key(int, 480, "CPU seconds one child may use (RLIMIT_CPU)"),
        "file_bytes": Key(int, 268435456, "largest file a child may write, its output log included (RLIMIT_FSIZE)"),
        "log_bytes": Key(int, 8192, "bytes of a child's output kept for the report (the tail)"),
        "result_bytes": Key(int, 268435456, "largest result file the parent will read"),
        "sim_address_space_bytes": Key(int, 8589934592, "address-space limit of simulator children (0 = none)"),
        "data_bytes": Key(int, 17179869184, "private memory of every child (RLIMIT_DATA; 0 = none)"),
        "jobs": Key(int, 0, "grading children run at once in the simulator tier (0 = one per CPU core)"),
        "sandbox": Key(str, "auto", "sandbox backend: auto, bwrap, unshare or none (docs/SANDBOX.md)",
                       choices=("auto", "bwrap", "unshare", "none")),
        "processes": Key(int, 2048, "processes and threads one child may have (RLIMIT_NPROC on its own uid)"),
        "scratch_bytes": Key(int, 268435456, "size of the child's writable /tmp (a tmpfs)"),
        "gpu_start_s": Key(float, 40.0, "start-up seconds every GPU child may take before its work (imports, CUDA "
                                        "initialisation, compiles, many children at once)"),
        "work_factor": Key(float, 20.0, "a GPU child may take this many times the naive reference kernel's time "
                                        "for its work, on top of gpu_start_s"),
        "after_start_s": Key(float, 5.0, "once a GPU child's kernels are compiled and about to run, it has at most "
                                          "this many seconds plus its work_factor share left"),
        "reference_tflops": Key(float, 1.0, "the naive reference kernel's rate for those limits, in TFLOP/s"),
        "sibling_grace_s": Key(float, 10.0, "after a child of a stage ran out of time, the stage's other children get "
                                            "at most this many more seconds of work each (start-up not counted)"),
        "tool_timeout_s": Key(float, 30.0, "wall-clock seconds of a racecheck or ncu child"),
        "sim_start_s": Key(float, 20.0, "start-up seconds every simulator child may take before its work"),
        "sim_block_step_s": Key(float, 0.1, "simulator seconds of one 16 x 16 block through one tile of K"),
        "sim_work_factor": Key(float, 2.0, "a simulator child may take this many times its estimated work, "
                                           "on top of sim_start_s"),
    },
    "speed": {
        "n": Key(int, 2048, "square size N of the speed check", minimum=1),
        "warmup": Key(int, 3, "untimed runs before timing"),
        "repeats": Key(int, 15, "timed runs per kernel (the median counts)", minimum=1),
        "leaderboard_n": Key(int, 4096, "size N of the challenge leaderboard run"),
        "projection_error": Key(float, 1e-5, "largest relative error of a timed run's C @ X against A @ (B @ X)"),
        "needs_correct": Key(bool, True, "speed is timed and counts only when the correctness checks passed"),
        "exclusive_poll_s": Key(float, 1.0, "seconds between the GPU process listings while the speed child runs"),
        "exclusive_settle_s": Key(float, 2.0, "seconds a listed process gone from /proc may take to leave the "
                                              "GPU's listing before it counts as another's (edges of a timing)"),
        "shared_retry_s": Key(float, 10.0, "seconds to wait before the one retry of a speed check on a shared GPU"),
        "board_review_vs_cublas": Key(float, 1.2, "a leaderboard entry faster than the cuBLAS run beside it by "
                                                  "more than this factor is marked for review, not ranked"),
    },
    "structure": {
        "tiles": Key("ints", [16, 32], "the TILE sizes a tiled stage may use: the grader sizes its test shapes, time "
                                       "limits and data-reuse bar by TILE, so the course fixes the choices (another "
                                       "TILE is judged by the first size and fails the shared-memory check)",
                     minimum=1),
        "reuse_fraction": Key(float, 0.5, "a tiled kernel must reuse each global load at least this fraction as "
                                          "often as a kernel tiled by TILE at the same shape (TILE fold on multiples)"),
    },
}
STAGE_KEYS = {
    "points": Key("points", None, "points per check, e.g. { compiles = 1, correct = 6 }; checks: " + ", ".join(CHECKS)),
    "speed": Key("speed_rule", None, "{ reference = <kernel in autograder/runner/references.py>, min_speedup = "
                                      "<reference time / student time> }; needed when the stage has speed points"),
}
SPEED_RULE = {"reference": Key(str, None, "reference kernel"), "min_speedup": Key(float, None, "speedup needed"),
              "review_speedup": Key(float, None, "a speedup above this is marked for an instructor's review")}


def stage_max(cfg):
    """{stage: its total points}: a stage's maximum is the sum of its checks' points (the one rule of the
    report, the gradebook, the notebooks and the feedback page)."""
    return {name: float(sum(s["points"].values())) for name, s in cfg["stages"].items()}


def load(path=None):
    """Return the config as a dict; raise ConfigError naming a bad key, its file and line."""
    path = path or os.environ.get("AUTOGRADER_CONFIG") or DEFAULT_PATH
    try:
        with open(path, "rb") as f:
            raw = f.read()
        cfg = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from exc
    _Checker(path, raw.decode("utf-8")).check(cfg)
    cfg["path"] = path
    return cfg


class _Checker:
    """Checks a parsed config against SCHEMA; locates keys in the text for the messages."""

    def __init__(self, path, text):
        self.path, self.lines = path, text.splitlines()

    def line_of(self, table, key=None):
        """1-based line of `key` inside [table] (or of the table's header), or None."""
        header = re.compile(r"^\s*\[\s*" + r"\s*\.\s*".join(map(re.escape, table.split("."))) + r"\s*\]\s*(#.*)?$")
        start = next((i for i, ln in enumerate(self.lines) if header.match(ln)), None)
        if start is None or key is None:
            return None if start is None else start + 1
        for i in range(start + 1, len(self.lines)):
            if re.match(r"^\s*\[", self.lines[i]):
                break
            if re.match(r"^\s*" + re.escape(key) + r"\s*=", self.lines[i]):
                return i + 1
        return start + 1

    def fail(self, table, key, problem):
        line = self.line_of(table, key)
        where = f"{self.path}:{line}" if line else self.path
        raise ConfigError(f"{where}: [{table}] {key + ': ' if key else ''}{problem}")

    def check(self, cfg):
        for section in cfg:
            if section not in SCHEMA and section != "stages":
                self.fail(section, None, f"unknown section; known: {', '.join(list(SCHEMA) + ['stages'])}")
        for section, keys in SCHEMA.items():
            if section not in cfg:
                raise ConfigError(f"{self.path}: missing section [{section}]")
            if not isinstance(cfg[section], dict):
                raise ConfigError(f"{self.path}: {section} must be a table ([{section}]), not {cfg[section]!r}")
            self.table(section, cfg[section], keys)
        stages = cfg.get("stages")
        if not isinstance(stages, dict):
            raise ConfigError(f"{self.path}: missing section [stages]")
        names = [s.name for s in STAGES]
        for name in stages:
            if name not in names:
                self.fail(f"stages.{name}", None, f"unknown stage; stages: {', '.join(names)}")
        for name in names:
            if name not in stages:
                raise ConfigError(f"{self.path}: missing [stages.{name}]")
            if not isinstance(stages[name], dict):
                raise ConfigError(f"{self.path}: stages.{name} must be a table ([stages.{name}])")
            self.stage(name, stages[name])

    def table(self, table, values, keys):
        for key in values:
            if key not in keys:
                close = close_match(key, keys)
                hint = f" (did you mean {close!r}?)" if close else f"; known keys: {', '.join(keys)}"
                self.fail(table, key, f"unknown key{hint}")
        for key, spec in keys.items():
            if key not in values:
                default = f"; the default is {key} = {spec.default!r}" if spec.default is not None else ""
                self.fail(table, None, f"missing key {key!r} ({spec.help}){default}")
            problem = value_problem(values[key], spec)
            if problem:
                self.fail(table, key, f"{problem} ({spec.help})")

    def stage(self, name, entry):
        table = f"stages.{name}"
        if not isinstance(entry.get("points"), dict):
            self.fail(table, "points" if "points" in entry else None, f"points {STAGE_KEYS['points'].help}")
        if "speed" not in entry["points"]:
            entry_keys = {"points": STAGE_KEYS["points"]}
            if "speed" in entry:
                self.fail(table, "speed", "a speed rule without speed points: add speed to points or remove it")
        else:
            entry_keys = STAGE_KEYS
        self.table(table, entry, entry_keys)
        for check, points in entry["points"].items():
            if check not in CHECKS:
                self.fail(table, "points", f"unknown check {check!r}; checks: {', '.join(CHECKS)}")
            if isinstance(points, bool) or not isinstance(points, (int, float)) or not points >= 0 \
                    or not math.isfinite(points):
                self.fail(table, "points", f"{check} = {points!r} must be a number of points, 0 or more")
            if check == "shared_memory" and not next(s for s in STAGES if s.name == name).tiled:
                self.fail(table, "points", "shared_memory points on a stage that is not tiled: that check never "
                                           "runs there, and the report's and the gradebook's maximum would differ")
        if "speed" in entry_keys:
            self.table(table, entry["speed"], SPEED_RULE)


def value_problem(value, spec):
    """"" when `value` fits the Key `spec` (type, choices, minimum, length), else why not: the one rule of
    config.toml and of a course's overrides."""
    problem = _type_problem(value, spec.type)
    if problem:
        return problem
    if spec.choices and value not in spec.choices:
        close = close_match(value, spec.choices)
        return f"{value!r} is not one of {', '.join(spec.choices)}" + (f" (did you mean {close!r}?)" if close else "")
    if spec.type in (int, float) and value < spec.minimum:
        return f"must be {spec.minimum:g} or more, not {value!r}"
    if spec.type == "ints":
        if not value or (spec.length and len(value) != spec.length):
            return f"must be a list of {spec.length or 'at least one'} integer{'s' if spec.length != 1 else ''}"
        if min(value) < spec.minimum:
            return f"must hold integers of {spec.minimum:g} or more, not {value!r}"
    return ""


def _type_problem(value, want):
    if want == "points":
        return "" if isinstance(value, dict) else "must be a table of points per check"
    if want == "speed_rule":
        return "" if isinstance(value, dict) else "must be a table { reference = ..., min_speedup = ... }"
    if want == "ints":
        ok = isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        return "" if ok else f"must be a list of integers, not {value!r}"
    if want == "strs":
        return "" if isinstance(value, list) and all(isinstance(v, str) for v in value) else \
            f"must be a list of strings, not {value!r}"
    if isinstance(value, float) and not math.isfinite(value):  # TOML reads nan and inf as floats
        return f"must be a finite number, not {value!r} (nan and inf compare false or always win: no limit at all)"
    if isinstance(value, bool) and want is not bool:
        return f"must be a{'n' if want is int else ''} {want.__name__}, not a boolean"
    if want is float and isinstance(value, (int, float)):
        return ""
    if not isinstance(value, want):
        return f"must be a{'n' if want is int else ''} {want.__name__}, not {type(value).__name__} {value!r}"
    return ""


def close_match(name, names):
    """The known name `name` was most likely meant to be (one typo, or a close spelling), or None."""
    import difflib
    close = [k for k in names if _similar(k, name)] or difflib.get_close_matches(name, list(names), 1, 0.8)
    return close[0] if close else None


def _similar(a, b):
    """True for names one typo apart (a letter dropped, added, changed or two swapped)."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]])
    short, long_ = sorted((a, b), key=len)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))
