"""The built-in demo: generated inputs, then the gate run on them, offline.

* :mod:`gate.demo.example_files`: small example files for ``compare``.
* :mod:`gate.demo.world`: the demo world, ``build_world(out_dir, seed=7, scale=1.0)``:
  the documentation site of a fictional API product (about 3,000 pages, 20,000
  chunks at scale 1.0), two corpus snapshots (ingestion parser ``v1`` drops
  tables, ``v2`` keeps them; a leaked FAQ page only in ``v2``), a golden set
  that grew from 80 (v4) to 140 (v5) queries in six strata, graded qrels for
  both, the strata shares and the retrieval configs of the baseline and the
  pull request. :mod:`gate.demo.text` holds its vocabulary and templates.
* The retriever the demo runs is the ``reference`` runner,
  :mod:`gate.runs.reference` (BM25 + HNSW dense leg, reciprocal-rank
  fusion; needs the ``reference`` extra).
"""
