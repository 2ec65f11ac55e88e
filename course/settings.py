"""A course's own settings: COURSE/autograder.toml, read and checked with the one rule of autograder/config.toml.

[limits] overrides the engine's limits for the course (part of the grading key); [class] and [slurm] are read by
the class run only (course.grade_class, course.slurm). Every value is checked by config.value_problem (type,
choices, minimum) and an unknown key names its close match.
"""
import copy
import os
import tomllib

from autograder.config import Key

OVERRIDABLE = ("limits",)
# Sections of COURSE/autograder.toml read by the course, not by the engine (not part of the grading key).
COURSE_SECTIONS = ("class", "slurm")
CLASS_SCHEMA = {
    "gpus": Key(int, 0, "GPUs to grade on (0 = every GPU visible to the run)"),
    "gpu_workers": Key(int, 2, "GPU tier: grading processes per GPU. Their runners and GPU tools share the GPU, "
                               "each timing has it alone, and a worker reads, checks and builds its next student "
                               "meanwhile; 1 grades one student at a time per GPU", minimum=1),
    "workers": Key(int, 0, "simulator tier: submissions graded at once (0 = one per two cores)"),
}
GRADING_DIR = ".grading"


class CourseError(ValueError):
    """The course folder or its settings cannot be used; the message says why."""


def read_course_file(course):
    """(path, the parsed COURSE/autograder.toml or {})."""
    path = os.path.join(course, "autograder.toml")
    if not os.path.isfile(path):
        return path, {}
    try:
        with open(path, "rb") as f:
            return path, tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CourseError(f"cannot read {path}: {exc}") from exc


def _checked(path, section, key, value, schema):
    from autograder import config as config_mod
    if key not in schema:
        close = config_mod.close_match(key, schema)
        raise CourseError(f"{path}: [{section}] has no key {key!r}"
                          + (f" (did you mean {close!r}?)" if close else f"; known: {', '.join(schema)}"))
    problem = config_mod.value_problem(value, schema[key])
    if problem:
        raise CourseError(f"{path}: [{section}] {key} {problem} ({schema[key].help})")
    return value


def load_config(course):
    """autograder/config.toml with COURSE/autograder.toml's overrides applied (only known [limits] keys)."""
    from autograder import config as config_mod
    cfg = config_mod.load()
    path, override = read_course_file(course)
    if not override:
        return cfg
    cfg = copy.deepcopy(cfg)
    sections = ", ".join(f"[{s}]" for s in OVERRIDABLE + COURSE_SECTIONS)
    for section, values in override.items():
        if section in COURSE_SECTIONS:
            continue
        if section not in OVERRIDABLE or not isinstance(values, dict):
            raise CourseError(f"{path}: [{section}] is not a section a course may set; those are {sections}")
        for key, value in values.items():
            cfg[section][key] = _checked(path, section, key, value, config_mod.SCHEMA[section])
    cfg["course_overrides"] = path
    return cfg


def course_settings(course, section, schema):
    """The [section] table of COURSE/autograder.toml over the defaults of `schema` ({key: config.Key})."""
    path, data = read_course_file(course)
    values = data.get(section, {})
    if not isinstance(values, dict):
        raise CourseError(f"{path}: {section} must be a table ([{section}])")
    out = {key: copy.deepcopy(spec.default) for key, spec in schema.items()}
    for key, value in values.items():
        out[key] = _checked(path, section, key, value, schema)
    return out
