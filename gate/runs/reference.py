"""The ``reference`` runner: a small but real hybrid retriever, run in process.

BM25 (``bm25s``) and a dense leg, fused by weighted reciprocal-rank fusion.
The dense leg embeds chunks with one of two embedding models computed locally
with numpy/scipy (nothing is downloaded, ever) and searches them through a
faiss HNSW index (``IndexHNSWFlat``, inner product on unit vectors, M=16),
built single-threaded with an insertion order that follows the request's
repeat seed: two runs with different seeds differ slightly (the run-to-run
noise of a re-built ANN index), two runs with the same seed are identical.

Tokens: lower-cased words and identifiers (``err_webhook_signature`` stays one
token for BM25), English stopwords out. The embedding models see an
identifier as its words (``err``, ``webhook``, ``signature``).

Embedding models (``embedding.model``; ``embedding.dim``, when given, must
equal the model's dimension):

``lsa-128``
    word TF-IDF (sublinear tf, smoothed idf, words in >= 2 chunks) reduced to
    128 dimensions by a truncated SVD fitted on the corpus (LSA). Different
    words are different features: ``batch`` / ``batches``, ``E4127`` /
    ``E4172`` are told apart, paraphrases are only as close as their
    co-occurrence makes them.
``lsa-char-256``
    TF-IDF over the character 3- to 5-grams of each word (``<batch>`` gives
    ``<ba``, ``bat``, ... ``ch>``), digits folded to ``0`` (a number is
    matched by its shape), reduced to 256 dimensions the same way.
    Inflections and loosely worded text share most of their n-grams, so it
    matches them much better; page names, codes and numbers that differ in a
    few characters it tells apart worse.

Both models are fitted on the corpus they index (deterministically: the SVD
is a randomized subspace iteration from a fixed-seed sketch), like an LSA
index. Corpus, BM25 index, fitted model and the last HNSW indexes are cached
in memory per corpus snapshot digest (and model, parameters, seed), so a grid
of runs in one process reads, indexes and embeds each snapshot once per model.
BLAS and OpenMP run single-threaded (``threadpoolctl``): the products are small
and threads only contend on a busy CI runner.

Retrieval config keys (all optional; defaults in brackets):

=====================  =====================================================
``embedding.model``    ``lsa-128`` | ``lsa-char-256`` [lsa-128]
``embedding.dim``      must match the model (128 / 256) [the model's]
``ingestion.parser``   ``v1`` | ``v2`` | ...: which corpus snapshot to index (below)
``bm25.k1``            [1.2]
``bm25.b``             [0.75]
``fusion.k``           RRF constant [60]
``fusion.weight``      weight of the dense leg in [0, 1]; BM25 gets 1 - weight [0.5]
``ann.ef_search``      HNSW efSearch [64]
``retrieve.depth``     results per query, and candidates per leg [100]
=====================  =====================================================

Fused score of a chunk ``d``::

    score(d) = (1 - weight) / (k + rank_bm25(d)) + weight / (k + rank_dense(d))

a leg contributing 0 when ``d`` is not in its top ``depth``. Rows are written
in trec_eval order (score descending, then chunk id descending), chunk ids as
document ids. A query nothing matches gets one row, ``reference:no-match``
with score 0, so that the run still covers every golden query.

Which snapshot is indexed. The runner receives ``{corpus}``, the gate
config's ``corpus``. Without ``ingestion.parser`` it indexes that corpus as
is (a JSONL/TSV file or a BEIR folder). With ``ingestion.parser: P`` it
indexes the snapshot ``corpus-P.jsonl`` (the ``snapshot`` option's pattern)
in the folder of ``{corpus}`` (the folder itself when ``{corpus}`` is one):
the gate config names the current snapshot (``corpus/corpus-v2.jsonl``, the
one the leakage check scans and the manifest fingerprints) and a run whose
config says ``parser: v1`` indexes ``corpus/corpus-v1.jsonl`` beside it.

Runner options (``runner.options`` in the gate config, part of the identity):
``snapshot`` [``corpus-{parser}.jsonl``], ``ef_construction`` [80],
``hnsw_m`` [16], ``svd_iterations`` [2].
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from gate.common import fixed_order
from gate.common.errors import InputError
from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.queries import load_queries
from gate.inputs.readers.timings import timings_path_for
from gate.runs.reference_latency import QueryWork, write_timings
from gate.runs.request import RunnerFailed, RunRequest

__all__ = [
    "VERSION",
    "MODELS",
    "DEFAULTS",
    "ReferenceRunner",
    "RetrievalSettings",
    "settings_from_config",
    "snapshot_path",
    "retrieve",
    "Searcher",
    "searcher",
    "BuildOnceCache",
    "write_trec",
    "clear_caches",
    "NO_MATCH",
]

VERSION = "reference-2"  # 2: CPU-independent numerics (gate.common.fixed_order, faiss at its portable SIMD level)

# name -> (kind, dimension)
MODELS: dict[str, tuple[str, int]] = {"lsa-128": ("word", 128), "lsa-char-256": ("char", 256)}

DEFAULTS: dict[str, Any] = {
    "embedding.model": "lsa-128",
    "bm25.k1": 1.2,
    "bm25.b": 0.75,
    "fusion.k": 60.0,
    "fusion.weight": 0.5,
    "ann.ef_search": 64,
    "retrieve.depth": 100,
}

OPTION_DEFAULTS: dict[str, Any] = {
    "snapshot": "corpus-{parser}.jsonl",
    "ef_construction": 80,
    "hnsw_m": 16,
    "svd_iterations": 2,
}

CHAR_NGRAMS = (3, 4, 5)
SVD_OVERSAMPLE = 16
SVD_SEED = 20240914  # the sketch of the SVD: fixed, so a fit depends on the corpus only
MIN_DF = 2
NO_MATCH = "reference:no-match"  # the one document of a query nothing matches

_TOKEN = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")
STOPWORDS = frozenset("""
a an and any are as at be been but by can could did do does for from had has have how i if in into is it its
me my of on or our so than that the their them then there these they this those to too us was we were what
when where which while who why will with would you your
""".split())


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class RetrievalSettings:
    model: str
    dim: int
    parser: str | None
    k1: float
    b: float
    fusion_k: float
    weight: float
    ef_search: int
    depth: int
    # embedding.price_per_million_tokens: the run's sidecar gives a cost per query only with it
    price_per_million_tokens: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _get(data: Mapping[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _number(data: Mapping[str, Any], dotted: str, source: str, *, integer: bool = False,
            low: float | None = None, high: float | None = None) -> float:
    value = _get(data, dotted)
    if value is None:
        value = DEFAULTS[dotted]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not float(value).is_integer()):
        kind = "an integer" if integer else "a number"
        raise InputError(source, None, f"'{dotted}' must be {kind}, got {value!r}")
    if not math.isfinite(float(value)) or (low is not None and value < low) or (high is not None and value > high):
        bounds = f"in [{low:g}, {high:g}]" if high is not None else f">= {low:g}"
        raise InputError(source, None, f"'{dotted}' must be {bounds}, got {value!r}")
    return int(value) if integer else float(value)


def _integer(data: Mapping[str, Any], dotted: str, source: str, *, low: float | None = None) -> int:
    """:func:`_number` of a key that must be an integer."""
    return int(_number(data, dotted, source, integer=True, low=low))


def settings_from_config(data: Mapping[str, Any], source: str = "retrieval config") -> RetrievalSettings:
    """Read and check the keys the reference runner understands (others are ignored)."""
    model = _get(data, "embedding.model")
    model = DEFAULTS["embedding.model"] if model is None else str(model)
    if model not in MODELS:
        raise InputError(source, None, f"'embedding.model' {model!r} is not a reference model "
                                       f"(known: {', '.join(MODELS)})")
    native = MODELS[model][1]
    dim = _get(data, "embedding.dim")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim != native):
        raise InputError(source, None, f"'embedding.dim' is {dim!r} but model {model} has {native} dimensions")
    parser = _get(data, "ingestion.parser")
    if parser is not None:
        parser = str(parser)
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", parser):
            raise InputError(source, None, f"'ingestion.parser' {parser!r} must be a plain name such as v1 or v2")
    return RetrievalSettings(
        model=model,
        dim=native,
        parser=parser,
        k1=_number(data, "bm25.k1", source, low=0.0),
        b=_number(data, "bm25.b", source, low=0.0, high=1.0),
        fusion_k=_number(data, "fusion.k", source, low=0.0),
        weight=_number(data, "fusion.weight", source, low=0.0, high=1.0),
        ef_search=_integer(data, "ann.ef_search", source, low=1),
        depth=_integer(data, "retrieve.depth", source, low=1),
        price_per_million_tokens=None if _get(data, "embedding.price_per_million_tokens") is None else
        _number(data, "embedding.price_per_million_tokens", source, low=0.0),
    )


def snapshot_path(corpus: str | None, parser: str | None, pattern: str = OPTION_DEFAULTS["snapshot"]) -> str:
    """The corpus the runner indexes for ``{corpus}`` and ``ingestion.parser`` (module docstring)."""
    if corpus is None or not str(corpus).strip():
        raise InputError(None, None, "the reference runner needs a corpus: set 'corpus' in the gate config")
    if parser is None:
        return str(corpus)
    base = Path(corpus)
    folder = base if base.is_dir() else base.parent
    path = folder / pattern.format(parser=parser)
    if not path.is_file():
        raise InputError(str(path), None, f"no corpus snapshot for ingestion.parser '{parser}' "
                                          f"(looked for {pattern.format(parser=parser)} beside {corpus})")
    return str(path)


# --------------------------------------------------------------------------- text


def tokenize(text: str) -> list[str]:
    """Lower-cased words and identifiers (``err_webhook_signature`` stays one token), stopwords out."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


@dataclass
class _Corpus:
    digest: str
    path: str
    ids: list[str]
    token_ids: list[np.ndarray]  # per chunk, ids into vocab
    vocab: dict[str, int]
    counts: sp.csr_matrix  # chunk x term counts


def _file_digest(path: str) -> str:
    p = Path(path)
    h = hashlib.sha256()
    if p.is_dir():
        for item in sorted(x for x in p.rglob("*") if x.is_file()):
            h.update(item.relative_to(p).as_posix().encode())
            h.update(_file_digest(str(item)).encode())
        return h.hexdigest()
    with open(p, "rb") as handle:
        while block := handle.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _load_corpus(path: str, digest: str) -> _Corpus:
    ids: list[str] = []
    vocab: dict[str, int] = {}
    token_ids: list[np.ndarray] = []
    rows: list[np.ndarray] = []
    for n, chunk in enumerate(iter_corpus(path)):
        ids.append(chunk.chunk_id)
        toks = [vocab.setdefault(t, len(vocab)) for t in tokenize(chunk.text)]
        arr = np.asarray(toks, dtype=np.int64)
        token_ids.append(arr)
        rows.append(np.full(len(arr), n, dtype=np.int64))
    if not ids:
        raise InputError(path, None, "the corpus has no chunks")
    cols = np.concatenate(token_ids) if token_ids else np.zeros(0, dtype=np.int64)
    data = np.ones(len(cols), dtype=np.float32)
    counts = sp.csr_matrix((data, (np.concatenate(rows), cols)), shape=(len(ids), len(vocab)), dtype=np.float32)
    counts.sum_duplicates()
    return _Corpus(digest, path, ids, token_ids, vocab, counts)


# --------------------------------------------------------------------------- embedding models


def _orth(x: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the columns of a tall ``x``: Cholesky QR, twice (CholeskyQR2).

    Two Gram-matrix products and two small Cholesky factorizations: several
    times faster than Householder QR on tall, skinny blocks, and as accurate
    for the well-conditioned blocks of a subspace iteration. A Gram matrix
    that is not numerically positive definite gets a shift first (shifted
    CholeskyQR3, Fukaya et al. 2020). Every product and factorization is
    :mod:`gate.common.fixed_order`'s: the basis has the same bits on every CPU.
    """
    q = x
    passes = 2
    shift = 0.0
    while passes:
        gram = fixed_order.grid_product(q.T, q)
        if shift:
            gram = gram + shift * np.eye(gram.shape[0])
        try:
            r = fixed_order.upper_cholesky(gram)
        except fixed_order.NotPositiveDefinite:
            if shift:  # pragma: no cover - a shift of this size makes the Gram matrix definite
                raise
            rows, cols = q.shape
            shift = 11.0 * (rows * cols + cols * (cols + 1)) * 2.0 ** -53 * float(np.add.reduce(np.diag(gram)))
            passes = 3
            continue
        q = fixed_order.grid_product(q, fixed_order.upper_inverse(r))
        shift = 0.0
        passes -= 1
    return q


def _right_singular_vectors(matvec: Any, rmatvec: Any, features: int, rows: int, k: int,
                            iterations: int) -> np.ndarray:
    """Top ``k`` right singular vectors (features x k, float32, fixed signs) of an implicit matrix ``a``.

    ``matvec(q) = a @ q`` and ``rmatvec(y) = a.T @ y`` on dense blocks (scipy's sparse products:
    plain loops, the same bits on every CPU). Randomized subspace iteration on ``a.T a`` (Halko,
    Martinsson & Tropp 2011) from a fixed-seed sketch: ``iterations + 1`` rounds, orthonormalized
    in feature space, then the eigenvectors of the projected Gram matrix (Jacobi, not LAPACK).
    """
    k = min(k, features, rows)
    width = min(k + SVD_OVERSAMPLE, features)
    q = _orth(np.random.default_rng(SVD_SEED).standard_normal((features, width)))
    for _ in range(iterations + 1):
        q = _orth(rmatvec(matvec(q)))
    b = matvec(q)  # rows x width: a ~ b q^T
    _, vectors = fixed_order.symmetric_eigen(fixed_order.grid_product(b.T, b))
    v = fixed_order.grid_product(q, vectors[:, :k])
    # A fixed sign per component (largest loading positive): the fit does not depend on the solver's sign choice.
    signs = np.sign(v[np.abs(v).argmax(axis=0), np.arange(v.shape[1])])
    signs[signs == 0] = 1
    return (v * signs).astype(np.float32)


def _l2_rows(x: Any) -> Any:
    """Rows scaled to unit length: ``x`` a scipy sparse matrix or a numpy array (scipy has no
    type information, so both are Any to mypy)."""
    if sp.issparse(x):
        norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
        norms[norms == 0] = 1
        return sp.diags((1.0 / norms).astype(np.float32)) @ x
    norms = np.sqrt(np.add.reduce(np.asarray(x, dtype=np.float64) ** 2, axis=1, keepdims=True))
    norms[norms == 0] = 1
    return (x / norms).astype(np.float32)


def _parts(token: str) -> list[str]:
    """The words of a token for the embedding models: identifiers split at underscores."""
    return [part for part in token.split("_") if part] if "_" in token else [token]


def _ngrams(word: str) -> list[str]:
    padded = f"<{word}>"
    out = []
    for n in CHAR_NGRAMS:
        out += [padded[i:i + n] for i in range(len(padded) - n + 1)]
    return out


_DIGITS = str.maketrans("123456789", "000000000")


def _features_of(token: str, kind: str) -> list[str]:
    """Word model: the token's words. Character model: the n-grams of its words, digits folded to ``0``
    (numbers are matched by their shape, ``E4127`` like ``E4172``: general, and blunt on literals)."""
    if kind == "word":
        return _parts(token)
    out: list[str] = []
    for part in _parts(token):
        out += _ngrams(part.translate(_DIGITS))
    return out


@dataclass
class _Model:
    """A fitted embedding model: TF-IDF over token features -> SVD projection -> unit vectors.

    A token's features are its words (``lsa-128``) or the character n-grams of
    its words (``lsa-char-256``). A chunk's feature weights are
    ``sum over its terms t of (1 + log tf(t)) * count(f in t) * idf(f)``, i.e.
    ``C' @ F @ diag(idf)`` with ``C'`` the sublinear term counts and ``F`` the
    term -> feature counts; rows are L2-normalized. The matrix is never formed
    for the SVD: products go through the factors, which is several times
    cheaper for character n-grams.
    """

    name: str
    kind: str
    feature_index: dict[str, int]  # feature -> column among the kept features
    idf: np.ndarray
    projection: np.ndarray  # kept features x dim
    doc_vectors: np.ndarray  # chunks x dim, unit rows

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        rows, cols, vals = [], [], []
        for i, text in enumerate(texts):
            counts: dict[str, int] = {}
            for token in tokenize(text):
                counts[token] = counts.get(token, 0) + 1
            for token, tf in counts.items():
                for feature in _features_of(token, self.kind):
                    j = self.feature_index.get(feature)
                    if j is not None:
                        rows.append(i)
                        cols.append(j)
                        vals.append((1.0 + float(fixed_order.log(tf))) * float(self.idf[j]))
        raw = sp.csr_matrix((np.asarray(vals, dtype=np.float64), (rows, cols)),
                            shape=(len(texts), len(self.feature_index)))
        raw.sum_duplicates()
        return _l2_rows(np.asarray(_l2_rows(raw) @ self.projection, dtype=np.float32))


def _fit_model(corpus: _Corpus, name: str, iterations: int) -> _Model:
    kind, dim = MODELS[name]
    index: dict[str, int] = {}
    rows, cols = [], []
    for term, t_id in corpus.vocab.items():  # insertion order: deterministic
        for feature in _features_of(term, kind):
            rows.append(t_id)
            cols.append(index.setdefault(feature, len(index)))
    term_features = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(corpus.vocab), len(index)))
    term_features.sum_duplicates()
    sublinear = corpus.counts.astype(np.float64)
    sublinear.data = 1.0 + fixed_order.log(sublinear.data)
    n_docs = sublinear.shape[0]
    explicit = (sublinear @ term_features).tocsr()
    df = np.bincount(explicit.indices, minlength=explicit.shape[1])
    keep = np.flatnonzero(df >= min(MIN_DF, n_docs))
    idf = fixed_order.log((1.0 + n_docs) / (1.0 + df[keep])) + 1.0
    factor = (term_features[:, keep] @ sp.diags(idf)).tocsr()  # terms x kept features
    weighted = explicit[:, keep] @ sp.diags(idf)
    norms = np.sqrt(np.asarray(weighted.multiply(weighted).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    scale = 1.0 / norms[:, None]
    factor_t = factor.T.tocsr()
    sublinear_t = sublinear.T.tocsr()
    v = _right_singular_vectors(
        lambda q: (sublinear @ (factor @ q)) * scale,
        lambda y: factor_t @ (sublinear_t @ (y * scale)),
        len(keep), n_docs, dim, iterations)
    if v.shape[1] < dim:  # a tiny corpus: pad to the declared dimension
        v = np.hstack([v, np.zeros((v.shape[0], dim - v.shape[1]), dtype=np.float32)])
    old_ids = sorted(index, key=index.__getitem__)
    feature_index = {old_ids[j]: new for new, j in enumerate(keep.tolist())}
    docs = sublinear @ (factor @ v.astype(np.float64))
    return _Model(name, kind, feature_index, idf, v, _l2_rows(np.asarray(docs, dtype=np.float32)))


# --------------------------------------------------------------------------- indexes and caches


class BuildOnceCache:
    """The last ``size`` values by key, safe across threads: a value being computed is waited for,
    never computed twice (:func:`prefetch` builds in background threads what a run then looks up)."""

    def __init__(self, size: int):
        self.size = size
        self._slots: OrderedDict[Any, Future] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, key: Any) -> bool:
        with self._lock:
            return key in self._slots

    def __len__(self) -> int:
        with self._lock:
            return len(self._slots)

    def clear(self) -> None:
        with self._lock:
            self._slots.clear()

    def get_or(self, key: Any, make: Any) -> Any:
        with self._lock:
            found = self._slots.get(key)
            mine = found is None
            if found is None:
                slot: Future[Any] = Future()
                self._slots[key] = slot
                while len(self._slots) > self.size:
                    self._slots.popitem(last=False)
            else:
                slot = found
                self._slots.move_to_end(key)
        if not mine:
            return slot.result()
        try:
            value = make()
        except BaseException as error:
            with self._lock:
                if self._slots.get(key) is slot:
                    del self._slots[key]
            slot.set_exception(error)
            raise
        slot.set_result(value)
        return value


_CORPORA = BuildOnceCache(4)
_BM25 = BuildOnceCache(8)
_MODELS = BuildOnceCache(6)
_HNSW = BuildOnceCache(6)


def clear_caches() -> None:
    for cache in (_CORPORA, _BM25, _MODELS, _HNSW):
        cache.clear()


def _bm25(corpus: _Corpus, k1: float, b: float):
    import bm25s
    from bm25s.tokenization import Tokenized

    def make():
        retriever = bm25s.BM25(k1=k1, b=b, method="lucene")
        ids = [arr.tolist() for arr in corpus.token_ids]
        retriever.index(Tokenized(ids=ids, vocab=dict(corpus.vocab)), show_progress=False)
        retriever.gate_top = {}  # (query text, depth) -> ranked chunk indexes: BM25 is deterministic
        return retriever

    return _BM25.get_or((corpus.digest, k1, b), make)


def _bm25_top(retriever: Any, corpus: _Corpus, text: str, depth: int) -> np.ndarray:
    key = (text, depth)
    found = retriever.gate_top.get(key)
    if found is None:
        ids = [corpus.vocab[tok] for tok in tokenize(text) if tok in corpus.vocab]
        if ids:
            found = _top(np.asarray(retriever.get_scores_from_ids(ids), dtype=np.float64), depth)
        else:
            found = np.zeros(0, dtype=np.int64)
        retriever.gate_top[key] = found
    return found


def _faiss() -> Any:
    """faiss, with its distance kernels pinned to the portable (non-SIMD) level.

    faiss picks AVX2 or AVX-512 distance code by the CPU; the two sum an inner product in different
    orders, so the same index built on two machines differs (measured: another graph, another top
    10 on the demo's corpora). The portable level is the same code on every x86-64 CPU. The level
    is process-wide (faiss's own setting), so any other faiss user in this process gets it too.
    """
    import faiss

    config = getattr(faiss, "SIMDConfig", None)
    if config is None:
        raise RunnerFailed("reference", f"faiss {faiss.__version__} cannot pin its SIMD level (faiss.SIMDConfig): "
                           "the reference retriever needs faiss-cpu >= 1.13 to give the same results on every CPU")
    if config.get_level() != faiss.SIMDLevel_NONE:
        config.set_level(faiss.SIMDLevel_NONE)
        if config.get_level() != faiss.SIMDLevel_NONE:  # pragma: no cover - faiss refused the level
            raise RunnerFailed("reference",
                               "faiss refused the portable SIMD level: its results would depend on the CPU")
    return faiss


def _hnsw(vectors: np.ndarray, key: tuple, seed: int, m: int, ef_construction: int):
    """An HNSW index over ``vectors`` built single-threaded in a seed-determined order."""
    faiss = _faiss()

    def make():
        order = np.random.default_rng(seed).permutation(len(vectors))
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            index = faiss.IndexHNSWFlat(vectors.shape[1], m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = ef_construction
            index.add(np.ascontiguousarray(vectors[order]))
        finally:
            faiss.omp_set_num_threads(threads)
        return index, order

    return _HNSW.get_or(key + (seed, m, ef_construction), make)


def _corpus_of(corpus_path: str) -> _Corpus:
    digest = _file_digest(corpus_path)
    return _CORPORA.get_or(digest, lambda: _load_corpus(corpus_path, digest))


def _model_key(corpus: _Corpus, model: str, opts: Mapping[str, Any]) -> tuple:
    return corpus.digest, model, int(opts["svd_iterations"])


def _model_of(corpus: _Corpus, model: str, opts: Mapping[str, Any]) -> _Model:
    return _MODELS.get_or(_model_key(corpus, model, opts),
                          lambda: _fit_model(corpus, model, int(opts["svd_iterations"])))


def _index_of(corpus: _Corpus, model: _Model, seed: int, opts: Mapping[str, Any]):
    return _hnsw(model.doc_vectors, _model_key(corpus, model.name, opts), int(seed), int(opts["hnsw_m"]),
                 int(opts["ef_construction"]))


def _prepare(settings: RetrievalSettings, corpus_path: str, seed: int, opts: Mapping[str, Any]) -> None:
    """Load, embed and index what :func:`retrieve` will search for these settings and seed."""
    corpus = _corpus_of(corpus_path)
    _index_of(corpus, _model_of(corpus, settings.model, opts), seed, opts)


def prefetch(runs: Sequence[tuple[RetrievalSettings, str, int]], options: Mapping[str, Any] | None = None,
             workers: int = 2) -> Future:
    """Start building, in ``workers`` background threads, the indexes of the given ``(settings,
    corpus path, seed)`` runs, in that order; :func:`retrieve` then finds them built (or waits for one
    being built). Returns a future that is done when all are (its result: None; an error is left for
    the run that needs the index to meet).

    The results do not depend on it: every build is single-threaded, in its seed's insertion order,
    the same bytes in whichever thread (faiss releases the GIL, so the builds run side by side).
    The HNSW cache grows to hold them all.
    """
    opts = {**OPTION_DEFAULTS, **dict(options or {})}
    _HNSW.size = max(_HNSW.size, len(runs) + 2)
    _MODELS.size = max(_MODELS.size, len({(s.model, c) for s, c, _ in runs}) + 2)
    _CORPORA.size = max(_CORPORA.size, len({c for _, c, _ in runs}) + 1)
    pending = list(runs)
    lock = threading.Lock()
    done: Future = Future()
    left = [min(max(1, workers), len(pending))]  # workers still running

    def work() -> None:
        try:
            with _single_threaded():
                while True:
                    with lock:
                        if not pending:
                            return
                        settings, corpus_path, seed = pending.pop(0)
                    try:
                        _prepare(settings, corpus_path, seed, opts)
                    except Exception:  # noqa: BLE001 - the run that needs this index meets the error itself
                        pass
        finally:  # however the worker ends, the last one out says the builds are over
            with lock:
                left[0] -= 1
                if left[0] == 0:
                    done.set_result(None)

    if not left[0]:
        done.set_result(None)
    for _ in range(left[0]):
        threading.Thread(target=work, name="reference-prefetch", daemon=True).start()
    return done


# --------------------------------------------------------------------------- retrieval


def _top(scores: np.ndarray, depth: int) -> np.ndarray:
    """Indices of the ``depth`` best scores, best first, ties by index (deterministic)."""
    positive = np.flatnonzero(scores > 0)
    if len(positive) > depth:
        part = np.argpartition(-scores[positive], depth - 1)[:depth]
        cut = scores[positive[part]].min()
        positive = np.flatnonzero(scores >= cut)
    order = np.lexsort((positive, -scores[positive]))
    return positive[order][:depth]


_LIMITS_LOCK = threading.Lock()
_LIMITS: list[Any] = []  # the active threadpoolctl limit, while any thread is inside _single_threaded
_LIMITS_DEPTH = 0


@contextmanager
def _single_threaded():
    """BLAS limited to one thread (small products: threads only contend on a busy runner).

    The limit is process-wide (threadpoolctl sets the libraries' global thread
    count), so it is counted: set by the first thread to enter, lifted when the
    last one leaves, never while a :func:`prefetch` worker is still fitting.
    """
    global _LIMITS_DEPTH
    with _LIMITS_LOCK:
        if _LIMITS_DEPTH == 0:
            try:
                from threadpoolctl import threadpool_limits
            except ImportError:  # pragma: no cover - threadpoolctl is in the reference extra
                pass
            else:
                _LIMITS.append(threadpool_limits(limits=1))
        _LIMITS_DEPTH += 1
    try:
        yield
    finally:
        with _LIMITS_LOCK:
            _LIMITS_DEPTH -= 1
            if _LIMITS_DEPTH == 0 and _LIMITS:
                _LIMITS.pop().restore_original_limits()


def retrieve(settings: RetrievalSettings, queries: Sequence[tuple[str, str]], corpus_path: str, seed: int,
             options: Mapping[str, Any] | None = None, log: Any = None, *,
             exact: bool = False, work: dict[str, QueryWork] | None = None) -> dict[str, list[tuple[str, float]]]:
    """Rank the corpus for each ``(query_id, text)``: ``{query_id: [(chunk_id, score), ...]}``, best first.

    ``exact=True`` searches the dense leg by brute force instead of the HNSW
    index (no run-to-run noise, the seed is unused): what the ANN approximates.
    ``work``, when given, receives each query's :class:`QueryWork` (its modelled latency's counts).
    """
    with _single_threaded():
        say = log or (lambda message: None)
        started = time.monotonic()
        built = searcher(settings, corpus_path, seed, options, log, exact=exact)
        t = time.monotonic()
        results = built.rank(queries, work)
        say(f"{len(queries)} queries ({time.monotonic() - t:.2f}s); total {time.monotonic() - started:.2f}s")
        return results


@dataclass(frozen=True)
class Searcher:
    """What :func:`retrieve` searches for one (settings, corpus snapshot, seed), built: rank any
    queries with it, from any thread, as often as wanted (a search service keeps it between requests).

    A query's ranking and work do not depend on the other queries ranked with it: the query is
    embedded row by row (sparse products), searched alone in the HNSW index (:func:`_search_counted`),
    and fused alone, so ranking one query gives the same bits as its row of a batch.
    """

    settings: RetrievalSettings
    corpus: _Corpus
    bm25: Any
    model: _Model
    index: Any  # the faiss HNSW index; None for an exact search
    order: np.ndarray  # HNSW position -> chunk
    postings: np.ndarray  # each term's document frequency (the latency model's BM25 work)
    exact: bool

    def rank(self, queries: Sequence[tuple[str, str]],
             work: dict[str, QueryWork] | None = None) -> dict[str, list[tuple[str, float]]]:
        with _single_threaded():
            return self._rank(queries, work)

    def _rank(self, queries: Sequence[tuple[str, str]],
              work: dict[str, QueryWork] | None) -> dict[str, list[tuple[str, float]]]:
        settings, corpus, model = self.settings, self.corpus, self.model
        depth = min(settings.depth, len(corpus.ids))
        qvecs = model.embed_queries([text for _, text in queries])
        if self.exact:
            sims = fixed_order.grid_product(qvecs, model.doc_vectors.T)
            distances = [len(corpus.ids)] * len(queries)  # brute force: every chunk, for every query
            found = np.stack([_top(row.astype(np.float64) + 2.0, depth) for row in sims]) if len(queries) else \
                np.zeros((0, depth), dtype=np.int64)
        else:
            found, distances = _search_counted(_faiss(), self.index, qvecs, depth, settings.ef_search)
        w, k = settings.weight, settings.fusion_k
        results: dict[str, list[tuple[str, float]]] = {}
        ids = np.asarray(corpus.ids, dtype=object)
        for qi, (qid, text) in enumerate(queries):
            fused: dict[int, float] = {}
            if w < 1.0:
                for rank, doc in enumerate(_bm25_top(self.bm25, corpus, text, depth).tolist(), start=1):
                    fused[doc] = fused.get(doc, 0.0) + (1.0 - w) / (k + rank)
            if w > 0.0 and np.any(qvecs[qi]):
                hits = found[qi]
                for rank, pos in enumerate(hits[hits >= 0].tolist(), start=1):
                    doc = int(self.order[pos])
                    fused[doc] = fused.get(doc, 0.0) + w / (k + rank)
            # trec_eval order: score descending, then chunk id descending
            ranked = sorted(fused.items(), key=lambda item: ids[item[0]], reverse=True)
            ranked.sort(key=lambda item: -item[1])
            # A query nothing matches (no known word, no embedding feature) still gets a row, so the
            # run covers it: an empty ranking and this one both score 0.
            results[qid] = [(ids[doc], score) for doc, score in ranked[:depth]] or [(NO_MATCH, 0.0)]
            if work is not None:
                work[qid] = _work_of(text, model, corpus, self.postings, distances[qi], len(fused))
        return results


def searcher(settings: RetrievalSettings, corpus_path: str, seed: int, options: Mapping[str, Any] | None = None,
             log: Any = None, *, exact: bool = False) -> Searcher:
    """Load, index and embed what ranking for ``settings`` on ``corpus_path`` with ``seed`` searches
    (each part from the module's caches when there); ``exact``: see :func:`retrieve`."""
    with _single_threaded():
        return _searcher(settings, corpus_path, seed, options, log, exact)


def _searcher(settings: RetrievalSettings, corpus_path: str, seed: int, options: Mapping[str, Any] | None,
              log: Any, exact: bool) -> Searcher:
    opts = {**OPTION_DEFAULTS, **dict(options or {})}
    say = log or (lambda message: None)
    started = time.monotonic()
    corpus = _corpus_of(corpus_path)
    say(f"corpus {corpus_path}: {len(corpus.ids)} chunks, {len(corpus.vocab)} terms, sha256 {corpus.digest[:12]} "
        f"({time.monotonic() - started:.2f}s)")

    t = time.monotonic()
    bm25 = _bm25(corpus, settings.k1, settings.b)
    say(f"bm25 k1={settings.k1:g} b={settings.b:g} ({time.monotonic() - t:.2f}s)")

    t = time.monotonic()
    model = _model_of(corpus, settings.model, opts)
    say(f"embedding {settings.model}: {model.doc_vectors.shape[0]} x {model.doc_vectors.shape[1]} "
        f"({time.monotonic() - t:.2f}s)")

    t = time.monotonic()
    if exact:
        index, order = None, np.arange(len(corpus.ids))
    else:
        index, order = _index_of(corpus, model, seed, opts)
        say(f"hnsw M={opts['hnsw_m']} efConstruction={opts['ef_construction']} seed={seed} "
            f"({time.monotonic() - t:.2f}s)")
    return Searcher(settings, corpus, bm25, model, index, order, bm25_postings(corpus), exact)


_STATS_LOCK = threading.Lock()  # faiss counts distance evaluations in one process-wide counter


def _search_counted(faiss: Any, index: Any, qvecs: np.ndarray, depth: int,
                    ef_search: int) -> tuple[np.ndarray, list[int]]:
    """The HNSW search of each query, one at a time (the same results as one batch: queries are
    searched independently) with the distance evaluations it made, for the latency model."""
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    params = faiss.SearchParametersHNSW()
    params.efSearch = ef_search
    rows, distances = [], []
    try:
        with _STATS_LOCK:
            for row in range(len(qvecs)):
                faiss.cvar.hnsw_stats.reset()
                _, found = index.search(np.ascontiguousarray(qvecs[row:row + 1]), depth, params=params)
                rows.append(found[0])
                distances.append(int(faiss.cvar.hnsw_stats.ndis))
    finally:
        faiss.omp_set_num_threads(threads)
    found_all = np.stack(rows) if rows else np.zeros((0, depth), dtype=np.int64)
    return found_all, distances


def bm25_postings(corpus: _Corpus) -> np.ndarray:
    """Each term's document frequency: the postings a BM25 lookup of it walks."""
    return np.bincount(corpus.counts.indices, minlength=len(corpus.vocab))


def _work_of(text: str, model: _Model, corpus: _Corpus, postings: np.ndarray, distances: int,
             candidates: int) -> QueryWork:
    tokens = tokenize(text)
    return QueryWork(
        characters=len(text), tokens=len(tokens),
        features=sum(len(_features_of(token, model.kind)) for token in tokens),
        dimension=int(model.doc_vectors.shape[1]), distances=distances,
        postings=int(sum(int(postings[corpus.vocab[t]]) for t in tokens if t in corpus.vocab)),
        candidates=candidates)


def write_trec(results: Mapping[str, Sequence[tuple[str, float]]], path: str | Path, tag: str = "reference") -> int:
    """Write ``results`` as a TREC run; a query with no hit gets no row. Returns the number of rows."""
    lines = []
    for qid, rows in results.items():
        for rank, (doc, score) in enumerate(rows, start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {score!r} {tag}\n")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(lines)
    return len(lines)


# --------------------------------------------------------------------------- the runner


class ReferenceRunner:
    """``runner.type: reference``: BM25 + dense (HNSW) with RRF fusion, in process."""

    name = "reference"
    writes_timings = True  # modelled latencies (gate.runs.reference_latency), beside every run

    def __init__(self, options: Mapping[str, Any] | None = None):
        options = dict(options or {})
        unknown = sorted(set(options) - set(OPTION_DEFAULTS))
        if unknown:
            raise InputError("runner.options", None, f"unknown option(s) for the reference runner: "
                                                     f"{', '.join(unknown)} (known: {', '.join(OPTION_DEFAULTS)})")
        for key in ("ef_construction", "hnsw_m", "svd_iterations"):
            value = options.get(key, OPTION_DEFAULTS[key])
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if key == "svd_iterations" else 2):
                raise InputError("runner.options", None, f"'{key}' must be an integer, got {value!r}")
        pattern = options.get("snapshot", OPTION_DEFAULTS["snapshot"])
        if not isinstance(pattern, str) or "{parser}" not in pattern:
            raise InputError("runner.options", None, "'snapshot' must be a file name pattern holding '{parser}'")
        self.options = {**OPTION_DEFAULTS, **options}

    def identity(self) -> dict[str, Any]:
        import faiss

        try:
            bm25s_version = metadata.version("bm25s")
        except Exception:  # noqa: BLE001 - identity must not fail on metadata
            bm25s_version = "unknown"
        return {"type": "reference", "version": VERSION, "options": dict(sorted(self.options.items())),
                "bm25s": bm25s_version, "faiss": faiss.__version__}

    def produce(self, request: RunRequest, config_file: Path, out_path: Path, log_path: Path) -> None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "w", encoding="utf-8") as log:
            def say(message: str) -> None:
                log.write(message + "\n")
                log.flush()

            try:
                settings = settings_from_config(request.config.data, request.config.source)
                say(f"{request.purpose}: {settings.to_dict()} seed={request.seed} repeat={request.repeat}")
                corpus = snapshot_path(request.corpus, settings.parser, self.options["snapshot"])
                queries = [(q.query_id, q.text) for q in load_queries(request.queries).queries]
                started = time.monotonic()
                work: dict[str, QueryWork] = {}
                results = retrieve(settings, queries, corpus, request.seed, self.options, say, work=work)
                rows = write_trec(results, out_path)
                write_timings(timings_path_for(out_path), work, settings.price_per_million_tokens,
                              (time.monotonic() - started) * 1000.0)
                say(f"wrote {rows} rows to {out_path}, modelled latencies beside it")
            except InputError as error:
                say(f"error: {error}")
                raise RunnerFailed(request.purpose, str(error), log_path) from None
            except (MemoryError, RuntimeError, ValueError, OSError) as error:
                say(f"error: {type(error).__name__}: {error}")
                raise RunnerFailed(request.purpose, f"reference runner failed: {type(error).__name__}: {error}",
                                   log_path) from None
