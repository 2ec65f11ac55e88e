"""Stand-ins for a GPU runner's side of sandbox.run_child's turns (no GPU needed)."""


def take_turns(job, inputs, turn):
    """(job with the fields its turns gave, its inputs, "") as run_child would run it, or (job, inputs, why) where a
    turn refused it. `turn` is one function or a list; each is called with a child that is ready at once, and may
    give the child its inputs (ready.give_inputs), let it go on ("" or a dict of late fields) or refuse (a reason)."""
    box = {"inputs": inputs}

    class Ready:
        def __call__(self, seconds):
            return True

        def give_inputs(self, arrays):
            box["inputs"] = arrays
    for step in (turn if isinstance(turn, list) else [turn] if turn is not None else []):
        given = step(Ready())
        if isinstance(given, str) and given:
            return job, box["inputs"], given
        job = {**job, **(given or {})}
    return job, box["inputs"], ""
