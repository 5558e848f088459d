"""AP, AP@k: average precision (trec_eval ``map`` / ``map_cut_k``).

For a query with ranking ``d_1, d_2, ...`` (trec_eval order), a document is
relevant when its label is ``>= rel`` (default 1; negative and unjudged never are)::

    prec(i) = |{j <= i : d_j relevant}| / i
    AP@k    = sum_{i <= k, d_i relevant} prec(i) / R

where ``R`` is the number of relevant documents in the qrels for the query
(ALL of them, retrieved or not). Without ``@k`` the sum runs over the whole
run. ``AP = 0`` when ``R = 0`` and for a query missing from the run.
"""

from __future__ import annotations

import numpy as np

from gate.evaluation.measures.base import Measure, register


@register
class AP(Measure):
    NAME = "AP"

    def compute(self, ranking):
        idx = ranking.relevant_rows(self.threshold, self.cutoff)
        seg = ranking.seg[idx]
        # Relevant rows before each one in the same query: its position among
        # the selected rows minus the position of its query's first one.
        position = np.arange(len(idx), dtype=np.int64)
        first = np.searchsorted(seg, seg, side="left")
        precision = (position - first + 1) / ranking.rank[idx]
        total = ranking.per_query_sum(idx, precision)
        num_rel = ranking.num_relevant(self.threshold)
        out = np.zeros(ranking.n_queries, dtype=np.float64)
        np.divide(total, num_rel, out=out, where=num_rel > 0)
        return out
