"""The demo world: a fictional API product's documentation site, with two corpus snapshots.

Beside the snapshots, a golden set that grew between two versions.

The scenario: a pull request swaps the embedding model of a hybrid retriever
(``lsa-128`` -> ``lsa-char-256``, see :mod:`gate.runs.reference`) and, in
the same fortnight, the ingestion parser was fixed (``v1`` dropped HTML
tables, ``v2`` keeps their rows), the golden set grew from 80 to 140 queries,
and the docs team published a "questions people ask" page holding nine golden
queries verbatim. Each of those moves nDCG@10; the demo lets the gate take
them apart.

:func:`build_world` writes, deterministically from ``seed`` (one numpy
Generator drives every choice; no set or hash order is ever iterated):

``site.jsonl``
    the page sources, one page per line (``slug``, ``title``, ``kind``,
    ``html``). Pages are HTML-ish: an ``<h1>`` title, then ``<section id=..>``
    blocks holding ``<h2>`` headings, ``<p>`` paragraphs, ``<pre><code>``
    snippets and ``<table>`` blocks. API reference, limits and pricing pages,
    error pages (``429 Too Many Requests``, ``ERR_WEBHOOK_SIGNATURE``-style
    codes, generated codes such as ``E4127``), migration guides (v2 -> v3),
    how-to guides, SDK pages, changelog entries, tutorials. Limits, quotas and
    prices live in ``<table>`` rows only; the prose next to a table describes
    them loosely (:data:`gate.demo.text.LIMIT_ATTRIBUTES`).
``corpus-v1.jsonl`` / ``corpus-v2.jsonl``
    the corpus snapshot produced by ingestion parser ``v1`` and ``v2`` (JSONL
    ``{"id", "doc_id", "title", "text", "start_char_idx", "end_char_idx"}``,
    ``doc_id`` the page slug, the offsets ``[start, end)`` the chunk's range in
    the page's source: ``site.jsonl``'s ``html`` for that slug). Parser ``v1``
    makes one chunk per source section, id ``<page slug>#<section id>``, range
    the section's body; it has the bug: it drops ``<table>`` content, so a
    section that only holds a table yields no chunk. Parser ``v2`` keeps every
    row as a line of text (``hourly request limit | 1000 | 10000 | ...``) and
    chunks differently (:func:`_pack`): it cuts the page into pieces (a heading
    with the sentence after it, each sentence, each code block, each table) and
    packs them in order into chunks of at most :data:`CHUNK_CHARS` characters,
    ids ``<page slug>#p1``, ``#p2``, ...: long sections are split, short
    neighbours joined, and no v1 boundary survives, so chunk-id judgments of
    v1 name nothing in v2. The FAQ page ``faq/common-questions`` was published
    in the same fortnight as the parser fix: only the ``v2`` snapshot holds it,
    so the leak is new in the pull request.
``judgments-v4.jsonl`` / ``judgments-v5.jsonl``
    the golden sets' judgments anchored to the sources (the demo's golden
    qrels, :func:`_anchored`): doc-level where the judgment is about the page,
    spans over the body of the section that answers otherwise; the gate maps
    them onto each snapshot's own chunks.
``golden-v4.jsonl`` / ``qrels-v4.txt``
    the archived golden set: 80 queries (``q_0001`` .. ``q_0080``), judged on
    the old snapshot: no table chunk and no FAQ chunk was in that pool (the
    prose next to a table carries the best grade of an entity-attribute
    query) and fewer chunks were judged per query.
``golden-v5.jsonl`` / ``qrels-v5.txt``
    (the ``qrels`` files: the same judgments keyed by v1 chunk ids, kept to
    show what chunk-id qrels would do to the re-chunked side) the current
    golden set: 140 queries (v4's 80 plus 60 new ones) in six
    strata, with graded judgments (0-3) derived from the world's ground truth
    (which page and chunk answers which question). Nine of them occur
    verbatim in the FAQ page, which the labeller judged useful (grade 2).
``strata.yml``
    the strata block of a gate config: traffic shares (22/18/15/6/31/8 %) and
    the guarded strata.
``retrieval-old.yml`` / ``retrieval-new.yml``
    retrieval configs for the reference runner: the archived baseline (old
    embedding model, parser v1) and the pull request (new model, parser v2).

Strata and what their queries look like:

* ``navigational``: name a page ("PHP client message templates docs",
  "april 22 2022 release notes");
* ``error_string``: carry a literal error string;
* ``entity_attribute``: ask for a limit, quota or price, answered by a table
  row ("what is the max event size on the enterprise plan");
* ``migration``: moving an integration from API v2 to v3;
* ``how_to``: tasks answered by a guide's steps;
* ``tail``: odd, specific questions answered by one chunk.

How the golden set is chosen. Every golden query is made from the ground
truth by a template; the effects the demo shows come from what the two
embedding models really do with those queries: the character n-gram model
matches the loosely worded prose next to a missing table (entity-attribute
queries on the v1 snapshot) and reworded migration questions, and blurs page
names, codes and numbers that differ in a few characters. Those effects vary
a lot from query to query, so a 140-query sample drawn at random tells the
story only on average. The world therefore generates a pool of candidate
queries (:data:`POOL_FACTOR` per golden query), runs the reference retriever
on them (a pilot: both models on both snapshots, averaged over
:data:`PILOT_SEEDS`, which include the seed of the demo's grid runs), and keeps, per
stratum, the candidates whose mean effects come closest to
:data:`STORY_TARGETS` (the strata move in opposite directions: the new model
costs the guarded navigational and error-string queries 0.2 to 0.35 of nDCG@10
on average, on either snapshot, and helps entity-attribute queries mostly on v1,
where their table is missing; in the guarded strata the selection also aims at
the comparison the gate makes, new model on v2 against old model on v1:
:data:`HEADLINE_TARGETS`). The demo's own runs are fresh measurements on
that set (its noise repeats use other seeds); ``calibrate=False`` draws the set
at random instead.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gate.checks.leakage import find_leaks
from gate.common.atomic import write_text_atomic
from gate.demo import text as T
from gate.demo.pilot_cache import lookup, pilot_key, store
from gate.evaluation.evaluate import evaluate
from gate.inputs.anchoring import map_judgments
from gate.inputs.readers.anchored import AnchoredJudgments, Judgment
from gate.inputs.readers.records import Chunk, Qrels, Query, Run
from gate.runs.reference import retrieve, settings_from_config

__all__ = [
    "STRATA",
    "SHARES",
    "V5_COUNTS",
    "V4_QUERIES",
    "FAQ_SLUG",
    "LEAKED_COUNT",
    "World",
    "build_world",
    "parse_page",
]

STRATA = ("navigational", "error_string", "entity_attribute", "migration", "how_to", "tail")
SHARES = {"navigational": 0.22, "error_string": 0.18, "entity_attribute": 0.15, "migration": 0.06,
          "how_to": 0.31, "tail": 0.08}
GUARDED = ("navigational", "error_string")
# 140 queries apportioned to the shares (largest remainders).
V5_COUNTS = {"navigational": 31, "error_string": 25, "entity_attribute": 21, "migration": 8,
             "how_to": 44, "tail": 11}
V4_QUERIES = 80
FAQ_SLUG = "faq/common-questions"
LEAKED_COUNT = 9
# Strata the FAQ page's leaked questions are drawn from, in order.
_LEAK_STRATA = ("entity_attribute", "entity_attribute", "error_string", "error_string", "how_to", "how_to",
                "how_to", "migration", "tail")


# --------------------------------------------------------------------------- records


@dataclass
class Table:
    caption: str
    header: list[str]
    rows: list[list[str]]


@dataclass
class Section:
    sid: str
    heading: str
    paragraphs: list[str] = field(default_factory=list)
    code: str | None = None
    table: Table | None = None


@dataclass
class Page:
    slug: str
    title: str
    kind: str
    sections: list[Section]
    resource: int | None = None

    def section(self, sid: str) -> Section:
        for s in self.sections:
            if s.sid == sid:
                return s
        raise KeyError(f"{self.slug}#{sid}")

    def chunk(self, sid: str) -> str:
        return f"{self.slug}#{sid}"


@dataclass
class GoldenQuery:
    stratum: str
    text: str
    v5: dict[str, int]  # chunk id -> grade (0..3)
    v4: dict[str, int]  # chunk id -> grade, as judged on the old snapshot
    leakable: bool = False  # phrased as a question an FAQ page would carry
    answer: str = ""  # the FAQ answer, when leaked
    query_id: str = ""
    kind: str = ""  # which template made it (diagnostics)


@dataclass(frozen=True)
class World:
    """What :func:`build_world` wrote, with the counts the demo and its tests check."""

    root: Path
    seed: int
    scale: float
    site: Path
    corpus_v1: Path
    corpus_v2: Path
    golden_v4: Path
    qrels_v4: Path
    golden_v5: Path
    qrels_v5: Path
    strata: Path
    retrieval_old: Path
    retrieval_new: Path
    pages: int  # in the source site (the FAQ page included)
    chunks_v1: int
    chunks_v2: int
    queries_v4: int
    queries_v5: int
    qrels_v4_rows: int
    qrels_v5_rows: int
    table_chunks: int  # chunks of v2 that hold table rows (absent from v1)
    # The golden sets' judgments anchored to pages and spans of the sources (the demo's golden qrels).
    judgments_v4: Path
    judgments_v5: Path
    judgments_v4_rows: int
    judgments_v5_rows: int
    leaked_query_ids: tuple[str, ...]
    # Per stratum, the mean model effect (v1, v2) the golden queries (the leaked ones aside) had in the pilot.
    pilot: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    # Where the pilot's scores came from: "cached" (gate.demo.pilot_cache), "computed", or "none" (no calibration).
    pilot_source: str = "none"
    faq_page: str = FAQ_SLUG
    shares: Mapping[str, float] = field(default_factory=lambda: dict(SHARES))
    strata_counts: Mapping[str, int] = field(default_factory=lambda: dict(V5_COUNTS))

    def corpus(self, parser: str) -> Path:
        return {"v1": self.corpus_v1, "v2": self.corpus_v2}[parser]


# --------------------------------------------------------------------------- helpers


class _Res:
    """A resource of the product with its word forms."""

    def __init__(self, index: int, entry: tuple[str, str, str, str, tuple[str, ...]]):
        self.index = index
        self.slug, self.s, self.p, self.family, self.topics = entry
        self.a = "an" if self.s[0] in "aeiou" else "a"
        self.P = self.p[0].upper() + self.p[1:]
        self.S = self.s[0].upper() + self.s[1:]
        self.code = "ERR_" + self.s.upper().replace(" ", "_").replace("-", "_")
        self.trap = False  # set when another resource's name looks like this one's (see _build_site)
        self.ident = self.p.replace(" ", "_").replace("-", "_")


class _Gen:
    def __init__(self, seed: int, scale: float):
        self.rng = np.random.default_rng(seed)
        self.scale = scale

    def pick(self, seq: Sequence[Any]) -> Any:
        return seq[int(self.rng.integers(len(seq)))]

    def sample(self, seq: Sequence[Any], k: int) -> list[Any]:
        k = min(k, len(seq))
        idx = self.rng.choice(len(seq), size=k, replace=False)
        return [seq[int(i)] for i in idx]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def count(self, base: float, minimum: int = 1) -> int:
        return max(minimum, int(round(base * self.scale)))


def _fill(template: str, r: _Res, g: _Gen, **extra: str) -> str:
    t, t2 = g.sample(r.topics, 2)
    values = {"s": r.s, "p": r.p, "P": r.P, "S": r.S, "a": r.a, "t": t, "t2": t2, "product": T.PRODUCT,
              "lang": g.pick(T.SDK_LANGS)[1]}
    values.update(extra)
    return template.format(**values)


def _sentences(templates: Sequence[str], r: _Res, g: _Gen, n: int, **extra: str) -> str:
    return " ".join(_fill(tpl, r, g, **extra) for tpl in g.sample(templates, n))


def _prose(r: _Res, g: _Gen, n: int = 3) -> str:
    return _sentences(T.PROSE_TEMPLATES, r, g, n)


def _fmt(value: float, unit: str) -> str:
    if unit == "USD":
        return "free" if value == 0 else (f"${value:g}")
    text = f"{int(value)}" if float(value).is_integer() else f"{value:g}"
    return f"{text} {unit}".strip()


# --------------------------------------------------------------------------- pages


def _reference_page(r: _Res, g: _Gen) -> Page:
    t = r.topics
    secs = [
        Section("c1", "Overview", [_prose(r, g, 3)]),
        Section("c2", f"The {r.s} object", [
            f"A {r.s} has an id, a {t[0]}, a {t[1]} and a {t[2]}, plus created and updated timestamps. "
            + _prose(r, g, 1)]),
        Section("c3", f"Create {r.a} {r.s}", [
            f"POST /v1/{r.slug} creates {r.a} {r.s}. Send the {t[0]} and an optional {t[3]} in the body. "
            + _prose(r, g, 1)], code=f"client.{r.ident}.create({t[0].replace('-', '_')}=...)"),
        Section("c4", f"Retrieve {r.a} {r.s}", [
            f"GET /v1/{r.slug}/{{id}} returns the {r.s} with its {t[1]} and {t[4]}. " + _prose(r, g, 1)]),
        Section("c5", f"List {r.p}", [
            f"GET /v1/{r.slug} lists {r.p}, newest first, with cursor pagination and a {t[2]} filter. "
            + _prose(r, g, 1)]),
        Section("c6", f"Update {r.a} {r.s}", [
            f"PATCH /v1/{r.slug}/{{id}} changes the {t[3]} or the {t[5]} of {r.a} {r.s}. " + _prose(r, g, 1)]),
        Section("c7", f"Delete {r.a} {r.s}", [
            f"DELETE /v1/{r.slug}/{{id}} removes the {r.s}; the {t[4]} is kept for thirty days. " + _prose(r, g, 1)]),
    ]
    return Page(f"reference/{r.slug}", f"{r.P} API reference", "reference", secs, r.index)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _loose(table: Sequence[tuple[Any, ...]], indexes: Sequence[int], r: _Res) -> str:
    return " ".join(_cap(table[i][3].format(s=r.s, p=r.p, S=r.S, P=r.P)) + "." for i in indexes)


def _limits_page(r: _Res, g: _Gen, attrs: list[int], rate_attrs: list[int]) -> Page:
    """Limits and quotas: prose next to two tables (limits by plan, rate limits).

    The prose describes every row loosely (:data:`gate.demo.text.LIMIT_ATTRIBUTES`)
    and avoids the rows' and queries' words in their exact form.
    """

    def rows(indexes: list[int]) -> list[list[str]]:
        out = []
        for i in indexes:
            label, unit, ladder, _ = T.LIMIT_ATTRIBUTES[i]
            factor = g.pick((1, 1, 2, 5))
            out.append([label.format(s=r.s, p=r.p)] + [_fmt(v * factor, unit) for v in ladder])
        return out

    header = ["limit"] + list(T.PLANS)
    secs = [
        Section("c1", "Overview", [
            f"Every {r.s} ceiling depends on the plan of the account. "
            + _loose(T.LIMIT_ATTRIBUTES, attrs, r) + " The figures for each tier follow."]),
        Section("c2", "", table=Table(f"{r.P} limits by plan", header, rows(attrs))),
        Section("c3", "Throttling", [
            _loose(T.LIMIT_ATTRIBUTES, rate_attrs, r) + " The rate depends on the plan. A throttled call answers "
            "429 Too Many Requests with a "
            "Retry-After header; wait that many seconds before retrying."]),
        Section("c4", "", table=Table(f"{r.P} rate limits", header, rows(rate_attrs))),
        Section("c5", "Asking for more", [
            f"Enterprise accounts can ask support to raise any {r.s} ceiling. " + _prose(r, g, 2)]),
        Section("c6", "Watching usage", [
            f"The usage view charts {r.s} consumption against each ceiling and warns at eighty percent. "
            + _prose(r, g, 1)]),
    ]
    return Page(f"reference/{r.slug}-limits", f"{r.P} limits and quotas", "limits", secs, r.index)


def _pricing_page(r: _Res, g: _Gen, attrs: list[int]) -> Page:
    header = ["item"] + list(T.PLANS)
    rows = []
    for i in attrs:
        label, unit, ladder, _ = T.PRICING_ATTRIBUTES[i]
        rows.append([label.format(s=r.s, p=r.p)] + [_fmt(v, unit) for v in ladder])
    secs = [
        Section("c1", "How billing works", [
            f"Charges for {r.s} usage depend on the plan of the account. "
            + _loose(T.PRICING_ATTRIBUTES, attrs, r) + " Amounts are in US dollars."]),
        Section("c2", "", table=Table(f"{r.P} pricing by plan", header, rows)),
        Section("c3", "Invoices and proration", [
            f"Metered {r.s} usage appears as a line on the invoice. " + _prose(r, g, 2)]),
        Section("c4", "Estimating cost", [
            f"The cost calculator in the console projects next month's {r.s} bill from the last thirty days. "
            + _prose(r, g, 1)]),
    ]
    return Page(f"pricing/{r.slug}", f"{r.P} pricing", "pricing", secs, r.index)


def _concept_page(r: _Res, g: _Gen) -> Page:
    t = r.topics
    heads = ["What it is", f"{r.S} lifecycle", f"{t[0].capitalize()} and {t[1]}", "Scoping and access",
             "Design notes", "See also"]
    secs = [Section(f"c{i + 1}", h, [_prose(r, g, 3)]) for i, h in enumerate(heads)]
    return Page(f"concepts/{r.slug}", f"How {r.p} work", "concept", secs, r.index)


def _guide_page(r: _Res, g: _Gen, task: tuple[str, str, str, tuple[str, ...]]) -> Page:
    slug, title_tpl, purpose_tpl, _ = task
    title = _fill(title_tpl, r, g)
    action = title[0].lower() + title[1:]
    purpose = _fill(purpose_tpl, r, g)
    steps = g.sample(T.STEP_TEMPLATES, 3)
    secs = [
        Section("c1", "Before you start", [
            f"This guide walks through it: {action} in {T.PRODUCT}, so that you can {purpose}. "
            + _prose(r, g, 1)]),
        Section("c2", "Prerequisites", [
            f"You need an api key with write access to {r.p} and a project to work in."]),
        Section("c3", "Steps", [
            f"To {action}: " + " ".join(f"{k + 1}. " + _fill(s, r, g) for k, s in enumerate(steps))]),
        Section("c4", "Example", [f"A {g.pick(T.SDK_LANGS)[1]} client example: {action} in one call."],
                code=f"client.{r.ident}.{slug.replace('-', '_')}(project=PROJECT_ID)"),
        Section("c5", "Checking the result", [
            "The activity view shows whether the change took effect. " + _prose(r, g, 1)]),
        Section("c6", "Troubleshooting", [
            f"If the call fails, the body names an error code; {r.code}_{g.pick(T.ERROR_CONDITIONS)[0]} "
            f"is the most common one here. " + _prose(r, g, 1)]),
        Section("c7", "Variations", ["Other ways to do it: " + _prose(r, g, 1)]),
        Section("c8", "Next steps", [f"Related guides about {r.p}: " + _prose(r, g, 1)]),
    ]
    return Page(f"guides/{r.slug}-{slug}", title, "guide", secs, r.index)


def _named_error_page(r: _Res, g: _Gen, cond: tuple[str, str, str, str], status: int) -> Page:
    suffix, desc, cause, fix = cond
    code = f"{r.code}_{suffix}"
    f = dict(s=r.s, p=r.p)
    secs = [
        Section("c1", "What it means", [
            f"{code} is returned with status {status} when {desc.format(**f)}. " + _prose(r, g, 1)]),
        Section("c2", "Common causes", [f"Usually {cause.format(**f)}. " + _prose(r, g, 1)]),
        Section("c3", "How to fix it", [f"To resolve it, {fix.format(**f)}. " + _prose(r, g, 1)]),
        Section("c4", "Example response", ["The error body carries the code, a message and a request id."],
                code=f'{{"error": {{"code": "{code}", "status": {status:d}}}}}'),
        Section("c5", "Related", [_prose(r, g, 2)]),
    ]
    return Page(f"errors/{code.lower().replace('_', '-')}", code, "error", secs, r.index)


def _numeric_error_page(r: _Res, g: _Gen, code: str, meaning: str) -> Page:
    secs = [
        Section("c1", "What it means", [
            f"Error {code} means {meaning.format(s=r.s, p=r.p)}. " + _prose(r, g, 1)]),
        Section("c2", "Common causes", [_prose(r, g, 2)]),
        Section("c3", "How to fix it", [
            f"Check the {g.pick(r.topics)} of the {r.s} and send the request again. " + _prose(r, g, 1)]),
        Section("c4", "Example response", ["The body repeats the code next to a human readable message."],
                code=f'{{"error": {{"code": "{code}"}}}}'),
        Section("c5", "Related", [_prose(r, g, 2)]),
    ]
    return Page(f"errors/{code.lower()}", f"Error {code}", "error", secs, r.index)


def _http_error_page(code: int, reason: str, meaning: str, g: _Gen, res: list[_Res]) -> Page:
    r = g.pick(res)
    secs = [
        Section("c1", "What it means", [f"{code} {reason}: {meaning}. " + _prose(r, g, 1)]),
        Section("c2", "What to do", [
            "Read the error code in the body; it narrows the cause down. "
            + ("Honour the Retry-After header and back off exponentially. " if code == 429 else "")
            + _prose(g.pick(res), g, 1)]),
        Section("c3", "Which endpoints return it", [
            "Any endpoint can return it, for example the "
            + ", ".join(x.p for x in g.sample(res, 4)) + " endpoints. " + _prose(g.pick(res), g, 1)]),
        Section("c4", "Client libraries", [
            "The official clients raise a typed exception for it and retry where it is safe. "
            + _prose(g.pick(res), g, 1)]),
    ]
    return Page(f"errors/http-{code}", f"{code} {reason}", "error", secs, None)


def _migration_page(r: _Res, g: _Gen) -> Page:
    t = r.topics
    secs = [
        Section("c1", "Overview", [
            f"Version 3 of the {r.p} api supersedes the v2 endpoints, whose deprecation is under way. "
            f"Migrating keeps {r.p} integrations supported."]),
        Section("c2", "What changed", [
            f"In version 3 the {t[0]} of {r.p} moved into a nested object and the {t[1]} field was renamed."]),
        Section("c3", "Breaking changes", [
            f"Migrations break {r.p} callers reading the legacy {t[2]} field or relying on offset pagination."]),
        Section("c4", "Migration steps", [
            f"Move one {r.p} workload at a time: switch the base path to /v3/{r.slug}, map the renamed "
            f"fields, then compare responses side by side."]),
        Section("c5", "Before and after", ["The same call against both versions."],
                code=f"GET /v2/{r.slug}  ->  GET /v3/{r.slug}"),
        Section("c6", "Rolling back", [
            f"Until retirement, both versions read the same {r.p}, so a migrated service can switch back."]),
        Section("c7", "Timeline", [
            f"The v2 {r.p} endpoints stop accepting new integrations first and are switched off later."]),
    ]
    return Page(f"migrate/{r.slug}-v2-to-v3", f"Migrating {r.p} from v2 to v3", "migration", secs, r.index)


def _sdk_page(r: _Res, lang: tuple[str, str], g: _Gen) -> Page:
    key, name = lang
    t = r.topics
    secs = [
        Section("c1", "Install", [f"Install the {name} client, then create it with your api key. "
                                  + _prose(r, g, 1)]),
        Section("c2", f"Creating {r.p}", [f"In {name}, {r.p} are created through client.{r.ident}. "
                                          + _prose(r, g, 1)], code=f"client.{r.ident}.create({t[0]}=...)"),
        Section("c3", f"Listing {r.p}", [f"The {name} client iterates over every page of {r.p} for you. "
                                         + _prose(r, g, 1)]),
        Section("c4", "Errors", ["Failures raise an exception carrying the error code and the request id. "
                                 + _prose(r, g, 1)]),
        Section("c5", "Retries and timeouts", [f"The {name} client retries idempotent calls with backoff. "
                                               + _prose(r, g, 1)]),
        Section("c6", "Async usage", [f"An async variant exposes the same {r.s} methods. " + _prose(r, g, 1)]),
        Section("c7", "Types", [f"The {r.s} model has typed {t[1]} and {t[2]} attributes. " + _prose(r, g, 1)]),
    ]
    return Page(f"sdk/{key}/{r.slug}", f"{r.P} with the {name} SDK", "sdk", secs, r.index)


def _changelog_page(day: int, g: _Gen, res: list[_Res]) -> Page:
    year = 2022 + day // 336
    month = (day // 28) % 12
    date = f"{year}-{month + 1:02d}-{day % 28 + 1:02d}"
    secs = []
    for i in range(5):
        r = g.pick(res)
        secs.append(Section(f"c{i + 1}", r.P, [_sentences(T.CHANGELOG_TEMPLATES, r, g, 2), _prose(r, g, 1)]))
    title = f"Changelog {T.MONTHS[month].capitalize()} {day % 28 + 1}, {year}"
    return Page(f"changelog/{date}", title, "changelog", secs, None)


def _tutorial_page(i: int, g: _Gen, res: list[_Res]) -> Page:
    a, b = g.sample(res, 2)
    lang = g.pick(T.SDK_LANGS)[1]
    secs = []
    for k in range(8):
        r = a if k % 2 == 0 else b
        secs.append(Section(f"c{k + 1}", f"Part {k + 1}", [_prose(r, g, 3)]))
    title = f"Tutorial: {a.p} and {b.p} in {lang} ({i + 1})"
    return Page(f"tutorials/{a.slug}-with-{b.slug}-{i + 1}", title, "tutorial", secs, a.index)


# --------------------------------------------------------------------------- site


@dataclass
class _Site:
    res: list[_Res]
    pages: list[Page]
    by_slug: dict[str, Page]
    limits_rows: list[tuple[int, str, str, int]]  # (resource, page slug, table sid, attribute)
    pricing_rows: list[tuple[int, str, str, int]]
    named_errors: list[tuple[int, str, str]]  # (resource, code, slug)
    numeric_errors: list[tuple[int, str, str]]
    guides: list[tuple[int, int, str]]  # (resource, task index, slug)
    changelogs: list[str]
    res_by_index: dict[int, _Res] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.res_by_index = {r.index: r for r in self.res}

    def traps(self) -> list[_Res]:
        return [r for r in self.res if r.trap] or self.res

    def plain(self) -> list[_Res]:
        return [r for r in self.res if not r.trap] or self.res


@dataclass
class _SiteParts:
    """The site's pages and ground-truth rows as :func:`_build_site` makes them, resource by resource."""
    pages: list[Page] = field(default_factory=list)
    limits_rows: list[tuple[int, str, str, int]] = field(default_factory=list)
    pricing_rows: list[tuple[int, str, str, int]] = field(default_factory=list)
    named_errors: list[tuple[int, str, str]] = field(default_factory=list)
    numeric_errors: list[tuple[int, str, str]] = field(default_factory=list)
    guides: list[tuple[int, int, str]] = field(default_factory=list)
    used_codes: set[str] = field(default_factory=set)  # generated error codes, each used once


def _build_site(g: _Gen) -> _Site:
    all_res = [_Res(i, e) for i, e in enumerate(T.RESOURCES)]
    n_res = min(len(all_res), max(16, int(round(len(all_res) * g.scale))))
    res = sorted(g.sample(all_res, n_res), key=lambda x: x.index) if n_res < len(all_res) else all_res
    parts = _SiteParts()
    n_tasks = min(len(T.HOWTO_TASKS), g.count(len(T.HOWTO_TASKS), 5))
    n_named = min(len(T.ERROR_CONDITIONS), g.count(11, 4))
    n_numeric = g.count(6, 2)
    n_langs = min(len(T.SDK_LANGS), g.count(8, 2))
    for r in res:
        _add_resource_pages(r, g, parts, n_tasks=n_tasks, n_named=n_named, n_numeric=n_numeric, n_langs=n_langs)
    pages = parts.pages
    for status, reason, meaning in T.HTTP_ERRORS:
        pages.append(_http_error_page(status, reason, meaning, g, res))
    changelogs = []
    for day in sorted(g.sample(list(range(336 * 3)), g.count(600, 10))):
        cp = _changelog_page(day, g, res)
        pages.append(cp)
        changelogs.append(cp.slug)
    for i in range(g.count(185, 4)):
        pages.append(_tutorial_page(i, g, res))
    # Resources whose names share a word stem with another resource's ("message" /
    # "message batch" / "messaging channel"): where a surface-form match is a trap.
    for r in res:
        stems = {w[:5] for w in r.s.split()}
        r.trap = any(x is not r and stems & {w[:5] for w in x.s.split()} for x in res)
    by_slug = {p.slug: p for p in pages}
    return _Site(res, pages, by_slug, parts.limits_rows, parts.pricing_rows, parts.named_errors,
                 parts.numeric_errors, parts.guides, changelogs)


def _add_resource_pages(r: _Res, g: _Gen, parts: _SiteParts, *, n_tasks: int, n_named: int, n_numeric: int,
                        n_langs: int) -> None:
    """A resource's pages, in the order the generator draws them: reference, limits (and pricing),
    concept, migration, guides, named and numeric error pages, SDK pages."""
    parts.pages.append(_reference_page(r, g))
    order = [int(i) for i in g.rng.permutation(len(T.LIMIT_ATTRIBUTES))]
    rate = [i for i in order if T.LIMIT_ATTRIBUTES[i][0] in ("api rate limit", "hourly request limit")]
    plain = [i for i in order if i not in rate][:2]
    lp = _limits_page(r, g, plain, rate)
    parts.pages.append(lp)
    parts.limits_rows += [(r.index, lp.slug, "c2", i) for i in plain] + [(r.index, lp.slug, "c4", i) for i in rate]
    if r.family in T.PRICED_FAMILIES:
        attrs = sorted(g.sample(list(range(len(T.PRICING_ATTRIBUTES))), 3))
        pp = _pricing_page(r, g, attrs)
        parts.pages.append(pp)
        parts.pricing_rows += [(r.index, pp.slug, "c2", i) for i in attrs]
    parts.pages.append(_concept_page(r, g))
    parts.pages.append(_migration_page(r, g))
    for ti in sorted(g.sample(list(range(len(T.HOWTO_TASKS))), n_tasks)):
        gp = _guide_page(r, g, T.HOWTO_TASKS[ti])
        parts.pages.append(gp)
        parts.guides.append((r.index, ti, gp.slug))
    for cond in g.sample(T.ERROR_CONDITIONS, n_named):
        ep = _named_error_page(r, g, cond, g.pick((400, 404, 409, 413, 422, 429)))
        parts.pages.append(ep)
        parts.named_errors.append((r.index, ep.title, ep.slug))
    fam = g.pick(T.NUMERIC_FAMILIES)
    for _ in range(n_numeric):
        while True:
            code = f"E{fam}{int(g.rng.integers(10, 100))}"
            if code not in parts.used_codes:
                break
        parts.used_codes.add(code)
        ep = _numeric_error_page(r, g, code, g.pick(T.NUMERIC_MEANINGS))
        parts.pages.append(ep)
        parts.numeric_errors.append((r.index, code, ep.slug))
    for lang in T.SDK_LANGS[:n_langs]:
        parts.pages.append(_sdk_page(r, lang, g))


# --------------------------------------------------------------------------- queries


def _grades(page: Page, first: int, others: int) -> dict[str, int]:
    """The page's first chunk graded ``first``, every other chunk ``others``."""
    out = {page.chunk(sec.sid): others for sec in page.sections}
    out[page.chunk(page.sections[0].sid)] = first
    return out


def _navigational(site: _Site, g: _Gen) -> GoldenQuery:
    kind = g.pick(("reference", "reference", "sdk", "sdk", "sdk", "sdk", "changelog", "changelog", "changelog"))
    res = g.pick(site.traps())
    if kind == "reference":
        page = site.by_slug[f"reference/{res.slug}"]
        text = g.pick((f"{res.p} api docs", f"{res.p} endpoints reference docs", f"api reference page {res.p}",
                       f"docs for the {res.p} api"))
        siblings = [f"reference/{x.slug}" for x in site.res if x.family == res.family and x is not res]
    elif kind == "sdk":
        sdk = [p for p in site.pages if p.kind == "sdk" and p.resource == res.index]
        page = g.pick(sdk)
        lang = page.title.rsplit(" with the ", 1)[1].replace(" SDK", "")
        text = g.pick((f"{lang} sdk {res.p} page", f"{res.p} docs for {lang} sdk", f"{lang} client {res.p} docs"))
        siblings = [p.slug for p in sdk if p is not page][:2]
    else:
        page = site.by_slug[g.pick(site.changelogs)]
        year, month, day = page.slug.split("/")[1].split("-")
        text = g.pick((f"{T.MONTHS[int(month) - 1]} {int(day)} {year} release notes",
                       f"release notes {year}-{month}-{day}"))
        siblings = [s for s in site.changelogs if s.startswith(f"changelog/{year}-{month}") and s != page.slug][:2]
    grades = _grades(page, 3, 2)
    for sib in siblings[:2]:
        if sib in site.by_slug:
            grades.setdefault(site.by_slug[sib].chunk("c1"), 0)
    v4 = {k: v for k, v in grades.items() if v >= 1}
    return GoldenQuery("navigational", text, grades, dict(list(v4.items())[:2]), kind=f"nav-{kind}")


_NAMED_ERROR_QUERIES = (
    "{code} when {doing}", "getting {code} from the {p} endpoint", "{p} failing with {code}",
    "what does {code} mean for {p}", "{code} after deploying", "{code} in production only",
)
_NUMERIC_ERROR_QUERIES = (
    "error {code} on {s} create", "{code} after upgrading the client", "{p} call returns {code}",
    "what is error {code}",
)
_HTTP_ERROR_QUERIES = (
    "{status} when {doing}", "getting {status} from the {p} api", "{p} endpoint keeps returning {status}",
)
_DOING = ("creating {p}", "listing {p}", "updating {a} {s}", "sending {p} in a loop", "deleting {p}")


def _error_string(site: _Site, g: _Gen) -> GoldenQuery:
    kind = g.pick(("named", "numeric", "numeric", "http", "http"))
    make = {"named": _named_error_query, "numeric": _numeric_error_query, "http": _http_error_query}[kind]
    text, grades, leakable = make(site, g)
    v4 = {k: v for k, v in grades.items() if v >= 2}
    return GoldenQuery("error_string", text, grades, v4, leakable=leakable, kind=f"err-{kind}")


def _named_error_query(site: _Site, g: _Gen) -> tuple[str, dict[str, int], bool]:
    """A query carrying a named error code (``ERR_WEBHOOK_SIGNATURE``-style): its text, grades and
    whether an FAQ page would carry it."""
    ri, code, slug = g.pick([e for e in site.named_errors if site.res_by_index[e[0]].trap] or site.named_errors)
    r = site.res_by_index[ri]
    tpl = g.pick(_NAMED_ERROR_QUERIES)
    doing = _fill(g.pick(_DOING), r, g)
    text = tpl.format(code=code, doing=doing, p=r.p, s=r.s)
    page = site.by_slug[slug]
    grades = {page.chunk("c1"): 3, page.chunk("c2"): 2, page.chunk("c3"): 2, page.chunk("c4"): 1}
    sibs = [s for _, c, s in site.named_errors if c.startswith(r.code) and s != slug]
    for s in g.sample(sibs, 2):
        grades.setdefault(site.by_slug[s].chunk("c1"), 0)
    return text, grades, tpl.startswith("what does")


def _numeric_error_query(site: _Site, g: _Gen) -> tuple[str, dict[str, int], bool]:
    """A query carrying a generated error code (``E4127``), as :func:`_named_error_query`."""
    ri, code, slug = g.pick(site.numeric_errors)
    r = site.res_by_index[ri]
    tpl = g.pick(_NUMERIC_ERROR_QUERIES)
    text = tpl.format(code=code, p=r.p, s=r.s)
    page = site.by_slug[slug]
    grades = {page.chunk("c1"): 3, page.chunk("c3"): 2, page.chunk("c2"): 1}
    sibs = [s for _, c, s in site.numeric_errors if c[:3] == code[:3] and s != slug]
    for s in g.sample(sibs, 2):
        grades.setdefault(site.by_slug[s].chunk("c1"), 0)
    return text, grades, tpl.startswith("what is")


def _http_error_query(site: _Site, g: _Gen) -> tuple[str, dict[str, int], bool]:
    """A query carrying an HTTP status (``429 Too Many Requests``), as :func:`_named_error_query`."""
    often = [e for e in T.HTTP_ERRORS if e[0] == 429] * 2  # the status people search for most
    code, reason, _ = g.pick([e for e in T.HTTP_ERRORS if e[0] in (401, 403, 409, 413, 503)] + often)
    r = g.pick(site.res)
    tpl = g.pick(_HTTP_ERROR_QUERIES)
    doing = _fill(g.pick(_DOING), r, g)
    text = tpl.format(status=f"{code} {reason}", doing=doing, p=r.p)
    page = site.by_slug[f"errors/http-{code}"]
    grades = {page.chunk("c1"): 3, page.chunk("c2"): 2, page.chunk("c3"): 1}
    if code == 429:
        grades[f"reference/{r.slug}-limits#c3"] = 2
    return text, grades, code == 429


_COUNT_QUERIES = ("how many {label} on the {plan} plan", "{label} on the {plan} tier", "{label} {plan} plan")
_VALUE_QUERIES = ("what is the {label} on the {plan} plan", "{label} for the {plan} tier", "{label} {plan} plan")
_RATE_QUERIES = ("{p} {label} on the {plan} plan", "what is the {label} for {p} on {plan}", "{p} {label} {plan} tier")
_PRICE_QUERIES = ("{label} on the {plan} plan", "how much is the {label} for {plan}", "{plan} tier {label}")


def _entity_attribute(site: _Site, g: _Gen) -> GoldenQuery:
    priced = bool(site.pricing_rows) and g.chance(0.3)
    ri, slug, sid, attr = g.pick(site.pricing_rows if priced else site.limits_rows)
    r = site.res_by_index[ri]
    plan = g.pick(T.PLANS[1:])
    page = site.by_slug[slug]
    raw = (T.PRICING_ATTRIBUTES if priced else T.LIMIT_ATTRIBUTES)[attr][0]
    label = raw.format(s=r.s, p=r.p)
    if priced:
        if "{" not in raw:
            label = f"{r.p} {label}"
        tpl = g.pick(_PRICE_QUERIES)
        prose = "c1"
    else:
        if "{" not in raw:
            tpl = g.pick(_RATE_QUERIES)
        elif " per " in raw or raw.startswith("concurrent"):
            tpl = g.pick(_COUNT_QUERIES)
        else:
            tpl = g.pick(_VALUE_QUERIES)
        prose = "c1" if sid == "c2" else "c3"
    text = tpl.format(label=label, plan=plan, p=r.p)
    # The labeller graded the table 3 and the prose next to it 2 (it says the
    # limit exists and how it scales); the old pool had no table chunk at all.
    grades = {page.chunk(sid): 3, page.chunk(prose): 2}
    v4 = {page.chunk(prose): 2}
    leakable = text.startswith(("how many", "what is", "how much"))
    kind = "price" if priced else ("rate" if "{" not in raw else "limit")
    return GoldenQuery("entity_attribute", text, grades, v4, leakable=leakable, kind=f"ent-{kind}")


_MIGRATION_QUERIES = (
    "migrate {s} integration from v2 to v3", "upgrading {s} calls to the v3 api", "{s} v3 breaking change list",
    "how do i migrate {s} code off v2", "deprecated v2 {s} endpoint what now",
)


def _migration(site: _Site, g: _Gen) -> GoldenQuery:
    r = g.pick(site.res)
    page = site.by_slug[f"migrate/{r.slug}-v2-to-v3"]
    tpl = g.pick(_MIGRATION_QUERIES)
    text = tpl.format(p=r.p, s=r.s)
    grades = _grades(page, 3, 1)
    grades[page.chunk("c3")] = grades[page.chunk("c4")] = 2
    v4 = {page.chunk("c1"): 3, page.chunk("c4"): 2}
    return GoldenQuery("migration", text, grades, v4, leakable=tpl.startswith("how do i"),
                       kind=f"mig-{_MIGRATION_QUERIES.index(tpl)}")


def _how_to(site: _Site, g: _Gen) -> GoldenQuery:
    plain = {r.index for r in site.plain()}
    options = [x for x in site.guides if x[0] in plain]
    if len(options) < 4 * V5_COUNTS["how_to"]:  # a small site: guides of every resource
        options = site.guides
    ri, ti, slug = g.pick(options)
    r = site.res_by_index[ri]
    phr = g.pick(T.HOWTO_TASKS[ti][3])
    text = _fill(phr, r, g)
    page = site.by_slug[slug]
    grades = {page.chunk(sec.sid): 1 for sec in page.sections}
    grades[page.chunk("c3")], grades[page.chunk("c1")] = 3, 2
    ref = site.by_slug.get(f"reference/{r.slug}")
    if ref is not None:
        grades[ref.chunk("c1")] = 1
    v4 = {page.chunk("c3"): 3, page.chunk("c1"): 2}
    return GoldenQuery("how_to", text, grades, v4, leakable=text.startswith(("how", "why")), kind="how")


def _tail(site: _Site, g: _Gen) -> GoldenQuery:
    r = g.pick(site.plain())
    lang = g.pick(T.SDK_LANGS)[1]
    x = g.pick(r.topics)
    question, answer = g.pick(T.TAIL_TEMPLATES)
    kind = f"tail-{T.TAIL_TEMPLATES.index((question, answer))}"
    text = question.format(s=r.s, p=r.p, a=r.a, x=x, lang=lang)
    candidates = [p for p in site.pages if p.resource == r.index and p.kind in ("sdk", "guide", "concept")]
    page = g.pick(candidates)
    sec = g.pick(page.sections[1:])
    sec.paragraphs.append(answer.format(s=r.s, p=r.p, P=r.P, a=r.a, x=x, lang=lang))
    grades = {page.chunk(other.sid): 1 for other in page.sections}
    grades[page.chunk(sec.sid)] = 3
    v4 = {page.chunk(sec.sid): 3}
    return GoldenQuery("tail", text, grades, v4, leakable=text.startswith(("can", "is there", "does")), kind=kind)


_MAKERS = {"navigational": _navigational, "error_string": _error_string, "entity_attribute": _entity_attribute,
           "migration": _migration, "how_to": _how_to, "tail": _tail}


# --------------------------------------------------------------------------- rendering and parsing


def render_page(page: Page) -> str:
    out = [f"<article data-kind=\"{page.kind}\"><h1>{html.escape(page.title)}</h1>"]
    for s in page.sections:
        out.append(f"<section id=\"{s.sid}\">")
        if s.heading:
            out.append(f"<h2>{html.escape(s.heading)}</h2>")
        for p in s.paragraphs:
            out.append(f"<p>{html.escape(p)}</p>")
        if s.code is not None:
            out.append(f"<pre><code>{html.escape(s.code)}</code></pre>")
        if s.table is not None:
            t = s.table
            out.append(f"<table><caption>{html.escape(t.caption)}</caption>")
            out.append("<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in t.header) + "</tr>")
            for row in t.rows:
                out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
            out.append("</table>")
        out.append("</section>")
    out.append("</article>")
    return "\n".join(out)


_TITLE = re.compile(r"<h1>(.*?)</h1>", re.S)
_SECTION = re.compile(r"<section id=\"([^\"]+)\">(.*?)</section>", re.S)
_TABLE = re.compile(r"<table>(.*?)</table>", re.S)
_CAPTION = re.compile(r"<caption>(.*?)</caption>", re.S)
_ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
_CELL = re.compile(r"<t[hd]>(.*?)</t[hd]>", re.S)
_BLOCK_END = re.compile(r"</(?:h2|p|pre|caption|tr)>")
_TAG = re.compile(r"<[^>]+>")
PARSERS = ("v1", "v2")


def _table_text(body: str) -> str:
    """A table's text under parser v2: its caption, then one line ``cell | cell | ...`` per row."""
    lines = []
    caption = _CAPTION.search(body)
    if caption:
        lines.append(caption.group(1).strip())
    for row in _ROW.findall(body):
        lines.append(" | ".join(c.strip() for c in _CELL.findall(row)))
    return html.unescape("\n".join(lines))


@dataclass(frozen=True)
class SourceChunk:
    """One chunk a parser makes of a page: its key (the part of the chunk id after ``#``), its text and
    its character offsets ``[start, end)`` in the page's source (``site.jsonl``'s ``html``)."""

    key: str
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class _Piece:
    """What the v2 chunker packs: a heading with the sentence after it, a sentence, a code block or a
    table, with its source offsets; ``glue`` joins it to the piece before it in one chunk."""

    text: str
    start: int
    end: int
    glue: str


_BLOCK = re.compile(r"<(h2|p|pre|table)>(.*?)</\1>", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# The v2 chunker's size bound (characters of chunk text): sections run 90 to 380 characters, so
# the bound both splits long sections (between sentences) and joins short neighbouring ones.
CHUNK_CHARS = 240


def section_ranges(source: str) -> dict[str, tuple[int, int]]:
    """Per section id, the character offsets ``[start, end)`` of the section's body in the page source
    (between ``<section id=..>`` and ``</section>``): what a span judgment of that section covers."""
    return {m.group(1): (m.start(2), m.end(2)) for m in _SECTION.finditer(source)}


def parse_page(source: str, parser: str) -> tuple[str, list[SourceChunk]]:
    """(title, chunks) of one page source under ingestion parser ``v1`` or ``v2``.

    ``v1`` makes one chunk per section (key: the section id, offsets: the section's body) and drops
    every ``<table>`` (the bug); a section left without text yields no chunk. ``v2`` keeps each table
    row as a line ``cell | cell | ...`` after the caption and chunks by size (:func:`_pack`): keys
    ``p1``, ``p2``, ... in page order, boundaries that move against v1's.
    """
    if parser not in PARSERS:
        raise ValueError(f"unknown ingestion parser {parser!r} (known: {', '.join(PARSERS)})")
    title_match = _TITLE.search(source)
    title = html.unescape(title_match.group(1)).strip() if title_match else ""
    if parser == "v2":
        return title, _pack([piece for m in _SECTION.finditer(source) for piece in _pieces(m, source)])
    chunks = []
    for m in _SECTION.finditer(source):
        body = _TABLE.sub("", m.group(2))
        body = _BLOCK_END.sub("\n", body)
        body = html.unescape(_TAG.sub("", body))
        lines = [" ".join(line.split()) for line in body.split("\n")]
        text = "\n".join(line for line in lines if line)
        if text:
            chunks.append(SourceChunk(m.group(1), text, m.start(2), m.end(2)))
    return title, chunks


def _pieces(section: re.Match, source: str) -> list[_Piece]:
    """The pieces of one section in source order: a heading glued to the sentence that follows it,
    each sentence of a paragraph, each code block, each table (caption and rows, one piece)."""
    out: list[_Piece] = []
    heading: tuple[str, int] | None = None
    for m in _BLOCK.finditer(source, section.start(2), section.end(2)):
        tag, inner, at = m.group(1), m.group(2), m.start(2)
        if tag == "h2":
            heading = (" ".join(html.unescape(inner).split()), m.start())
            continue
        if tag == "table":
            parts = [(_table_text(inner), m.start(), m.end())]
        elif tag == "pre":
            parts = [(html.unescape(_TAG.sub("", inner)).strip(), m.start(), m.end())]
        else:
            cuts = [0] + [c.end() for c in _SENTENCE_END.finditer(inner)] + [len(inner)]
            parts = [(" ".join(html.unescape(inner[a:b]).split()), at + a, at + b) for a, b in zip(cuts, cuts[1:])]
        for k, (text, start, end) in enumerate(p for p in parts if p[0]):
            glue = " " if tag == "p" and k > 0 else "\n"
            if heading is not None:
                text, start, heading = f"{heading[0]}\n{text}", heading[1], None
            out.append(_Piece(text, start, end, glue))
    return out


def _pack(pieces: list[_Piece]) -> list[SourceChunk]:
    """Parser v2's chunks: the page's pieces packed in order, a new chunk whenever the next piece would
    take the current one past :data:`CHUNK_CHARS` (a piece longer than that is a chunk of its own)."""
    chunks: list[SourceChunk] = []
    text, start, end = "", 0, 0
    for piece in pieces:
        if text and len(text) + len(piece.glue) + len(piece.text) > CHUNK_CHARS:
            chunks.append(SourceChunk(f"p{len(chunks) + 1}", text, start, end))
            text = ""
        if text:
            text, end = text + piece.glue + piece.text, piece.end
        else:
            text, start, end = piece.text, piece.start, piece.end
    if text:
        chunks.append(SourceChunk(f"p{len(chunks) + 1}", text, start, end))
    return chunks


# --------------------------------------------------------------------------- the world


def _faq_page(leaked: list[GoldenQuery], g: _Gen, site: _Site) -> tuple[Page, dict[str, str]]:
    fillers = [q.format(product=T.PRODUCT.lower()) for q in T.FAQ_FILLER_QUESTIONS]
    n = len(fillers) + len(leaked)
    slots = sorted(int(i) for i in g.rng.choice(np.arange(3, n + 1), size=len(leaked), replace=False))
    sections, where = [], {}
    fill_iter = iter(fillers)
    leak_iter = iter(leaked)
    for k in range(1, n + 1):
        if k in slots:
            q = next(leak_iter)
            question, answer = q.text, q.answer
            where[q.query_id] = f"{FAQ_SLUG}#q{k}"
        else:
            question = next(fill_iter)
            r = g.pick(site.res)
            answer = _prose(r, g, 1)
        sections.append(Section(f"q{k}", question, [answer]))
    return Page(FAQ_SLUG, "Common questions", "faq", sections, None), where


def _faq_answer(q: GoldenQuery, site: _Site) -> str:
    best = max(q.v5, key=lambda c: (q.v5[c], c))
    slug = best.split("#")[0]
    page = site.by_slug.get(slug)
    name = page.title if page is not None else slug
    return f"Short answer from support: see {name}, which covers this in detail."


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def _anchored(query_id: str, judged: Mapping[str, int], pages: Mapping[str, Page],
              ranges: Mapping[str, dict[str, tuple[int, int]]]) -> list[dict[str, Any]]:
    """One query's judgments anchored to its pages: what the labeller judged, in source coordinates.

    Per judged page: a page whose every section is judged is judged as a page (doc-level, at its
    lowest grade: a navigational answer, a guide read whole) plus spans for the sections graded
    above that; a page judged only at its first section, 0, is a page found not to answer (a
    sibling with a similar name): doc-level 0; any other judgment is a span over the section's
    body (``ranges``, :func:`section_ranges` of the page's source)."""
    by_page: dict[str, dict[str, int]] = {}
    for chunk_id, grade in sorted(judged.items()):
        slug, sid = chunk_id.split("#", 1)
        by_page.setdefault(slug, {})[sid] = grade
    rows: list[dict[str, Any]] = []
    for slug, grades in by_page.items():
        sids = [sec.sid for sec in pages[slug].sections]
        floor: int | None = None
        if set(grades) == set(sids):
            floor = min(grades.values())
        elif list(grades.items()) == [(sids[0], 0)]:
            floor = 0
        if floor is not None:
            rows.append({"query_id": query_id, "doc_id": slug, "grade": floor})
        for sid in sids:
            if sid in grades and (floor is None or grades[sid] > floor):
                start, end = ranges[slug][sid]
                rows.append({"query_id": query_id, "doc_id": slug, "start": start, "end": end, "grade": grades[sid]})
    return rows


def mapped_judgments(rows: Sequence[Mapping[str, Any]], chunks: Sequence[Chunk]) -> dict[str, dict[str, int]]:
    """Anchored judgment rows (as :func:`_anchored` writes them) mapped onto one snapshot's chunks by the
    gate's own rule (:func:`gate.inputs.anchoring.map_judgments`): query -> chunk id -> grade."""
    judgments = AnchoredJudgments("golden judgments", tuple(
        Judgment(r["query_id"], r["grade"], doc_id=r["doc_id"], start=r.get("start"), end=r.get("end"))
        for r in rows))
    return {qid: dict(graded) for qid, graded in map_judgments(judgments, chunks).qrels.judgments.items()}


def _qrels_text(queries: list[GoldenQuery], which: str) -> str:
    lines = []
    for q in queries:
        judged = q.v5 if which == "v5" else q.v4
        for chunk, grade in sorted(judged.items()):
            lines.append(f"{q.query_id} 0 {chunk} {grade}")
    return "\n".join(lines) + "\n"


RETRIEVAL_OLD = {
    "embedding": {"model": "lsa-128", "dim": 128},
    "ingestion": {"parser": "v1"},
    "bm25": {"k1": 1.2, "b": 0.75},
    "fusion": {"k": 10, "weight": 0.4},
    "ann": {"ef_search": 128},
    "retrieve": {"depth": 100},
}
RETRIEVAL_NEW = {**RETRIEVAL_OLD, "embedding": {"model": "lsa-char-256", "dim": 256}, "ingestion": {"parser": "v2"}}


def _yaml(data: Mapping[str, Any]) -> str:
    lines = []
    for key, value in data.items():
        if isinstance(value, Mapping):
            lines.append(f"{key}:")
            lines += [f"  {k}: {v}" for k, v in value.items()]
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines) + "\n"


# What the pilot runs aim each stratum's golden queries at (the leaked ones left
# out: the gate reports without them): the mean change in nDCG@10 from the old
# to the new embedding model, on the old (v1) and the new (v2) snapshot.
#
# The guarded strata must be shown damaged by the gate's stratum test (the
# bounded-mean test of gate.statistics.strata, Holm-adjusted across the six
# strata), which assumes nothing but that a per-query change lies in [-1, 1]: n
# queries that each lost d are shown only when (1 + d)^-n < p/2, p Holm's level
# at the stratum's rank (0.05/6, 0.05/5, 0.05/4, ...; entity_attribute, p about
# 0.001, takes the first). So navigational (31 queries, p < 0.01 or 0.0125)
# needs a mean loss of about 0.19 and error_string (23 reporting queries) about
# 0.26, more where the losses are spread; the old guarded targets (-0.13 on v2)
# were shown by the bootstrap, not by this test. The new model's damage to a
# query is much the same on either snapshot (per query, the changes on v1 and v2
# correlate at 0.85-0.95), so the guarded targets are equal on v1 and v2 and the
# interaction comes from entity_attribute, whose missing table the new model's
# loose prose match stands in for on v1 only. With the stratum sizes the targets
# add up to about -0.08 overall on v1 and -0.11 on v2 (an interaction of about
# -0.03); the tables fix (about +0.55 on entity_attribute, the corpus factor)
# brings the gate's headline (new model on v2 against old model on v1) back to
# about -0.01 to -0.03: a mean near zero, no regression shown, over 40% of
# traffic damaged and 15% improved.
#
# Measured (seed 7; the pilot judges each snapshot through the anchored
# judgments mapped onto its own chunks, a relevant passage a snapshot lacks still
# counted as relevant): at scale 0.25 (the tests' demo, 2,000 samples) the
# selection reaches the navigational targets (-0.25 on v1 and v2) but not the
# error-string ones (-0.25 on v1, -0.18 on v2; the comparison the gate makes
# -0.35, see HEADLINE_TARGETS); the gate measures navigational -0.249 and
# error_string -0.323, Holm p 0.020 both. At scale 1.0 (the default demo) badly
# hurt guarded candidates are rarer and the selection stops short, at about
# -0.19 and -0.26 in the pilot (the comparisons -0.23 and -0.35); the gate
# measures -0.223 and -0.349, Holm p 0.017 and 0.012. Fresh runs land near the
# pilot, give or take the ANN noise (a few thousandths overall, a few hundredths
# in the small strata: at scale 0.25, error_string's comparison lands 0.03 short).
STORY_TARGETS: dict[str, tuple[float, float]] = {
    "navigational": (-0.25, -0.25),
    "error_string": (-0.35, -0.35),
    "entity_attribute": (0.26, 0.05),
    "migration": (0.07, 0.07),
    "how_to": (0.0, 0.0),
    "tail": (0.0, 0.0),
}
# What the gate compares in a guarded stratum (new model on v2 against old model on
# v1: the model effect plus the re-chunking's) the selection also aims at. Since
# v2 re-chunked the pages, the new model costs error-string queries less on v2
# (at scale 0.25 no 23 candidates average below about -0.22 there), and the
# re-chunking costs the old model some of them: aiming at the model effects
# alone left the comparison the gate makes at -0.21 in the tests' demo, not
# shown damaged (Holm p 0.12). Error_string aims past its story target because
# the pilot's mean over three index seeds overstates what one fresh run loses
# (aiming at -0.35 reached -0.31 in the pilot and -0.27, Holm p 0.052, in the gate).
HEADLINE_TARGETS: dict[str, float] = {"navigational": -0.25, "error_string": -0.45}
# Candidate queries per golden query, per stratum. The guarded strata need the
# far tail of the new model's damage: at scale 1.0 about one candidate in 35
# loses 0.2 or more (13 of 496 navigational, 47 of 1,598 error-string ones),
# hence their large pools (at small scales the makers run out of distinct
# error-string queries first: 960 at 0.25). The extra candidates cost a fresh
# pilot about 8 s (twelve index builds stay most of it) and the default demo,
# whose pilot is cached, about 2 s of candidate making, leak checks and selection.
POOL_FACTOR = {"navigational": 16, "error_string": 64, "entity_attribute": 8, "migration": 8, "how_to": 3, "tail": 4}


def _candidates(site: _Site, g: _Gen) -> list[GoldenQuery]:
    """A pool of distinct candidate queries per stratum, none of them (nearly) verbatim in the corpus.

    "Nearly verbatim" is what the gate's own leakage check says (exact and
    trigram-Jaccard modes, default threshold): only the FAQ page may leak.
    """
    pool: list[GoldenQuery] = []
    texts: set[str] = set()
    for stratum in STRATA:
        want = POOL_FACTOR[stratum] * V5_COUNTS[stratum]
        made = 0
        for _ in range(want * 20):
            q = _MAKERS[stratum](site, g)
            if q.text in texts:
                continue
            texts.add(q.text)
            q.query_id = f"p_{len(pool) + 1:04d}"
            pool.append(q)
            made += 1
            if made == want:
                break
    chunks = []  # built after the candidates: tail candidates add their answer to a page
    for page in site.pages:
        source = render_page(page)
        for parser in PARSERS:  # the snapshots chunk differently: a query may match one only
            title, parsed = parse_page(source, parser)
            chunks += [Chunk(page.chunk(f"{parser}-{c.key}"), page.slug, f"{title} {c.text}") for c in parsed]
    leaks = find_leaks([Query(q.query_id, q.text) for q in pool], chunks).matched_ids()
    pool = [q for q in pool if q.query_id not in leaks]
    for stratum in STRATA:
        if sum(1 for q in pool if q.stratum == stratum) < V5_COUNTS[stratum]:
            raise RuntimeError(f"cannot phrase {V5_COUNTS[stratum]} distinct {stratum} queries at this scale")
    return pool


# Repeat seeds the pilot averages over (HNSW insertion orders). Seed 0 is the
# seed of the demo's own grid and candidate runs, so the headline cells are
# calibrated; the two others keep the selection from chasing that one index's
# noise. The demo's noise repeats run with other seeds: fresh draws.
PILOT_SEEDS = (101, 102, 0)
# Mean nDCG@10 of the old configuration on v2 the selection leans towards, per
# stratum (a weak preference next to the targets above).
LEVELS = {"navigational": 0.72, "error_string": 0.80, "entity_attribute": 0.70, "migration": 0.50,
          "how_to": 0.58, "tail": 0.58}
LEVEL_WEIGHT = 0.01


def _pilot(pool: list[GoldenQuery], corpora: Mapping[str, Path],
           judged: Mapping[str, Mapping[str, dict[str, int]]]) -> dict[tuple[str, str], np.ndarray]:
    """nDCG@10 of every candidate under the four (model, snapshot) cells of the reference retriever.

    The settings of :data:`RETRIEVAL_OLD` / :data:`RETRIEVAL_NEW`, each snapshot judged with the
    candidates' v5 judgments mapped onto its own chunks (``judged``: parser -> query -> chunk ->
    grade), averaged over :data:`PILOT_SEEDS`.
    """
    ids = [q.query_id for q in pool]
    qrels_of = {parser: Qrels("pilot", {qid: dict(judged[parser].get(qid, {})) for qid in ids}) for parser in PARSERS}
    queries = [(q.query_id, q.text) for q in pool]
    cells = [(label, config, parser) for label, config in (("old", RETRIEVAL_OLD), ("new", RETRIEVAL_NEW))
             for parser in PARSERS]
    totals = {(label, parser): np.zeros(len(ids)) for label, _, parser in cells}
    for seed in PILOT_SEEDS:  # seed by seed: the last indexes built (seed 0) stay cached for the demo
        for label, config, parser in cells:
            settings = settings_from_config({**config, "ingestion": {"parser": parser}}, "pilot")
            results = retrieve(settings, queries, str(corpora[parser]), seed)
            run = Run.from_rankings("pilot", {qid: dict(rows) for qid, rows in results.items()})
            totals[(label, parser)] += np.asarray(evaluate(run, qrels_of[parser], ["nDCG@10"], ids)["nDCG@10"])
    scores = {key: total / len(PILOT_SEEDS) for key, total in totals.items()}
    return scores


def _pilot_cells() -> list[tuple[str, str]]:
    return [(label, parser) for label in ("old", "new") for parser in PARSERS]


def _calibration(pool: list[GoldenQuery], corpora: Mapping[str, Path],
                 judged: Mapping[str, Mapping[str, dict[str, int]]],
                 cache: str) -> tuple[dict[tuple[str, str], np.ndarray], str]:
    """The pilot's scores: from :mod:`gate.demo.pilot_cache` when its fingerprint of these inputs matches
    (``cache="use"``), else computed; ``cache="refresh"`` computes and stores them, ``"off"`` only computes."""
    # Keyed by the judgments as mapped onto each snapshot: what the pilot scores with.
    key = pilot_key([(q.query_id, q.text, {f"{parser}:{chunk}": grade for parser in PARSERS
                                           for chunk, grade in judged[parser].get(q.query_id, {}).items()})
                     for q in pool], corpora,
                    {"old": RETRIEVAL_OLD, "new": RETRIEVAL_NEW}, PILOT_SEEDS)
    if cache == "use":
        found = lookup(key, _pilot_cells(), len(pool))
        if found is not None:
            return found, "cached"
    scores = _pilot(pool, corpora, judged)
    if cache == "refresh":
        store(key, scores, label="default demo world")
    return scores, "computed"


def _select(pool: list[GoldenQuery], forced: list[GoldenQuery], scores: dict[tuple[str, str], np.ndarray] | None,
            g: _Gen, reached: dict[str, tuple[float, float]]) -> list[GoldenQuery]:
    """The golden set: per stratum, ``V5_COUNTS`` candidates (the forced ones included) whose mean
    model effects on v1 and v2 (the forced ones left out) come closest to :data:`STORY_TARGETS`, leaning towards
    :data:`LEVELS` (seeded start, then swaps while the cost falls). Without pilot scores,
    a seeded random draw."""
    index = {q.query_id: i for i, q in enumerate(pool)}
    chosen: list[GoldenQuery] = []
    for stratum in STRATA:
        members = [q for q in pool if q.stratum == stratum]
        must = [q for q in forced if q.stratum == stratum]
        free = [q for q in members if q not in must]
        need = V5_COUNTS[stratum] - len(must)
        start = [free[int(i)] for i in g.rng.permutation(len(free))[:need]]
        if scores is None:
            chosen += must + start
            continue
        picked, reached[stratum] = _closest_to_story(stratum, members, free, start, scores, index)
        chosen += must + picked
    return chosen


def _closest_to_story(stratum: str, members: list[GoldenQuery], free: list[GoldenQuery], start: list[GoldenQuery],
                      scores: dict[tuple[str, str], np.ndarray],
                      index: Mapping[str, int]) -> tuple[list[GoldenQuery], tuple[float, float]]:
    """The stratum's free candidates, from ``start``, swapped one for another while the distance of
    their mean model effects to :data:`STORY_TARGETS` falls; with the mean effects (v1, v2) reached."""
    rows = np.array([index[q.query_id] for q in members])
    d1 = (scores[("new", "v1")] - scores[("old", "v1")])[rows]
    d2 = (scores[("new", "v2")] - scores[("old", "v2")])[rows]
    headline = (scores[("new", "v2")] - scores[("old", "v1")])[rows]
    level = scores[("old", "v2")][rows]
    t1, t2 = STORY_TARGETS[stratum]
    pos = {q.query_id: k for k, q in enumerate(members)}
    current = [pos[q.query_id] for q in start]
    others = [pos[q.query_id] for q in free if q not in start]

    def cost(sel: list[int]) -> float:
        # The leaked queries are in the set but not in the aim: the gate reports without them.
        aimed = (d1[sel].mean() - t1) ** 2 + (d2[sel].mean() - t2) ** 2
        if stratum in HEADLINE_TARGETS:
            aimed += (headline[sel].mean() - HEADLINE_TARGETS[stratum]) ** 2
        return aimed + LEVEL_WEIGHT * (level[sel].mean() - LEVELS[stratum]) ** 2

    best = cost(current)
    improved = True
    while improved:
        improved = False
        for i in range(len(current)):
            for j in range(len(others)):
                trial = current[:i] + [others[j]] + current[i + 1:]
                c = cost(trial)
                if c < best - 1e-12:
                    current[i], others[j] = others[j], current[i]
                    best, improved = c, True
    return [members[k] for k in sorted(current)], (float(d1[current].mean()), float(d2[current].mean()))


def _leak(pool: list[GoldenQuery], g: _Gen, site: _Site) -> tuple[list[GoldenQuery], Page]:
    """The nine leaked candidates (one per :data:`_LEAK_STRATA` entry, phrased as an FAQ would
    when one is) and the FAQ page that holds them verbatim, each judged useful (grade 2) there."""
    leaked: list[GoldenQuery] = []
    for stratum in _LEAK_STRATA:
        options = [q for q in pool if q.stratum == stratum and q.leakable and q not in leaked]
        if not options:
            options = [q for q in pool if q.stratum == stratum and q not in leaked]
        leaked.append(g.pick(options))
    for q in leaked:
        q.answer = _faq_answer(q, site)
    faq, where = _faq_page(leaked, g, site)
    for q in leaked:
        q.v5[where[q.query_id]] = 2
    return leaked, faq


def _write_site(out: Path, pages: list[Page]) -> tuple[dict[str, list[Chunk]], int]:
    """``site.jsonl`` and the two corpus snapshots; the chunks of each snapshot and the number of v2
    chunks that hold table rows."""
    sources = [(p, render_page(p)) for p in pages]
    _write_jsonl(out / "site.jsonl", [{"slug": p.slug, "title": p.title, "kind": p.kind, "html": src}
                                      for p, src in sources])
    located: dict[str, list[Chunk]] = {}
    table_chunks = 0
    for parser in PARSERS:
        rows: list[dict[str, Any]] = []
        for p, src in sources:
            if parser == "v1" and p.slug == FAQ_SLUG:
                continue  # published after the old snapshot was taken
            title, chunks = parse_page(src, parser)
            for c in chunks:
                rows.append({"id": p.chunk(c.key), "doc_id": p.slug, "title": title, "text": c.text,
                             "start_char_idx": c.start, "end_char_idx": c.end})
                if parser == "v2" and " | " in c.text:
                    table_chunks += 1
        _write_jsonl(out / f"corpus-{parser}.jsonl", rows)
        located[parser] = [Chunk(r["id"], r["doc_id"], r["text"], r["start_char_idx"], r["end_char_idx"])
                           for r in rows]
    return located, table_chunks


def _query_rows(items: list[GoldenQuery]) -> list[dict[str, Any]]:
    return [{"query_id": q.query_id, "text": q.text, "stratum": q.stratum} for q in items]


def _write_anchored(path: Path, items: list[GoldenQuery], which: str, pages: Mapping[str, Page],
                    ranges: Mapping[str, dict[str, tuple[int, int]]]) -> int:
    """A golden set's judgments anchored to pages and spans (:func:`_anchored`), as JSON Lines; the rows."""
    rows = [row for q in items for row in _anchored(q.query_id, q.v5 if which == "v5" else q.v4, pages, ranges)]
    _write_jsonl(path, rows)
    return len(rows)


def _write_golden_sets(out: Path, v4: list[GoldenQuery], v5: list[GoldenQuery]) -> tuple[str, str]:
    """Both golden sets and their qrels (returned as written: v4's, v5's), the strata block and
    the two retrieval configs."""
    _write_jsonl(out / "golden-v4.jsonl", _query_rows(v4))
    _write_jsonl(out / "golden-v5.jsonl", _query_rows(v5))
    qrels_v4, qrels_v5 = _qrels_text(v4, "v4"), _qrels_text(v5, "v5")
    write_text_atomic(out / "qrels-v4.txt", qrels_v4)
    write_text_atomic(out / "qrels-v5.txt", qrels_v5)
    strata_lines = ["strata:", "  shares:"] + [f"    {s}: {SHARES[s]}" for s in STRATA]
    strata_lines.append("  guarded: [" + ", ".join(GUARDED) + "]")
    write_text_atomic(out / "strata.yml", "\n".join(strata_lines) + "\n")
    write_text_atomic(out / "retrieval-old.yml", _yaml(RETRIEVAL_OLD))
    write_text_atomic(out / "retrieval-new.yml", _yaml(RETRIEVAL_NEW))
    return qrels_v4, qrels_v5


def build_world(out_dir: str | Path, seed: int = 7, scale: float = 1.0, *, calibrate: bool = True,
                pilot_cache: str = "use") -> World:
    """Generate the demo world into ``out_dir`` (created if needed) and describe it.

    ``calibrate`` (default) picks the golden set from a pool of candidates by
    running the reference retriever on them (needs the ``reference`` extra);
    ``calibrate=False`` draws it at random (same files otherwise).
    ``pilot_cache``: ``use`` (default) takes the pilot's scores from the cache
    when its fingerprint of the inputs matches, ``refresh`` recomputes and
    stores them, ``off`` recomputes (see :mod:`gate.demo.pilot_cache`).
    """
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    if pilot_cache not in ("use", "refresh", "off"):
        raise ValueError(f"pilot_cache must be use, refresh or off, got {pilot_cache!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    g = _Gen(seed, scale)
    site = _build_site(g)

    # Candidates, made from the ground truth; none may occur verbatim in the corpus.
    pool = _candidates(site, g)

    # The leak: nine candidates (they will be golden queries), copied into the FAQ page.
    leaked, faq = _leak(pool, g, site)
    # No other candidate may (nearly) match the FAQ page: the leak is exactly these nine.
    faq_chunks = [Chunk(faq.chunk(c.key), faq.slug, f"{title} {c.text}")
                  for title, parsed in [parse_page(render_page(faq), "v2")] for c in parsed]
    near = find_leaks([Query(q.query_id, q.text) for q in pool if q not in leaked], faq_chunks).matched_ids()
    pool = [q for q in pool if q.query_id not in near]

    # Files: the site and its two snapshots.
    pages = site.pages + [faq]
    located, table_chunks = _write_site(out, pages)
    corpora = {parser: out / f"corpus-{parser}.jsonl" for parser in PARSERS}
    by_slug = {p.slug: p for p in pages}
    ranges = {p.slug: section_ranges(render_page(p)) for p in pages}

    # The golden set: chosen from the pool, then numbered in a seeded order.
    if calibrate:
        rows = [row for q in pool for row in _anchored(q.query_id, q.v5, by_slug, ranges)]
        judged = {parser: mapped_judgments(rows, located[parser]) for parser in PARSERS}
        scores, pilot_source = _calibration(pool, corpora, judged, pilot_cache)
    else:
        scores, pilot_source = None, "none"
    reached: dict[str, tuple[float, float]] = {}
    chosen = _select(pool, leaked, scores, g, reached)
    queries = [chosen[int(i)] for i in g.rng.permutation(len(chosen))]
    for i, q in enumerate(queries):
        q.query_id = f"q_{i + 1:04d}"
    leaked.sort(key=lambda q: q.query_id)

    v4 = sorted(queries[:V4_QUERIES], key=lambda q: q.query_id)
    qrels_v4, qrels_v5 = _write_golden_sets(out, v4, queries)
    anchored_v4, anchored_v5 = (_write_anchored(out / f"judgments-{which}.jsonl", items, which, by_slug, ranges)
                                for which, items in (("v4", v4), ("v5", queries)))
    return World(
        root=out,
        seed=seed,
        scale=scale,
        site=out / "site.jsonl",
        corpus_v1=corpora["v1"],
        corpus_v2=corpora["v2"],
        golden_v4=out / "golden-v4.jsonl",
        qrels_v4=out / "qrels-v4.txt",
        golden_v5=out / "golden-v5.jsonl",
        qrels_v5=out / "qrels-v5.txt",
        strata=out / "strata.yml",
        retrieval_old=out / "retrieval-old.yml",
        retrieval_new=out / "retrieval-new.yml",
        pages=len(pages),
        chunks_v1=len(located["v1"]),
        chunks_v2=len(located["v2"]),
        queries_v4=len(v4),
        queries_v5=len(queries),
        qrels_v4_rows=qrels_v4.count("\n"),
        qrels_v5_rows=qrels_v5.count("\n"),
        judgments_v4=out / "judgments-v4.jsonl",
        judgments_v5=out / "judgments-v5.jsonl",
        judgments_v4_rows=anchored_v4,
        judgments_v5_rows=anchored_v5,
        table_chunks=table_chunks,
        leaked_query_ids=tuple(q.query_id for q in leaked),
        pilot=reached,
        pilot_source=pilot_source,
    )
