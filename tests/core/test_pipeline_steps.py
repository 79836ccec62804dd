"""The pipeline as step lists: every profile has one, and the report follows its order."""

from __future__ import annotations

from builders import coding_session

from tinyjuice.options import CompactionOptions, Profile
from tinyjuice.pipeline import _PROFILE_STEPS, compress
from tinyjuice.report import Status
from tinyjuice.tokens import RoughCounter


def test_every_profile_has_a_step_list() -> None:
    assert set(_PROFILE_STEPS) == set(Profile)
    for steps in _PROFILE_STEPS.values():
        assert steps, "a profile without steps would compact nothing"


def test_report_steps_follow_the_profile_order() -> None:
    order = {
        Profile.HERMES: ["prune", "summary", "sanitize", "media"],
        Profile.RULES: ["rules", "sanitize", "media"],
    }
    t = coding_session(8).transcript()
    for profile, names in order.items():
        opts = CompactionOptions(profile=profile, force=True, keep_last=2)
        res = compress(t, opts, counter=RoughCounter())
        assert res.report.status is Status.COMPACTED, res.report.reason
        got = [s.step for s in res.report.steps]
        assert got == [n for n in names if n in got]
        assert got[0] == names[0]
