"""A TA's scores set by hand in formgrader, as every output counts them: capped at the stage's points in the tier
graded (formgrader offers the GPU tier's), with make grade's own score kept beside them (course.auto_score)."""


def tier_maxima(data):
    """{stage: its points in the tier the results were graded in} (the simulator's lack the speed check's)."""
    found = {}
    for t in data.get("tests", []):
        tags = t.get("tags") or []
        if tags:
            found[tags[0]] = found.get(tags[0], 0.0) + float(t.get("max_score") or 0.0)
    return found


def capped(entry, most):
    """An override entry with its hand score capped at `most` (the original kept as set_by_hand)."""
    entry = dict(entry)
    given = entry.get("set_by_hand", entry["manual"])
    if most is not None and given > most:
        entry["set_by_hand"], entry["manual"] = given, most
    return entry


def apply_overrides(data):
    """The grade of record in results.json: make grade's score (kept as course.auto_score) with the TA's scores,
    each capped at its stage's points in this tier (formgrader offers the GPU tier's: full marks on a simulator-tier
    stage would give more than 100 %); a capped score says so in its override."""
    course = data["extra_data"]["course"]
    auto = course.setdefault("auto_score", data["score"])
    overrides = course.get("overrides") or {}
    maxima = tier_maxima(data)
    for stage, o in overrides.items():
        o.update(capped(o, maxima.get(stage)))
    data["score"] = round(auto + sum(o["manual"] - o["auto"] for o in overrides.values()), 4)
    return data


def override_note(overrides):
    """The class table's and grades.csv's note on the TA's scores of one student (both numbers, and a re-grade's)."""
    parts = []
    for stage, o in overrides.items():
        text = f"{stage} {o['manual']:g} set by hand (make grade: {o['auto']:g})"
        if "set_by_hand" in o:
            text += (f", OVER: {o['set_by_hand']:g} was set, more than the stage's {o['manual']:g} points in this "
                     f"tier; counted as {o['manual']:g}")
        if o.get("regraded"):
            text += (f", re-graded {o['regraded'][0]:g} -> {o['regraded'][1]:g} under it: the hand score still stands, "
                     "clear it in formgrader to use make grade's")
        parts.append(text)
    return "TA override: " + ", ".join(parts)
