"""Success@k: whether anything relevant is in the top k (trec_eval ``success_k``).

For a query with ranking ``d_1, d_2, ...`` (trec_eval order)::

    Success@k = 1 if some i <= k has label(d_i) >= rel, else 0

``rel`` defaults to 1; the cutoff is required. A query missing from the run
scores 0.
"""

from __future__ import annotations

import numpy as np

from gate.evaluation.measures.base import Measure, register


@register
class Success(Measure):
    NAME = "Success"
    NEEDS_CUTOFF = True

    def compute(self, ranking):
        hits = ranking.per_query_count(ranking.relevant_rows(self.threshold, self.cutoff))
        return (hits > 0).astype(np.float64)
