"""Judged@k: the fraction of the top k that the qrels judge (as ir_measures' ``Judged@k``).

For a query with ``n`` retrieved documents ``d_1 .. d_n`` (trec_eval order)::

    Judged@k = |{i <= k : d_i is judged}| / min(k, n), and 0 when n = 0

Two conventions, both deliberate:

* the denominator is ``min(k, n)`` as in ir_measures, so a run that returns
  fewer than ``k`` documents is not penalized for the missing ranks, and a
  query with nothing retrieved (or missing from the run) scores 0;
* "judged" means a qrels label ``>= 0``. Unlike ir_measures, a NEGATIVE label
  counts as unjudged: trec_eval reads it as "in the pool, unjudged". When the
  qrels declare negatives as judged non-relevant (``Qrels.negative_is_judged``,
  e.g. Cranfield's -1), every qrels entry counts as judged.

Judged is about coverage, not relevance, so it takes no ``rel``.
"""

from __future__ import annotations

import numpy as np

from gate.evaluation.measures.base import Measure, register


@register
class Judged(Measure):
    NAME = "Judged"
    TAKES_REL = False
    NEEDS_CUTOFF = True

    def compute(self, ranking):
        judged = ranking.per_query_count(ranking.judged_rows(self.cutoff))
        shown = np.minimum(ranking.retrieved, self.cutoff).astype(np.float64)
        out = np.zeros(ranking.n_queries, dtype=np.float64)
        np.divide(judged, shown, out=out, where=shown > 0)
        return out
