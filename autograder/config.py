"""Load autograder/config.toml, the one file instructors edit, and check it."""
import os
import tomllib

from .stages import STAGES

DEFAULT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.toml")
CHECKS = ("compiles", "shared_memory", "correct", "races", "bank_conflicts", "data_reuse", "speed")


class ConfigError(ValueError):
    pass


def load(path=None):
    """Return the config as a dict; raise ConfigError naming a bad key."""
    path = path or os.environ.get("AUTOGRADER_CONFIG") or DEFAULT_PATH
    try:
        with open(path, "rb") as f:
            cfg = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from exc
    for section in ("grading", "limits", "speed", "stages", "structure"):
        if section not in cfg:
            raise ConfigError(f"{path}: missing section [{section}]")
    for stage in STAGES:
        entry = cfg["stages"].get(stage.name)
        if entry is None:
            raise ConfigError(f"{path}: missing [stages.{stage.name}]")
        unknown = set(entry.get("points", {})) - set(CHECKS)
        if unknown:
            raise ConfigError(f"{path}: [stages.{stage.name}] points has unknown checks {sorted(unknown)}; known: {CHECKS}")
    cfg["path"] = path
    return cfg
