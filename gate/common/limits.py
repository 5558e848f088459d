"""Size limits on what the readers accept, each named in the error that enforces it.

A limit is checked before anything grows with the input: a 1 MB docno is
refused while its line is still a slice of one read block, not after a
matrix as wide as the docno has been allocated for every row of the run.
The values are far above anything real data holds (TREC docnos are under 100
bytes, MS MARCO v2.1 segment ids under 50, a run line under 200 bytes) and far
below what would make memory or time unbounded.
"""

from __future__ import annotations

KIB = 1 << 10
MIB = 1 << 20

#: Query ids, document ids and chunk ids, in UTF-8 bytes.
MAX_ID_BYTES = 1 * KIB
#: One line of a run or qrels file (the sixth field onwards is ignored, but read).
MAX_TREC_LINE_BYTES = 64 * KIB
#: One line of a query file (JSONL lines carry metadata).
MAX_QUERY_LINE_BYTES = 1 * MIB
#: The text of one query, in characters (a million-token "query" is a document).
MAX_QUERY_CHARS = 64 * KIB
#: One line of a corpus file: one chunk or document.
MAX_CORPUS_LINE_BYTES = 8 * MIB
#: A config, shares, manifest, retrieval config or noise band read whole.
MAX_SMALL_FILE_BYTES = 1 * MIB
#: Files the gate writes and reads back: a baseline manifest, a noise band (one line per
#: unstable query).
MAX_RECORD_FILE_BYTES = 16 * MIB
#: A query -> stratum assignments file (a line per golden query).
MAX_ASSIGNMENTS_BYTES = 64 * MIB
#: A report.json handed to ``comment`` (per-query rows of a large golden set).
MAX_REPORT_BYTES = 64 * MIB
#: Nesting of a JSON value kept from a query's metadata, and of YAML documents.
MAX_NESTING = 64
#: The run score, rank and relevance label fields, in characters.
MAX_NUMBER_CHARS = 64
#: A measure cutoff (``nDCG@k``), ``--k-rank``, ``--k-recall``, ``judged.k``.
MAX_CUTOFF = 100_000
#: Bootstrap resamples (``--samples``, ``statistics.samples``).
MAX_SAMPLES = 1_000_000
#: Identical runs for a noise band.
MAX_REPEATS = 1_000
#: Configs in one sweep grid (each is a run).
MAX_SWEEP_CELLS = 1_024
# Chunk judgments anchored judgments may map to on one corpus (some 40 bytes each): a corpus that
# cuts judged documents into tiny chunks multiplies them (queries x chunks), and it is the PR's.
MAX_MAPPED_JUDGMENTS = 5_000_000
#: Decompressed bytes per compressed byte of a gzip file before it is taken for a bomb.
#: Real run files compress 4-10x; 200x needs a file that is almost all one byte.
MAX_GZIP_RATIO = 200
#: A gzip file may always decompress to this much, whatever its ratio.
GZIP_RATIO_FREE_BYTES = 16 * MIB
#: Seeds: numpy takes non-negative integers; 2**63 - 1 keeps them int64 in JSON readers.
MAX_SEED = (1 << 63) - 1


def describe_bytes(n: int) -> str:
    """``1 MiB``, ``64 KiB``, ``100 bytes``: for messages."""
    if n >= MIB and n % MIB == 0:
        return f"{n // MIB} MiB"
    if n >= KIB and n % KIB == 0:
        return f"{n // KIB} KiB"
    return f"{n} bytes"

#: Seconds a job may give GitHub's API in all (``--max-wait``, the Action's ``github-max-wait``):
#: an hour is far past any rate-limit reset; inf would overflow the client's watchdog timer.
MAX_GITHUB_WAIT = 3600.0


def shorten(text: str, limit: int = 40) -> str:
    """A token for a message: long ones cut (a 1 MB docno must not become a 1 MB error line)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
