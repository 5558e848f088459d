"""nDCG, nDCG@k: normalized discounted cumulative gain (trec_eval ``ndcg`` / ``ndcg_cut``).

For a query with ranking ``d_1, d_2, ...`` (trec_eval order) and labels ``l(d)``::

    gain(d)  = l(d) if l(d) > 0 else 0          (linear gain; negatives and unjudged gain 0)
    DCG@k    = sum_{i=1..k} gain(d_i) / log2(i + 1)
    IDCG@k   = same sum over the ideal ranking: ALL the query's judgments in
               the qrels sorted by label, best first (not only retrieved ones)
    nDCG@k   = DCG@k / IDCG@k, and 0 when IDCG@k = 0 (no positive label)

Without ``@k`` both sums run over everything (trec_eval ``ndcg``: DCG over the
whole run, IDCG over every positive judgment). nDCG uses the graded labels
directly, so it takes no ``rel``. A query missing from the run scores 0.

The discount ``log2(i + 1)`` comes from a table computed once with :mod:`decimal`
(:func:`gate.common.fixed_order.log2_of_integers`), not ``np.log2``: numpy's AVX-512
logarithm and its other one differ by an ulp, and a measure must not depend on the CPU.
"""

from __future__ import annotations

import numpy as np

from gate.common.fixed_order import log2_of_integers
from gate.evaluation.measures.base import Measure, register


@register
class NDCG(Measure):
    NAME = "nDCG"
    TAKES_REL = False

    def compute(self, ranking):
        k = self.cutoff
        idx = ranking.gain_rows(k)
        dcg = ranking.per_query_sum(idx, ranking.labels[idx] / log2_of_integers(ranking.rank[idx] + 1))
        seg, rank, gain = ranking.ideal_gains()
        if k is not None:
            keep = rank <= k
            seg, rank, gain = seg[keep], rank[keep], gain[keep]
        idcg = np.bincount(seg, weights=gain / log2_of_integers(rank + 1), minlength=ranking.n_queries)
        out = np.zeros(ranking.n_queries, dtype=np.float64)
        np.divide(dcg, idcg, out=out, where=idcg > 0)
        return out
