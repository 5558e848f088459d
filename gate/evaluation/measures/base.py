"""Measures as frozen values whose name is their syntax, with their registry, their parser.

A measure is written like ir_measures writes it: ``Name``, ``Name@k``,
``Name(rel=N)`` or ``Name(rel=N)@k`` (``Name@k(rel=N)`` is accepted too and
printed back in the canonical order). ``str(measure)`` is the canonical name;
``rel`` is left out when it is the default 1.

``rel`` is the binary-relevance threshold (a document is relevant when its
label is ``>= rel``). A name that does not spell ``rel`` out leaves it open:
:meth:`Measure.with_default_rel` then fills it (the config's ``golden.rel``),
while a name that fixed it (even to 1) keeps it.

Each measure lives in its own module of this package with its formula in the
docstring and registers itself with :func:`register`; :func:`parse_measure`
only consults the registry.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from gate.common.errors import InputError
from gate.common.limits import MAX_CUTOFF

if TYPE_CHECKING:  # pragma: no cover
    from gate.evaluation.measures.ranking import Ranking

#: name -> measure class, filled by :func:`register` as the modules are imported.
REGISTRY: dict[str, type[Measure]] = {}

# Common spellings from other tools, only used to suggest the right name.
_ALIASES = {
    "map": "AP",
    "ap": "AP",
    "mrr": "RR",
    "recip_rank": "RR",
    "rr": "RR",
    "ndcg": "nDCG",
    "ndcg_cut": "nDCG",
    "recall": "R",
    "r": "R",
    "precision": "P",
    "p": "P",
    "success": "Success",
    "hits": "Success",
    "judged": "Judged",
    "map_cut": "AP",
}

# trec_eval spellings with a cutoff: ndcg_cut_10, map_cut_100, P_10, recall_100, success_10.
_TREC_EVAL_CUT = re.compile(r"^(?P<family>[A-Za-z_]+?)_(?P<cutoff>\d+)$", re.ASCII)


@dataclass(frozen=True, repr=False)
class Measure:
    """One evaluation measure: a family, an optional cutoff and an optional rel.

    ``rel is None`` means the name did not fix the threshold; it behaves as 1
    until :meth:`with_default_rel` sets it. Subclasses set the class attributes
    and implement :meth:`compute`.
    """

    cutoff: int | None = None
    rel: int | None = None

    #: Family name as written in the syntax (``nDCG``, ``AP`` ...).
    NAME: ClassVar[str] = ""
    #: Whether ``(rel=N)`` is meaningful (binary measures only).
    TAKES_REL: ClassVar[bool] = True
    #: Whether ``@k`` must be given.
    NEEDS_CUTOFF: ClassVar[bool] = False

    def __post_init__(self) -> None:
        name = type(self).NAME
        if self.cutoff is not None:
            if isinstance(self.cutoff, bool) or not isinstance(self.cutoff, (int, np.integer)) or self.cutoff < 1:
                raise InputError(None, None, f"measure {name}: cutoff must be a positive integer, got {self.cutoff!r}")
            if self.cutoff > MAX_CUTOFF:
                raise InputError(None, None, f"measure {name}: cutoff {self.cutoff} is above the largest supported, "
                                 f"{MAX_CUTOFF:,} (no run ranks that deep)")
            object.__setattr__(self, "cutoff", int(self.cutoff))
        elif self.NEEDS_CUTOFF:
            raise InputError(None, None, f"measure {name} needs a cutoff, e.g. '{name}@10'")
        if self.rel is not None:
            if not self.TAKES_REL:
                raise InputError(
                    None, None,
                    f"measure {name} takes no rel (it is not a binary-relevance measure): drop '(rel={self.rel})'"
                )
            if (isinstance(self.rel, bool) or not isinstance(self.rel, (int, np.integer))
                    or not 1 <= self.rel <= 1 << 31):
                raise InputError(None, None, f"measure {name}: rel must be a positive integer, got {self.rel!r}")
            object.__setattr__(self, "rel", int(self.rel))

    # -- naming ---------------------------------------------------------------

    def __str__(self) -> str:
        text = type(self).NAME
        if self.rel is not None and self.rel != 1:
            text += f"(rel={self.rel})"
        if self.cutoff is not None:
            text += f"@{self.cutoff}"
        return text

    def __repr__(self) -> str:
        return f"parse_measure({str(self)!r})"

    @property
    def name(self) -> str:
        """The canonical name, same as ``str(self)``."""
        return str(self)

    @property
    def threshold(self) -> int:
        """The binary relevance threshold in effect (1 when the name left it open)."""
        return 1 if self.rel is None else self.rel

    def with_default_rel(self, rel: int) -> Measure:
        """This measure with ``rel`` filled in when the name did not fix it.

        Measures that take no rel (nDCG, Judged) are returned unchanged.
        """
        if not self.TAKES_REL or self.rel is not None:
            return self
        return replace(self, rel=rel)

    # -- evaluation -----------------------------------------------------------

    def compute(self, ranking: Ranking) -> np.ndarray:
        """float64 value per query of ``ranking`` (0 for queries absent from the run)."""
        raise NotImplementedError


def register(cls: type[Measure]) -> type[Measure]:
    """Class decorator: make ``cls.NAME`` parseable."""
    if not cls.NAME:
        raise ValueError(f"{cls.__name__} has no NAME")
    if cls.NAME in REGISTRY and REGISTRY[cls.NAME] is not cls:
        raise ValueError(f"measure name {cls.NAME!r} registered twice")
    REGISTRY[cls.NAME] = cls
    return cls


def known_measures() -> list[str]:
    """Registered family names, sorted case-insensitively."""
    return sorted(REGISTRY, key=str.lower)


_SYNTAX = re.compile(
    r"""^(?P<name>[A-Za-z_][A-Za-z0-9_]*?)
        (?:\(\s*rel\s*=\s*(?P<rel>[+-]?\d+)\s*\))?
        (?:@(?P<cutoff>[+-]?\d+))?
        (?:\(\s*rel\s*=\s*(?P<rel2>[+-]?\d+)\s*\))?$""",
    re.VERBOSE | re.ASCII,  # ASCII digits only: int("١٠") is 10, and nDCG@١٠ is not a name
)


def _unknown(text: str, suggestion: str | None = None) -> InputError:
    message = f"unknown measure {text!r} (known: {', '.join(known_measures())})"
    if suggestion and suggestion != text:
        message += f"; did you mean {suggestion!r}?"
    return InputError(None, None, message)


def _suggest_family(name: str) -> str | None:
    lowered = name.lower()
    by_lower = {k.lower(): k for k in REGISTRY}
    if lowered in by_lower:
        return by_lower[lowered]
    if lowered in _ALIASES and _ALIASES[lowered] in REGISTRY:
        return _ALIASES[lowered]
    close = difflib.get_close_matches(lowered, list(by_lower) + list(_ALIASES), n=1, cutoff=0.6)
    if close:
        return by_lower.get(close[0]) or _ALIASES.get(close[0])
    return None


def parse_measure(text: str | Measure) -> Measure:
    """Parse ``Name(rel=N)@k`` into its measure; a :class:`Measure` is returned as is.

    Raises :class:`InputError` ``unknown measure 'X' (known: ...)`` for unknown
    names or bad syntax (with a did-you-mean when one is close), and an
    :class:`InputError` naming the problem for a bad cutoff or a rel given to a
    measure that takes none.
    """
    if isinstance(text, Measure):
        return text
    _check_measure_text(text)
    stripped = text.strip()
    match = _SYNTAX.match(stripped)
    trec_eval = _TREC_EVAL_CUT.match(stripped)
    if trec_eval is not None:
        family = _suggest_family(trec_eval.group("family"))
        raise _unknown(text, None if family is None else f"{family}@{int(trec_eval.group('cutoff'))}")
    if match is None:
        raise _unknown(text, _broken_syntax_suggestion(stripped))
    name, rel_a, cutoff, rel_b = match.group("name", "rel", "cutoff", "rel2")
    if rel_a is not None and rel_b is not None:
        raise _unknown(text, None)
    rel_text = rel_a if rel_a is not None else rel_b
    cls = REGISTRY.get(name)
    if cls is None:
        raise _unknown(text, _unknown_name_suggestion(name, rel_text, cutoff))
    return cls(
        cutoff=None if cutoff is None else int(cutoff),
        rel=None if rel_text is None else int(rel_text),
    )


def _check_measure_text(text: object) -> None:
    """A measure name is a short printable string."""
    if not isinstance(text, str):
        raise InputError(None, None, f"a measure name must be a string, got {text!r}")
    if not text.isprintable():
        raise InputError(None, None, f"unknown measure {text[:40]!r} (a control character is in the name)")
    if len(text) > 100:
        raise InputError(None, None, f"unknown measure '{text[:40]}...' (a measure name is short: nDCG@10, "
                         "RR(rel=2)@10)")


def _broken_syntax_suggestion(stripped: str) -> str | None:
    """Which family was meant (with its cutoff) when the decoration is broken, if that can be said."""
    head = re.match(r"[A-Za-z_]+", stripped)
    suggestion = None
    if head is not None:
        family = _suggest_family(head.group(0)) if head.group(0) not in REGISTRY else head.group(0)
        tail = re.search(r"@\s*([0-9]+)", stripped)
        if family is not None:
            suggestion = family + (f"@{int(tail.group(1))}" if tail else "")
    return suggestion


def _unknown_name_suggestion(name: str, rel_text: str | None, cutoff: str | None) -> str | None:
    """The close family of an unknown name, with the rel (when it takes one) and the cutoff given."""
    family = _suggest_family(name)
    suggestion = None
    if family is not None:
        suggestion = family
        if rel_text is not None and REGISTRY[family].TAKES_REL:
            suggestion += f"(rel={int(rel_text)})"
        if cutoff is not None:
            suggestion += f"@{int(cutoff)}"
    return suggestion


def parse_measures(texts) -> list[Measure]:
    """Parse several names, dropping repeats (equal measures) and keeping the order."""
    return list(dict.fromkeys(parse_measure(text) for text in texts))
