"""``retrieval-gate factorial``: the effects of bundled changes, from the runs of every cell of
their 2^k grid."""

from __future__ import annotations

from collections.abc import Sequence

from gate.common.errors import UsageError
from gate.pipeline.result import GridReport, file_inputs
from gate.rendering.sections import render_attribution
from gate.statistics.attribution import factorial_from_runs


def cell_arguments(items: Sequence[str]) -> list[tuple[str, str]]:
    """``LEVELS=RUN`` arguments as (levels, run path)."""
    cells = []
    for item in items:
        levels, sep, path = item.rpartition("=")
        if not sep or not levels or not path:
            raise UsageError(f"--cell '{item}': expected LEVELS=RUN, e.g. model=new,corpus=old=cell.run")
        cells.append((levels, path))
    return cells


def factorial(factors: Sequence[str], cells: Sequence[tuple[str, str]], qrels: str, queries: str | None, *,
              metric: str, rel: int, samples: int, seed: int, allow_missing: bool = False,
              record_inputs: bool = True) -> GridReport:
    """The grid's effects and interactions. A grid that cannot be analysed raises
    :class:`gate.statistics.attribution.GridRefused`."""
    result = factorial_from_runs(list(factors), list(cells), qrels, queries, metric=metric,
                                 allow_missing=allow_missing, samples=samples, seed=seed, rel=rel)
    inputs = file_inputs({f"cell {levels}": path for levels, path in cells} | {"qrels": qrels}
                         | ({"queries": queries} if queries else {})) if record_inputs else {}
    return GridReport("factorial", result.metric, "attribution", result.to_dict(), inputs,
                      render_attribution(result))
