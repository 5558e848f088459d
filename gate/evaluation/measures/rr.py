"""RR, RR@k: reciprocal rank (trec_eval ``recip_rank``; ``@k`` on the run cut to k).

For a query with ranking ``d_1, d_2, ...`` (trec_eval order)::

    RR@k = 1 / min{i <= k : label(d_i) >= rel}, and 0 when no such i

``rel`` defaults to 1. Without ``@k`` the whole run is searched. A query
missing from the run scores 0.
"""

from __future__ import annotations

import numpy as np

from gate.evaluation.measures.base import Measure, register


@register
class RR(Measure):
    NAME = "RR"

    def compute(self, ranking):
        first = ranking.first_rank(ranking.relevant_rows(self.threshold, self.cutoff))
        out = np.zeros(ranking.n_queries, dtype=np.float64)
        np.divide(1.0, first, out=out, where=first > 0)
        return out
