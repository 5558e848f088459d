"""compare evaluates each run a few whole queries at a time: the same numbers as the whole run.

Three pieces are checked against the code that reads a run whole: the pieces
(:func:`iter_run_chunks`) hold exactly :func:`read_run`'s rows and raise its errors at the same
lines; the digest (:func:`digest_run`) holds :func:`evaluate`'s values, ties, missing and extra
queries; the vectorised first-relevant lookups (:func:`look_all`) answer as the per-query
:meth:`RankedLookup.look`. Runs are generated with real ties (rounded scores), queries of very
different depths, unjudged and missing queries, and files whose queries are not grouped.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import numpy as np
import pytest

from gate.common.errors import InputError
from gate.evaluation.evaluate import evaluate
from gate.evaluation.first_relevant import RankedLookup, look_all, relevant_sets
from gate.evaluation.streaming import digest_run, ranking_fingerprints
from gate.inputs.readers.qrels import read_qrels
from gate.inputs.readers.records import same_rankings
from gate.inputs.readers.run_chunks import RunNotGrouped, iter_run_chunks
from gate.inputs.readers.runs import read_run
from gate.inputs.universe import query_universe

MEASURES = ["nDCG@10", "AP", "RR@10", "R@100", "P@10", "Judged@10", "nDCG@5"]


def _world(tmp: Path, seed: int, queries: int = 60, grouped: bool = True, gz: bool = False):
    rng = random.Random(seed)
    qrels_lines, run_lines = [], []
    qids = [f"q{rng.randrange(10**6)}" for _ in range(queries)]
    qids = list(dict.fromkeys(qids))
    for qid in qids:
        depth = rng.choice([1, 3, 10, 50, 120, 400])
        space = max(2 * depth, 40)  # dense enough that several relevant documents meet near the top
        pool = rng.sample(range(space), 30)
        if rng.random() < 0.85:  # some run queries are not judged
            for d in pool[:20]:
                qrels_lines.append(f"{qid} 0 D{d} {rng.choice([0, 0, 1, 2, 3, -1])}")
        if rng.random() < 0.1:  # a judged query the run lacks
            continue
        docs = rng.sample(range(space), depth)
        for rank, d in enumerate(docs, start=1):
            score = round(rng.gauss(0, 1), 1)  # coarse: many ties
            run_lines.append(f"{qid} Q0 D{d} {rank} {score} tag{seed}")
    for extra in range(3):
        qrels_lines.append(f"judged-only-{extra} 0 D1 1")
    if not grouped:
        rng.shuffle(run_lines)
    run_text = "\n".join(run_lines) + "\n"
    run_path = tmp / ("run.txt.gz" if gz else "run.txt")
    if gz:
        run_path.write_bytes(gzip.compress(run_text.encode()))
    else:
        run_path.write_text(run_text)
    qrels_path = tmp / "qrels.txt"
    qrels_path.write_text("\n".join(qrels_lines) + "\n")
    return run_path, qrels_path


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("chunk", [1, 700, 4096, 1 << 20])
def test_the_pieces_hold_the_rows_read_run_reads(tmp_path, seed, chunk):
    run_path, _ = _world(tmp_path, seed, gz=seed % 2 == 1)
    whole = read_run(run_path)
    seen: dict[str, tuple[list, list]] = {}
    tags = set()
    for piece, tag in iter_run_chunks(run_path, chunk_bytes=chunk, block_size=512):
        tags.add(tag)
        for i, qid in enumerate(piece.query_ids):
            assert qid not in seen  # every query in one piece
            a, b = int(piece.starts[i]), int(piece.starts[i + 1])
            seen[qid] = (piece.doc_ids[a:b].tolist(), piece.scores[a:b].tolist())
    assert tags == {whole.tag}
    assert sorted(seen, key=lambda q: q.encode()) == list(whole.query_ids)
    for qid in whole.query_ids:
        docs, scores = whole.ranking(qid)
        assert seen[qid] == (docs.tolist(), scores.tolist())


def test_a_file_whose_queries_are_not_grouped_is_refused_for_pieces_and_digested_whole(tmp_path):
    run_path, qrels_path = _world(tmp_path, 3, grouped=False)
    with pytest.raises(RunNotGrouped):
        for _ in iter_run_chunks(run_path, chunk_bytes=2000, block_size=512):
            pass
    qrels = read_qrels(qrels_path)
    universe = query_universe(qrels).query_ids
    digest = digest_run(run_path, qrels, MEASURES, universe, chunk_bytes=2000)
    whole = evaluate(read_run(run_path), qrels, MEASURES, universe)
    for name in whole.values:
        assert np.array_equal(digest.per_query.values[name], whole.values[name])


@pytest.mark.parametrize("line", [1, 57, 400, 1203])
def test_errors_name_the_line_read_run_names(tmp_path, line):
    run_path, _ = _world(tmp_path, 4, queries=40)
    lines = run_path.read_text().splitlines()
    line = min(line, len(lines))
    lines[line - 1] = lines[line - 1].replace(" Q0 ", " Q1 ")
    run_path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as whole:
        read_run(run_path)
    with pytest.raises(InputError) as pieces:
        for _ in iter_run_chunks(run_path, chunk_bytes=1000, block_size=300):
            pass
    assert str(pieces.value) == str(whole.value)
    assert whole.value.line == line


def test_a_duplicate_document_is_found_within_its_piece(tmp_path):
    run_path, _ = _world(tmp_path, 5, queries=30)
    lines = run_path.read_text().splitlines()
    qid = lines[-1].split()[0]
    mine = [i for i, text in enumerate(lines) if text.split()[0] == qid]
    if len(mine) < 2:
        pytest.skip("the last query has one row")
    lines[mine[-1]] = lines[mine[0]]
    run_path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as whole:
        read_run(run_path)
    with pytest.raises(InputError) as pieces:
        for _ in iter_run_chunks(run_path, chunk_bytes=500, block_size=256):
            pass
    assert str(pieces.value) == str(whole.value)


def test_one_query_longer_than_a_piece_is_read_whole(tmp_path):
    rows = [f"big Q0 D{i} {i + 1} {1000 - i * 0.5} t" for i in range(5000)]
    rows += [f"small Q0 D{i} {i + 1} {10 - i} t" for i in range(3)]
    path = tmp_path / "run.txt"
    path.write_text("\n".join(rows) + "\n")
    pieces = [piece for piece, _ in iter_run_chunks(path, chunk_bytes=4096, block_size=1024)]
    big = [p for p in pieces if "big" in p.query_ids]
    assert len(big) == 1 and len(big[0].ranking("big")[0]) == 5000
    assert sum(len(p) for p in pieces) == 5003


@pytest.mark.parametrize("seed", range(8))
def test_the_digest_holds_what_evaluate_gives_on_the_whole_run(tmp_path, seed):
    run_path, qrels_path = _world(tmp_path, seed, gz=seed == 3)
    qrels = read_qrels(qrels_path)
    universe = query_universe(qrels).query_ids
    rel = 1 + seed % 2
    digest = digest_run(run_path, qrels, MEASURES, universe, rel=rel, chunk_bytes=900)
    run = read_run(run_path)
    whole = evaluate(run, qrels, MEASURES, universe, rel=rel)
    got = digest.per_query
    assert got.query_ids == whole.query_ids
    assert list(got.values) == list(whole.values)
    for name in whole.values:
        assert np.array_equal(got.values[name], whole.values[name]), name
    for name in whole.ties:
        assert np.array_equal(got.ties[name], whole.ties[name]), name
    assert (got.missing, got.extra, got.no_relevant) == (whole.missing, whole.extra, whole.no_relevant)
    assert (digest.query_ids, len(digest), digest.tag, digest.source) == (run.query_ids, len(run), run.tag,
                                                                            run.source)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("k_rank,k_recall", [(10, 100), (1, 1), (3, 20), (50, 5)])
def test_the_vectorised_lookups_answer_as_the_per_query_lookup(tmp_path, seed, k_rank, k_recall):
    run_path, qrels_path = _world(tmp_path, seed)
    run, qrels = read_run(run_path), read_qrels(qrels_path)
    relevant = relevant_sets(qrels.judgments, run.query_ids, 1 + seed % 3)
    one_by_one = RankedLookup(run)
    answers = look_all(run, relevant, k_rank, k_recall)
    assert set(answers) == set(relevant) & set(run.query_ids)
    for qid, answer in answers.items():
        assert answer == one_by_one.look(qid, relevant[qid], k_rank, k_recall), qid


def test_ranking_fingerprints_tell_rankings_apart_as_same_rankings_does(tmp_path):
    run_path, _ = _world(tmp_path, 2)
    run = read_run(run_path)
    qid = next(q for q in run.query_ids if len(run.ranking(q)[0]) > 5)
    base = {q: dict(zip(*[x.tolist() for x in run.ranking(q)])) for q in run.query_ids}
    from gate.inputs.readers.records import Run

    def fingerprint(rankings):
        return ranking_fingerprints(Run.from_rankings("x", rankings))[qid]

    same = fingerprint(base)
    rescored = {**base, qid: {d: s * 2 + 1 for d, s in base[qid].items()}}  # same order, other scores
    assert fingerprint(rescored) == same
    docs = sorted(base[qid], key=lambda d: (-base[qid][d], [-ord(c) for c in d]))
    swapped = dict(base[qid])
    swapped[docs[0]], swapped[docs[1]] = base[qid][docs[1]] - 1e-9, base[qid][docs[0]] + 1e-9
    changed = {**base, qid: swapped}
    assert same_rankings(Run.from_rankings("a", base), Run.from_rankings("b", changed), [qid]) is False
    assert fingerprint(changed) != same
    renamed = {**base, qid: {("X" + d if d == docs[2] else d): s for d, s in base[qid].items()}}
    assert fingerprint(renamed) != same


def _rows(rankings):
    return "".join(f"{q} Q0 {d} {r} {s} t\n" for q, docs in rankings.items()
                   for r, (d, s) in enumerate(docs, start=1))


def test_compare_calls_rankings_unchanged_only_when_every_query_is_ranked_the_same(tmp_path):
    import gate

    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{i} 0 D{i}a 1\nq{i} 0 D{i}b 0\n" for i in range(30)))
    base = {f"q{i}": [(f"D{i}a", 3.0), (f"D{i}x", 2.0), (f"D{i}y", 1.0), (f"D{i}b", 0.5)] for i in range(30)}
    paths = {}
    for name, rankings in {
        "base": base,
        # the same order with other scores: unchanged
        "rescored": {q: [(d, s * 10 + 1) for d, s in docs] for q, docs in base.items()},
        # two unjudged documents swapped in one query: every value equal, the ranking is not
        "swapped": {**base, "q7": [("D7a", 3.0), ("D7y", 2.0), ("D7x", 1.0), ("D7b", 0.5)]},
    }.items():
        paths[name] = tmp_path / f"{name}.run"
        paths[name].write_text(_rows(rankings))
    codes = {name: gate.compare(str(paths["base"]), str(paths[name]), str(qrels)).verdict.reasons[0].code
             for name in ("base", "rescored", "swapped")}
    assert codes["base"] == codes["rescored"] == "unchanged"
    assert codes["swapped"] != "unchanged"


@pytest.fixture
def side_by_side(monkeypatch):
    """Any two runs are read side by side (the second in a child process), however small."""
    import gate.evaluation.streaming

    monkeypatch.setattr(gate.evaluation.streaming, "SIDE_BY_SIDE_BYTES", 0)


def _pair(tmp_path, broken=()):
    paths = {}
    for name in ("baseline", "candidate"):
        folder = tmp_path / name
        folder.mkdir()
        paths[name], qrels_path = _world(folder, 11, queries=200)
        if name in broken:
            lines = paths[name].read_text().splitlines()
            at = 10 if name == "candidate" else len(lines) - 3  # the later failure comes first in time
            lines[at] = lines[at].replace(" Q0 ", " QX ")
            paths[name].write_text("\n".join(lines) + "\n")
    return paths, qrels_path


@pytest.mark.parametrize("broken", [("baseline",), ("candidate",), ("baseline", "candidate")])
def test_two_runs_read_side_by_side_report_the_error_reading_them_in_turn_reports(tmp_path, broken, side_by_side):
    from gate.evaluation.streaming import digest_runs

    paths, qrels_path = _pair(tmp_path, broken)
    qrels = read_qrels(qrels_path)
    universe = query_universe(qrels).query_ids
    with pytest.raises(InputError) as raised:
        digest_runs([paths["baseline"], paths["candidate"]], qrels, MEASURES, universe, qrels_spec=str(qrels_path))
    assert raised.value.path == str(paths[broken[0]])
    if broken == ("candidate",):
        assert raised.value.line == 11 and "column 2" in raised.value.message


def test_a_run_digested_in_the_child_process_is_the_one_digested_here(tmp_path, side_by_side, monkeypatch):
    from gate.evaluation.streaming import digest_runs

    paths, qrels_path = _pair(tmp_path)
    qrels = read_qrels(qrels_path)
    universe = query_universe(qrels).query_ids
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret_never_in_the_child")
    here = digest_run(paths["candidate"], qrels, MEASURES, universe, rel=2, sha256=True)
    _, there = digest_runs([paths["baseline"], paths["candidate"]], qrels, MEASURES, universe,
                           qrels_spec=str(qrels_path), rel=2, sha256=True)
    for name in here.per_query.values:
        assert np.array_equal(here.per_query.values[name], there.per_query.values[name])
    assert (there.query_ids, there.rows, there.tag, there.sha256, there.source) == (
        here.query_ids, here.rows, here.tag, here.sha256, here.source)
    assert there.looked == here.looked


def test_the_child_process_gets_no_token_and_never_imports_the_working_directory(tmp_path, monkeypatch):
    from gate.evaluation import digest_child

    (tmp_path / "gate.py").write_text("raise SystemExit('imported from the working directory')\n")
    (tmp_path / "json.py").write_text("raise SystemExit('imported from the working directory')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret_never_in_the_child")
    monkeypatch.setenv("INPUT_GITHUB-TOKEN", "ghs_secret_never_in_the_child")
    spy = tmp_path / "spy.run"
    spy.write_text("q1 Q0 D1 1 1.0 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 D1 1\n")
    seen = {}
    real_popen = digest_child.subprocess.Popen

    def popen(*args, **kwargs):
        seen.update(kwargs["env"])
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(digest_child.subprocess, "Popen", popen)
    digest = digest_child.start(spy, str(qrels), ["AP"], ["q1"], rel=1, k_rank=10, k_recall=100,
                                sha256=False).result()
    assert digest.per_query.values["AP"].tolist() == [1.0]
    assert "GITHUB_TOKEN" not in seen and "INPUT_GITHUB-TOKEN" not in seen
    assert not any("ghs_secret" in value for value in seen.values())


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("measures", [MEASURES, ["nDCG@10", "P@5"]], ids=["full-depth", "cut-at-10"])
def test_the_digest_looks_up_first_relevant_documents_as_the_whole_run_does(tmp_path, seed, measures):
    """With a measure at full depth (AP) the lookups come from evaluate's own labels
    (looks_from_labels); with cutoffs only, from a join of their own (look_all)."""
    run_path, qrels_path = _world(tmp_path, seed)
    qrels = read_qrels(qrels_path)
    universe = query_universe(qrels).query_ids
    rel = 1 + seed % 3
    digest = digest_run(run_path, qrels, measures, universe, rel=rel, chunk_bytes=1500)
    run = read_run(run_path)
    one_by_one = RankedLookup(run)
    relevant = relevant_sets(qrels.judgments, universe, rel)
    present = set(run.query_ids)
    assert set(digest.looked.answers) == set(relevant) & present
    for qid in relevant:
        assert digest.looked.look(qid, relevant[qid], 10, 100) == one_by_one.look(qid, relevant[qid], 10, 100), qid
    assert digest.looked.present == frozenset(run.query_ids)


def test_a_child_started_before_the_qrels_are_loaded_evaluates_the_same_universe(tmp_path, side_by_side):
    """compare starts the candidate's child first (start_side_digest): it loads the qrels and the
    golden queries itself and must evaluate the universe this process makes of them."""
    from gate.evaluation.streaming import digest_runs, start_side_digest
    from gate.inputs.readers.queries import read_queries

    paths, qrels_path = _pair(tmp_path)
    qrels = read_qrels(qrels_path)
    judged = sorted(q for q, docs in qrels.judgments.items() if docs)
    queries_path = tmp_path / "queries.tsv"
    queries_path.write_text("".join(f"{q}\tquery {q}\n" for q in judged[::2] + ["golden-unjudged"]))
    universe = query_universe(qrels, read_queries(queries_path)).query_ids
    assert 0 < len(universe) < len(judged)
    side = start_side_digest([paths["baseline"], paths["candidate"]], str(qrels_path), str(queries_path), MEASURES,
                             rel=2, sha256=True)
    assert side is not None
    _, there = digest_runs([paths["baseline"], paths["candidate"]], qrels, MEASURES, universe, rel=2, sha256=True,
                           side=side)
    here = digest_run(paths["candidate"], qrels, MEASURES, universe, rel=2, sha256=True)
    assert there.per_query.query_ids == universe
    for name in here.per_query.values:
        assert np.array_equal(here.per_query.values[name], there.per_query.values[name])
    assert there.looked == here.looked


def test_a_universe_that_changed_between_the_two_reads_is_an_input_error(tmp_path, side_by_side):
    from gate.evaluation.streaming import digest_runs, start_side_digest

    paths, qrels_path = _pair(tmp_path)
    qrels = read_qrels(qrels_path)
    universe = query_universe(qrels).query_ids
    side = start_side_digest([paths["baseline"], paths["candidate"]], str(qrels_path), None, MEASURES)
    with pytest.raises(InputError) as raised:
        digest_runs([paths["baseline"], paths["candidate"]], qrels, MEASURES, universe[1:], side=side)
    assert "changed while the gate read them" in raised.value.message


def test_meanwhile_runs_once_between_the_two_digests(tmp_path, side_by_side):
    from gate.evaluation.streaming import digest_runs

    paths, qrels_path = _pair(tmp_path)
    qrels = read_qrels(qrels_path)
    calls = []
    digest_runs([paths["baseline"], paths["candidate"]], qrels, MEASURES, query_universe(qrels).query_ids,
                qrels_spec=str(qrels_path), meanwhile=lambda: calls.append(1))
    digest_runs([paths["baseline"], paths["candidate"]], qrels, MEASURES, query_universe(qrels).query_ids,
                meanwhile=lambda: calls.append(2))  # no qrels spec: in turn, here
    assert calls == [1, 2]


def test_compare_stops_the_early_child_when_the_qrels_are_bad(tmp_path, side_by_side, monkeypatch):
    from gate.evaluation import digest_child
    from gate.pipeline.compare import compare_files

    paths, qrels_path = _pair(tmp_path)
    bad = tmp_path / "bad_qrels.txt"
    bad.write_text("q1 0 D1 x\n")
    started = []
    real_start = digest_child.start

    def start(*args, **kwargs):
        started.append(real_start(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(digest_child, "start", start)
    with pytest.raises(InputError) as raised:
        compare_files(str(paths["baseline"]), str(paths["candidate"]), str(bad))
    assert raised.value.path == str(bad)
    assert started and started[0].proc.poll() is not None  # stopped, not left running


def test_an_empty_queries_option_means_no_queries_for_the_early_child_too(tmp_path, side_by_side):
    """`--queries ""` (a CI wrapper's unset input) is "no query file" whatever the runs' size."""
    from gate.pipeline.compare import compare_files

    paths, qrels_path = _pair(tmp_path)
    result = compare_files(str(paths["baseline"]), str(paths["candidate"]), str(qrels_path), "")
    assert result.report.to_dict()["query_count"] == len(query_universe(read_qrels(qrels_path)).query_ids)


@pytest.mark.parametrize("rel", [1, 2, 3])
def test_relevant_sets_are_the_plain_sets_of_relevant_documents(rel):
    """The lazy mapping answers as a dict of sets built at once would: same queries, same order,
    same sets (asked for in any order, twice), and a query without a relevant document absent."""
    rng = random.Random(rel)
    judgments = {f"q{i}": {f"d{j}": rng.choice([-1, 0, 0, 1, 2, 3]) for j in range(rng.randrange(0, 8))}
                 for i in range(60)}
    asked = [f"q{i}" for i in rng.sample(range(70), 70)] + ["q3", "q3"]  # unknown ids and a repeat
    plain = {}
    for qid in asked:
        docs = {doc for doc, label in judgments.get(qid, {}).items() if label >= rel}
        if docs:
            plain[qid] = docs
    got = relevant_sets(judgments, asked, rel)
    assert list(got) == list(plain) and len(got) == len(plain)
    for qid in reversed(list(plain)):
        assert got[qid] == plain[qid] and got[qid] is got[qid]
    assert all((qid in got) == (qid in plain) for qid in asked)
    assert dict(got) == plain
    with pytest.raises(KeyError):
        got["q-none"]
