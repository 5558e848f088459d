"""R@k: recall at k (trec_eval ``recall_k``).

For a query with ranking ``d_1, d_2, ...`` (trec_eval order)::

    R@k = |{i <= k : label(d_i) >= rel}| / R

where ``R`` is the number of documents with label ``>= rel`` in the qrels for
the query (all of them, retrieved or not). ``R@k = 0`` when ``R = 0`` and for a
query missing from the run. ``rel`` defaults to 1; the cutoff is required.
"""

from __future__ import annotations

import numpy as np

from gate.evaluation.measures.base import Measure, register


@register
class Recall(Measure):
    NAME = "R"
    NEEDS_CUTOFF = True

    def compute(self, ranking):
        hits = ranking.per_query_count(ranking.relevant_rows(self.threshold, self.cutoff))
        num_rel = ranking.num_relevant(self.threshold)
        out = np.zeros(ranking.n_queries, dtype=np.float64)
        np.divide(hits, num_rel, out=out, where=num_rel > 0)
        return out
