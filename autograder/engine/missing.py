"""A stage a submission holds no file for counts 0 of its points: the one rule of the class run and the command
line, so a folder graded either way shows one score (8 of 54, not 8 of 8)."""
import tempfile

from ..stages import STAGES
from ..submission import StageSource


def add_missing_stages(report, cfg, where, note=True):
    """Count every stage the submission holds no file for as 0 of its points, in the rows of a graded stage (each
    check failed, saying which notebook is missing; speed a visible skip in the simulator), with one note naming the
    missing notebooks (not where `note` is false: a problem of the whole submission says it). Without this a student
    who left out s5_fast.ipynb would read 47 of 47 (the engine grades the stages it finds) and upload as 100 %.
    Returns the missing stages."""
    from . import StageGrader
    missing = [s for s in STAGES if s.name not in report.stages]
    if not missing:
        return []
    with tempfile.TemporaryDirectory(prefix="missing-") as workdir:
        for stage in missing:
            why = (f"{stage.module}.ipynb was not submitted: no file in {where} defines {stage.launcher}, so stage "
                   f"{stage.name} scores 0. Hand in the released notebook {stage.module}.ipynb with your work")
            grader = StageGrader(StageSource(stage, "", "", file=f"{stage.module}.ipynb", unreadable=why),
                                 report.device, cfg, None, workdir)
            grader.start_compile(None)  # an unreadable stage starts no child
            report.stages.append(stage.name)
            report.checks.extend(grader.judge({}))
    report.stages.sort(key=[s.name for s in STAGES].index)
    order = {s.name: i for i, s in enumerate(STAGES)}
    report.checks.sort(key=lambda c: order.get(c.stage, len(order)))  # stable: each stage's rows keep their order
    if not note:
        return missing
    names_missing = {s.name for s in missing}
    points = sum(c.max_score for c in report.checks if c.stage in names_missing)   # this tier's points
    names = ", ".join(f"{s.module}.ipynb" for s in missing)
    report.notes.append(f"not submitted: {names} (no file in {where} defines "
                        f"{'its launcher' if len(missing) == 1 else 'their launchers'}): "
                        f"{'stage ' + missing[0].name + ' counts' if len(missing) == 1 else 'those stages count'} "
                        f"0 of {points:g} points")
    return missing
