"""The one place a difference is called: `verdict` for a test, `detected` for a multi-bootstrap;
the report only words what they return."""

from __future__ import annotations

from tinytf.analysis.evaluation import detected, verdict, verdict_of


def test_a_summary_s_verdict_is_quoted_and_decided_only_where_it_has_none():
    test = {"mean_difference": 0.02, "p_value": 0.01}
    assert verdict_of(test) == verdict(test) == "higher"
    # kept beside the test when its family's Holm p was known: quoted, not decided again
    assert verdict_of({**test, "verdict": "no detectable difference"}) == "no detectable difference"


def test_a_multi_bootstrap_detects_only_with_its_holm_p_and_its_interval_clear_of_zero():
    boot = {"p_value": 0.001, "p_holm": 0.004, "ci95": [0.01, 0.05]}
    assert detected(boot)
    assert not detected({**boot, "p_holm": 0.06})  # the Holm p decides where there is one
    assert not detected({**boot, "ci95": [-0.01, 0.05]})  # an interval over 0 claims nothing
    assert detected({"p_value": 0.01, "ci95": [-0.05, -0.01]})  # one comparison: its own p
    assert not detected({**boot, "p_holm": 0.04}, alpha=0.01)
