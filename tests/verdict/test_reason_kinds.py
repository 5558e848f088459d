"""The table of kinds and reason codes (gate.verdict.kinds) holds every code the gate gives.

The comment job refuses a report whose kind disagrees with its reason codes (a pass that holds a
failing rule; a code no rule gives), by this table: a rule given a new code and not the table
would have its reports refused. So the codes are read off the gate's source, every literal a
verdict's reason is made with (``Reason("code", ...)``, ``inconclusive("code", ...)``, a claim's
``.reason("code", ...)``, ``Incommensurable("code", ...)``), and each must be in exactly one of
the table's sets; and no set keeps a code no rule gives any more.
"""

from __future__ import annotations

import ast
from pathlib import Path

from gate.verdict.kinds import (
    ACCEPTED_CODE,
    EXIT_BY_KIND,
    FAILING_CODES,
    INCONCLUSIVE_CODES,
    KINDS,
    NOTE_CODES,
    PASSING_CODES,
    SKIPPED_CODE,
)

GATE = Path(__file__).resolve().parents[2] / "gate"
#: The calls a verdict's reason code is given to, by the name called.
MAKERS = {"Reason", "inconclusive", "reason", "Incommensurable"}
SETS = {"failing": FAILING_CODES, "passing": PASSING_CODES, "inconclusive": INCONCLUSIVE_CODES, "note": NOTE_CODES,
        "skipped": frozenset({SKIPPED_CODE}), "accepted": frozenset({ACCEPTED_CODE})}


def _given_codes() -> dict[str, list[str]]:
    """Every literal code a reason is made with in gate/, and where."""
    found: dict[str, list[str]] = {}
    for path in sorted(GATE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            first = node.args[0]
            if name in MAKERS and isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.setdefault(first.value, []).append(f"{path.relative_to(GATE.parent)}:{node.lineno}")
    return found


def test_every_code_the_gate_gives_is_in_exactly_one_set():
    given = _given_codes()
    assert len(given) >= 25, sorted(given)  # the scan sees the rules
    placed = {code: [name for name, codes in SETS.items() if code in codes] for code in given}
    assert {code: sets for code, sets in placed.items() if len(sets) != 1} == {}


def test_no_set_keeps_a_code_no_rule_gives():
    given = set(_given_codes())
    assert {name: sorted(codes - given) for name, codes in SETS.items() if codes - given} == {}


def test_the_sets_are_apart_and_every_kind_has_an_exit_code():
    every = [code for codes in SETS.values() for code in codes]
    assert len(every) == len(set(every))
    assert set(EXIT_BY_KIND) == set(KINDS)


def test_the_scan_sees_a_code_given_to_a_maker():
    tree = ast.parse('Reason("made_up", "x")\nclaims.reason("other", "y")\nf("not_a_code")\n')
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    names = [n.func.id if isinstance(n.func, ast.Name) else n.func.attr for n in calls]
    assert [name for name in names if name in MAKERS] == ["Reason", "reason"]
