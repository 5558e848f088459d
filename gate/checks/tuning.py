"""Tuning leak: parameters fitted on the queries that are then reported on.

A sweep that picks the best of many cells on the reporting queries is biased
upward by the size of the grid, not by retrieval quality. When a PR changes a
declared tunable parameter, the comparison is reported on the held-out
queries only; tuning and reporting queries may not overlap; changing a
tunable parameter with no split declared is a warning that names the risk.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gate.common.numbers import counted, listed
from gate.inputs.retrieval_config import ABSENT


@dataclass(frozen=True)
class TuningCheck:
    declared: bool  # a tuning split is configured
    params: tuple[str, ...]  # declared tunable parameters (dotted paths or prefixes)
    changed: tuple[str, ...]  # changed config keys that are tunable
    applies: bool  # report on held-out queries only
    holdout: tuple[str, ...]  # the held-out (reporting) queries within the universe
    tuning_count: int
    overlap: tuple[str, ...]  # queries both tuned on and reported on: an error
    warning: str | None
    # ids in the tuning or holdout list that are no judged golden query (a typo, a trailing space)
    unknown: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()  # what keeps the split from doing what it was declared for
    # changed keys that look tuned (a number under bm25, fusion, weights ...) and are not declared
    undeclared: tuple[tuple[str, Any, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "declared": self.declared,
            "params": list(self.params),
            "changed_params": list(self.changed),
            "applies": self.applies,
            "holdout_count": len(self.holdout),
            "tuning_count": self.tuning_count,
            "overlap": list(self.overlap),
            "warning": self.warning,
            "unknown_ids": list(self.unknown[:UNKNOWN_KEPT]),
            "unknown_count": len(self.unknown),
            "problems": list(self.problems),
            "undeclared_changes": [{"path": path, "old": "<absent>" if old is ABSENT else old,
                                    "new": "<absent>" if new is ABSENT else new} for path, old, new in self.undeclared],
        }

    @property
    def hints(self) -> tuple[str, ...]:
        """The warnings the undeclared tunable-looking changes give: one naming them and the risk."""
        if not self.undeclared:
            return ()
        keys = listed([f"{path} {_value(old)} → {_value(new)}" for path, old, new in self.undeclared], 5)
        one = len(self.undeclared) == 1
        return (f"this PR changes {keys}, {'which looks' if one else 'which look'} like "
                f"{'a tuned parameter' if one else 'tuned parameters'} but {'is' if one else 'are'} not in "
                "tuning.params: a value chosen on the golden queries it is reported on overstates the gain "
                f"(declare {'it' if one else 'them'} in tuning.params with a tuning split, or tune "
                f"{'it' if one else 'them'} elsewhere)",)


def _value(value: Any) -> str:
    return "absent" if value is ABSENT else repr(value) if isinstance(value, str) else str(value)


#: Config key words that name a tuning knob: a key segment, or a word of one (``title_weight``,
#: ``scoreThreshold``), equal to one of these, with a number (or a list of numbers) on both sides.
TUNING_WORDS = frozenset({"bm25", "fusion", "rrf", "rerank", "reranker", "reranking", "weights", "weight", "k1",
                          "alpha", "beta", "lambda", "mu", "temperature", "cutoff", "threshold", "thresholds",
                          "boost", "boosts", "min_score", "rrf_k", "top_k"})


def _numeric(value: Any) -> bool:
    """A number, a string that is one ('0.9' in YAML), or a non-empty list of them."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return False
        return value.strip().lower() not in ("nan", "inf", "-inf", "infinity", "-infinity")
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_numeric(item) and not isinstance(item, (list, tuple)) for item in value)
    return False


def _words(segment: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", segment).lower())


#: Words of a key's last segment that name how a run is executed, not what it ranks: a
#: ``bm25.threads`` or ``reranker.batch_size`` change is no tuning.
OPERATIONAL_WORDS = frozenset({"batch", "threads", "thread", "workers", "worker", "jobs", "timeout", "version",
                               "port", "retries", "retry", "device", "gpu", "gpus", "cache", "shards", "replicas",
                               "concurrency", "parallelism", "memory", "seed", "verbose", "log", "dim", "dims"})


def _same_number(old: Any, new: Any) -> bool:
    try:
        return not isinstance(old, (list, tuple)) and float(old) == float(new)
    except (TypeError, ValueError):
        return False


def looks_tunable(path: str, old: Any, new: Any) -> bool:
    """A changed key that looks like a tuning knob: a number (a numeric string, a list of numbers)
    on both sides, or on one side when the key is added, removed or null, under a key segment that
    is, or holds as a word or two (``similarity_top_k``), one of :data:`TUNING_WORDS`; not a key
    whose last segment names how the run executes (:data:`OPERATIONAL_WORDS`), and not 0.75 -> '0.75'."""
    old = ABSENT if old is None else old
    new = ABSENT if new is None else new
    if old is ABSENT and new is ABSENT:
        return False
    if not ((_numeric(old) or old is ABSENT) and (_numeric(new) or new is ABSENT)) or _same_number(old, new):
        return False
    segments = path.split(".")
    if OPERATIONAL_WORDS & set(_words(segments[-1])):
        return False
    for segment in segments:
        words = _words(segment)
        pairs = {"_".join(words[i:i + 2]) for i in range(len(words) - 1)}
        if segment.lower() in TUNING_WORDS or TUNING_WORDS & (set(words) | pairs):
            return True
    return False


#: Unknown ids kept in report.json and named in the message (the count covers all).
UNKNOWN_KEPT = 50


def _listed(ids: Sequence[str], shown: int = 5) -> str:
    return listed([repr(q) for q in ids], shown)


def _tunable(path: str, params: Sequence[str]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in params)


def tuning_check(
    universe: Sequence[str],
    changed_paths: Iterable[str],
    params: Sequence[str],
    tuning_ids: Iterable[str] | None,
    holdout_ids: Iterable[str] | None = None,
    changes: Iterable[tuple[str, Any, Any]] = (),
) -> TuningCheck:
    """``changes``: (path, old, new) of every changed config key, for the undeclared ones that
    look tunable (:func:`looks_tunable`)."""
    check = _tuning_check(universe, changed_paths, params, tuning_ids, holdout_ids)
    undeclared = tuple((path, old, new) for path, old, new in changes
                       if not _tunable(path, params) and looks_tunable(path, old, new))
    return dataclasses.replace(check, undeclared=undeclared) if undeclared else check


def _tuning_check(universe, changed_paths, params, tuning_ids, holdout_ids) -> TuningCheck:
    changed = tuple(sorted(p for p in changed_paths if _tunable(p, params)))
    if tuning_ids is None:
        warning = None
        if changed:
            warning = (f"this PR changes tunable parameters ({', '.join(changed)}) and no tuning split is declared: "
                       "values fitted on the reporting queries overstate the gain (declare tuning.queries)")
        return TuningCheck(False, tuple(params), changed, False, tuple(universe), 0, (), warning)
    tuned = set(tuning_ids)
    in_universe = set(universe)
    listed = list(dict.fromkeys([*tuning_ids, *(holdout_ids or [])]))
    unknown = tuple(q for q in listed if q not in in_universe)
    problems = []
    if not tuned & in_universe:
        problems.append(f"tuning.queries names no judged golden query ({_listed(list(tuning_ids)) or 'none'}): the "
                        "split is declared but nothing is held out from tuning")
    if unknown and tuned & in_universe:
        one = len(unknown) == 1
        problems.append(f"{counted(len(unknown), 'id', 'ids')} in the tuning split {'is' if one else 'are'} no "
                        f"judged golden query and {'was' if one else 'were'} left out: {_listed(unknown)}")
    holdout, overlap = _holdout(universe, tuned, in_universe, holdout_ids, problems)
    return TuningCheck(True, tuple(params), changed, bool(changed), holdout, len(tuned & in_universe), overlap, None,
                       unknown, tuple(problems))


def _holdout(universe: Sequence[str], tuned: set[str], in_universe: set[str], holdout_ids: Iterable[str] | None,
             problems: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The held-out queries (those of the universe not tuned on, or the declared holdout's) and the
    tuning queries also in the declared holdout; a holdout naming no judged query is a problem."""
    if holdout_ids is None:
        return tuple(q for q in universe if q not in tuned), ()
    chosen = set(holdout_ids)
    holdout = tuple(q for q in universe if q in chosen)
    overlap = tuple(sorted(tuned & chosen & in_universe, key=lambda q: q.encode()))
    if not holdout:
        problems.append(f"tuning.holdout names no judged golden query ({_listed(list(holdout_ids)) or 'none'}): "
                        "there is nothing to report on")
    return holdout, overlap
