"""Verdict rules of pages that check our own code rather than a paper's claim (the privacy
audit). The "paper" column holds the claim under test (here: the ledger's epsilon), never a
number we measured.
"""

from __future__ import annotations

from typing import Sequence

from dpcompanion.experiments.comparisons.rule import Judgement, Rule

__all__ = ["RULES"]


def _judge_claim(*, epsilon_claimed: float, delta: float, epsilon_lower: float, passed: bool) -> Judgement:
    return Judgement("agrees" if passed else "disagrees", "95% lower bound; below the claim = not refuted (not proved)",
                     ours=f"{epsilon_lower:.4g}", printed=f"({epsilon_claimed:.4g}, {delta:g})-DP (the ledger's claim)")


def _judge_power(*, flagged: Sequence[str], trainers: Sequence[str]) -> Judgement:
    n, k = len(trainers), len(flagged)
    v = "agrees" if k == n else "partly" if k else "disagrees"
    missed = sorted(set(trainers) - set(flagged))
    return Judgement(v, "shows the test has power at this size" + (f"; not flagged: {', '.join(missed)}" if missed else ""),
                     ours=f"{k} of {n}", printed=f"{n} of {n} (every trainer's noise is worth more than its claim)")


RULES: tuple[Rule, ...] = (
    Rule("audit/claim", "trainer as shipped (S = 1): the ledger's (epsilon, delta)-DP claim", "the ledger's claim",
         "agrees: the audit's lower bound on epsilon (the larger of the Gaussian-DP fit and the Clopper-Pearson "
         "threshold test, 95% together) does not exceed the claim (dpcompanion.training.privacy_audit decides 'passed')",
         _judge_claim),
    Rule("audit/power", "the audit flags every deliberately mis-calibrated trainer",
         "every trainer flagged", "agrees: all flagged; partly: some; disagrees: none", _judge_power),
)
