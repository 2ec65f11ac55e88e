"""checks/speed.py: speed against a reference timed in the same child (the GPU runs are in tests/test_gpu_tier.py)."""
from autograder.checks import speed
from checkkit import FakeGrader


def test_simulator_tier_shows_speed_as_a_visible_provisional_skip():
    c = speed.not_timed(FakeGrader("tiled"))
    assert c.status == "skipped" and c.max_score == 0 and c.score == 0
    assert "Worth 2 points in the GPU tier" in c.output and "provisional" in c.output
