"""Evaluation measures (trec_eval semantics), named by their ir_measures-style syntax.

``parse_measure("nDCG@10")``, ``AP``, ``AP@100``, ``RR@10``, ``R@100``, ``P@10``,
``Success@10``, ``Judged@10`` and ``Name(rel=N)@k`` for a binary threshold.
One module per measure; importing this package registers them all.
"""

from gate.evaluation.measures import ap, judged, ndcg, precision, recall, rr, success  # noqa: F401  (registration)
from gate.evaluation.measures.ap import AP
from gate.evaluation.measures.base import REGISTRY, Measure, known_measures, parse_measure, parse_measures, register
from gate.evaluation.measures.judged import Judged
from gate.evaluation.measures.ndcg import NDCG
from gate.evaluation.measures.ordering import trec_order
from gate.evaluation.measures.precision import Precision
from gate.evaluation.measures.recall import Recall
from gate.evaluation.measures.rr import RR
from gate.evaluation.measures.success import Success

__all__ = [
    "AP",
    "Judged",
    "Measure",
    "NDCG",
    "Precision",
    "REGISTRY",
    "RR",
    "Recall",
    "Success",
    "known_measures",
    "parse_measure",
    "parse_measures",
    "register",
    "trec_order",
]
