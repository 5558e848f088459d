"""P@k: precision at k (trec_eval ``P_k``).

For a query with ranking ``d_1, d_2, ...`` (trec_eval order)::

    P@k = |{i <= k : label(d_i) >= rel}| / k

The denominator is always ``k``, even when fewer than ``k`` documents were
retrieved (trec_eval's convention). A query missing from the run scores 0.
``rel`` defaults to 1; the cutoff is required.
"""

from __future__ import annotations

from gate.evaluation.measures.base import Measure, register


@register
class Precision(Measure):
    NAME = "P"
    NEEDS_CUTOFF = True

    def compute(self, ranking):
        return ranking.per_query_count(ranking.relevant_rows(self.threshold, self.cutoff)) / self.cutoff
