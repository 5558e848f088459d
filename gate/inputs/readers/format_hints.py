"""What a query or corpus file that the gate does not read looks like, and what to give instead.

The gate reads TSV and JSON Lines (and ``irds:`` ids); classic collections ship SMART files
(``.I 1`` / ``.W`` ..., Cranfield and CISI) and TREC SGML (``<top>``, ``<DOC>``, Vaswani and the
TREC tracks). A refusal that only says "no tab" leaves the user to work that out, so the readers
append one of these hints to the line they refuse. The ``irds:`` id is named when the file's path
says which collection it is; otherwise examples are given, never a guess presented as the answer.
"""

from __future__ import annotations

import os
import re

__all__ = ["query_file_hint", "corpus_file_hint"]

_TREC_TOPIC = re.compile(r"\s*(<\?xml\b|<(top|topics|num|title|desc|narr|topic|query)\b)", re.I)
_TREC_DOC = re.compile(r"\s*<(DOC|DOCNO|TEXT)\b", re.I)
_SMART = re.compile(r"\.[IWTABXN](\s|$)")
_NPL = re.compile(r"\s*\d+\s*$")  # an id alone on its line: the NPL files Vaswani ships (id, text lines, "/")

# Path fragments of collections that ir_datasets serves, with the ids of their queries and documents.
_KNOWN = (
    (re.compile(r"vaswani|\bnpl\b", re.I), "irds:vaswani"),
    (re.compile(r"cran", re.I), "irds:cranfield"),
    (re.compile(r"dl-?19|dl-?2019|trec-dl-2019", re.I), "irds:msmarco-passage/trec-dl-2019/judged"),
    (re.compile(r"dl-?20\b|dl-?2020|trec-dl-2020", re.I), "irds:msmarco-passage/trec-dl-2020/judged"),
)
_EXAMPLES = "e.g. irds:vaswani, irds:cranfield, irds:msmarco-passage/trec-dl-2019/judged"
# Collections ir_datasets does not serve: naming an irds: id for them would send the user nowhere.
_NOT_IN_IRDS = ((re.compile(r"cisi", re.I), "CISI"),)


def _collection(path: str | os.PathLike) -> tuple[str | None, str | None]:
    """(irds id, collection ir_datasets does not serve) the file's folder and name point at."""
    name = "/".join(os.fspath(path).replace("\\", "/").split("/")[-2:])  # its folder and name, not a home dir
    for pattern, collection in _NOT_IN_IRDS:
        if pattern.search(name):
            return None, collection
    for pattern, irds_id in _KNOWN:
        if pattern.search(name):
            return irds_id, None
    return None, None


_NPL_WHAT = "the NPL format of the Vaswani collection (an id alone on a line, the text, a '/' line)"
# (what the first line looks like, what the file is, what to convert it to, the irds: id the format
# itself names); a conversion of None: the file is of another kind, and the what says so.
_QUERY_FORMS = (
    (_TREC_TOPIC, "a TREC topics file (<top> <num> <title> ..., or XML topics)",
     "one line per topic: its number, a tab, its title", None),
    (_SMART, "a SMART-format query file (.I id / .W text, as Cranfield and CISI ship theirs)",
     "one line per query: the id after .I, a tab, the .W text on one line", None),
    (_TREC_DOC, "a TREC document file (<DOC> <DOCNO> <TEXT> ...): a corpus, not queries; give it as the corpus "
     "and the queries here", None, None),
    (_NPL, _NPL_WHAT, "one line per query: its id, a tab, its text on one line", "irds:vaswani"),
)
_CORPUS_FORMS = (
    (_TREC_DOC, "a TREC document file (<DOC> <DOCNO> <TEXT> ...)",
     "one line per document: its DOCNO, a tab, its text on one line (or JSON Lines with 'id' and 'text')", None),
    (_SMART, "a SMART-format document file (.I id / .T title / .W text, as Cranfield and CISI ship theirs)",
     "one line per document: the id after .I, a tab, its title and text on one line", None),
    (_NPL, _NPL_WHAT, "one line per document: its id, a tab, its text on one line", "irds:vaswani"),
)


def _hint(line: str, path: str | os.PathLike, forms: tuple) -> str:
    for pattern, what, conversion, format_id in forms:
        if not pattern.match(line):
            continue
        if conversion is None:
            return f"; this looks like {what}"
        irds_id, unserved = _collection(path)
        if unserved is not None:
            return (f"; this looks like {what}, which the gate does not read: convert it to {conversion} "
                    f"(ir_datasets does not serve {unserved}, so no irds: id can stand in for it)")
        if format_id or irds_id:
            why = ("the format is that collection's" if format_id
                   else "the file's folder and name suggest that collection")
            advice = f"give {format_id or irds_id} ({why})"
        else:
            advice = f"give the collection's irds:<id> if ir_datasets has it ({_EXAMPLES})"
        return f"; this looks like {what}, which the gate does not read: {advice}, or convert it to {conversion}"
    return ""


def query_file_hint(line: str, path: str | os.PathLike) -> str:
    """``"; this looks like ..."`` for a query line in a format the gate does not read, else ``""``."""
    return _hint(line, path, _QUERY_FORMS)


def corpus_file_hint(line: str, path: str | os.PathLike) -> str:
    """``"; this looks like ..."`` for a corpus line in a format the gate does not read, else ``""``."""
    return _hint(line, path, _CORPUS_FORMS)
