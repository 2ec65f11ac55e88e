"""The config schema (autograder/config.py): a typo, a missing key or a wrong type is an error naming key, file, line."""
import os
import re

import pytest

from autograder import config

SHIPPED = config.DEFAULT_PATH


def variant(tmp_path, old, new):
    text = open(SHIPPED, encoding="utf-8").read()
    assert old in text, old
    path = tmp_path / "config.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return str(path), text.replace(old, new, 1).splitlines()


def line_of(lines, fragment):
    return next(i + 1 for i, ln in enumerate(lines) if fragment in ln)


def test_shipped_config_loads_and_matches_the_schema_defaults():
    cfg = config.load()
    for section, keys in config.SCHEMA.items():
        for key, spec in keys.items():
            assert cfg[section][key] == spec.default, f"[{section}] {key}: schema default {spec.default!r}"


def test_misspelt_key_names_key_file_and_line(tmp_path):
    path, lines = variant(tmp_path, "check_timeout_s = 240", "chek_timeout_s = 60")
    with pytest.raises(config.ConfigError) as err:
        config.load(path)
    msg = str(err.value)
    assert f"{path}:{line_of(lines, 'chek_timeout_s')}:" in msg
    assert "chek_timeout_s: unknown key (did you mean 'check_timeout_s'?)" in msg


def test_missing_key_names_it_and_its_default(tmp_path):
    path, lines = variant(tmp_path, "repeats = 15\n", "")
    with pytest.raises(config.ConfigError, match=r"\[speed\] missing key 'repeats' .*default is repeats = 15") as err:
        config.load(path)
    assert f"{path}:{line_of(lines, '[speed]')}:" in str(err.value)


@pytest.mark.parametrize("old, new, message", [
    ("check_timeout_s = 240", 'check_timeout_s = "240"', r"check_timeout_s: must be an int, not str '240'"),
    ("relative_error = 1e-5", "relative_error = true", r"relative_error: must be a float, not a boolean"),
    ("compute_capability = [9, 0]", 'compute_capability = "9.0"', r"compute_capability: must be a list of integers"),
    ('sandbox = "auto"', "sandbox = 1", r"sandbox: must be a str"),
    ("reuse_fraction = 0.5", "reuse_fraction = [0.5]", r"reuse_fraction: must be a float"),
])
def test_wrong_type_names_the_key(tmp_path, old, new, message):
    path, lines = variant(tmp_path, old, new)
    with pytest.raises(config.ConfigError, match=message) as err:
        config.load(path)
    assert f"{path}:{line_of(lines, new)}:" in str(err.value)


@pytest.mark.parametrize("old, new, message", [
    ("[stages.naive]", "[stages.naiive]", r"\[stages.naiive\] unknown stage"),
    ("points = { compiles = 2, correct = 6, speed = 2 }", "points = { compiles = 2, corect = 6, speed = 2 }",
     r"unknown check 'corect'"),
    ("points = { compiles = 2, correct = 6, speed = 2 }", "points = { compiles = 2, correct = -6, speed = 2 }",
     r"correct = -6 must be a number of points"),
    ('speed = { reference = "naive_coalesced", min_speedup = 0.85, review_speedup = 4.0 }', 'speed = { reference = "naive_coalesced", review_speedup = 4.0 }',
     r"\[stages.naive\] missing key 'min_speedup'"),
    ("[structure]", "[structures]", r"\[structures\] unknown section"),
])
def test_stage_tables_are_checked(tmp_path, old, new, message):
    path, _ = variant(tmp_path, old, new)
    with pytest.raises(config.ConfigError, match=message):
        config.load(path)


def test_every_schema_key_is_explained_in_config_toml():
    """Instructors read config.toml: each key there has a comment or a schema help text to point to."""
    text = open(SHIPPED, encoding="utf-8").read()
    for section, keys in config.SCHEMA.items():
        for key, spec in keys.items():
            assert re.search(rf"^{key} = ", text, re.M), f"[{section}] {key} missing from config.toml"
            assert spec.help


@pytest.mark.parametrize("old, new, says", [
    ("points = { compiles = 1, correct = 6, speed = 5 }", "points = 5", "points points per check"),
    ("jobs = 0", "jobs = -1", "jobs: must be 0 or more"),
    ('sandbox = "auto"', 'sandbox = "bwarp"', "'bwarp' is not one of auto, bwrap, unshare, none (did you mean 'bwrap'?)"),
    ("compute_capability = [9, 0]", "compute_capability = []", "must be a list of 2 integers"),
    ("tiles = [16, 32]", "tiles = [0, 16]", "must hold integers of 1 or more"),
    ("points = { compiles = 2, correct = 6, speed = 2 }", "points = { compiles = 2, shared_memory = 1, correct = 6, speed = 2 }",
     "shared_memory points on a stage that is not tiled"),
])
def test_a_bad_value_is_an_error_that_says_what_is_allowed(tmp_path, old, new, says):
    """Each of these used to load and fail later (a TypeError, a ValueError, every check "not gradable", the
    student blamed for the shared arrays, a report and a gradebook that disagree on the maximum)."""
    path, _ = variant(tmp_path, old, new)
    with pytest.raises(config.ConfigError) as err:
        config.load(path)
    assert says in str(err.value), str(err.value)


def test_a_section_that_is_not_a_table_is_an_error(tmp_path):
    text = open(SHIPPED, encoding="utf-8").read()
    start, end = text.index("[grading]"), text.index("[limits]")
    path = tmp_path / "config.toml"
    path.write_text("grading = 5\n" + text[:start] + text[end:], encoding="utf-8")
    with pytest.raises(config.ConfigError, match=r"grading must be a table \(\[grading\]\), not 5"):
        config.load(str(path))


@pytest.mark.parametrize("old, new, message", [
    ("relative_error = 1e-5", "relative_error = nan", r"\[grading\] relative_error: must be a finite number, not nan"),
    ("check_timeout_s = 240", "check_timeout_s = inf", r"\[limits\] check_timeout_s: must be a finite number, not inf"),
    ("sibling_grace_s = 10.0", "sibling_grace_s = +inf", r"\[limits\] sibling_grace_s: must be a finite number, not inf"),
    ("min_speedup = 0.85", "min_speedup = -nan", r"\[stages.naive\] min_speedup: must be a finite number, not nan"),
    ("points = { compiles = 2, correct = 6, speed = 2 }", "points = { compiles = 2, correct = nan, speed = 2 }",
     r"\[stages.naive\] points: correct = nan must be a number of points"),
    ("points = { compiles = 2, correct = 6, speed = 2 }", "points = { compiles = 2, correct = inf, speed = 2 }",
     r"\[stages.naive\] points: correct = inf must be a number of points"),
])
def test_nan_and_inf_are_refused_naming_the_key(tmp_path, old, new, message):
    """TOML reads nan and inf as floats: a nan limit compares false everywhere (no limit at all, or never a pass),
    an inf one never ends; nan points make every total nan. Each is refused, naming the key, its file and line."""
    path, lines = variant(tmp_path, old, new)
    with pytest.raises(config.ConfigError, match=message) as err:
        config.load(path)
    line = int(re.search(re.escape(path) + r":(\d+):", str(err.value)).group(1))
    assert line <= line_of(lines, new)  # the key's line (a key of an inline table: its table's)
