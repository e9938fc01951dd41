"""raven.md / raven.html: RAVEN's tables in its numbering, the protocol named, undefined values shown
as "–" (and drawn as no bar) instead of crashing, significance stars where p < 0.05 (p = 0 too)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from raven_tiny import write_tiny_bible

from stylebench_jax.config import config_from_dict
from stylebench_jax.raven.config import RavenConfig
from stylebench_jax.raven.corpus import bible_documents
from stylebench_jax.raven.pipeline import build_report, sample_datasets, similarity_tables
from stylebench_jax.raven.topics import nmf_vectors
from stylebench_jax.report.raven import render_markdown, tables, write_raven_report

MODELS = ["ppm", "R&D|<model>", "weak"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("bible")
    write_tiny_bible(root)
    corpus = bible_documents(root, verses_per_passage=2, passages_per_book=2, seed=0)
    config = config_from_dict(RavenConfig, {"corpus": {"name": "bible_8_versions"}, "sampling": {
        "n_topics": 6, "k_folds": 3, "random_seeds": [0, 1], "representation": "nmf", "n_components": 4,
        "sweep": [3, 9]}})
    representation = nmf_vectors(corpus.texts, n_components=4)
    datasets = sample_datasets(config, corpus, representation)
    similarity = similarity_tables(config, corpus, representation, datasets)
    rng = np.random.default_rng(0)
    predictions = {d.name: {m: [np.clip(0.5 + 0.2 * i * (f.test_pairs.labels - 0.5)
                                        + 0.2 * rng.standard_normal(len(f.test_pairs.labels)), 0, 1)
                                for f in d.folds] for i, m in enumerate(MODELS)} for d in datasets}
    return json.loads(json.dumps(build_report(config, corpus, datasets, MODELS, predictions, similarity)))


def test_tables_in_ravens_order_and_protocol_named(report, tmp_path):
    assert [t[0].split(":")[0] for t in tables(report)] == [
        "Table 1", *["Table 2"] * len(report["metrics_reported"]), "Table 4", "Table 5", "Table 6", "Table 7",
        "Table 11"]
    paths = write_raven_report(tmp_path, report)
    markdown, page = paths["markdown"].read_text(), paths["html"].read_text()
    for text in (markdown, page):
        assert "RAVEN/HITS (Sawatphol et al.)" in text and "random seeds [0, 1]" in text
    assert "| R\\&D\\|\\<model\\> |" in markdown and "R&amp;D|&lt;model&gt;" in page
    assert "mean True" not in markdown and "HITS lower than random: mean " in markdown


def test_undefined_values_and_p_zero(report, tmp_path):
    row = next(r for r in report["shortcut"]["rows"] if r["model"] == "weak")
    row.update(hits=None, avg=None, diff=None, rank_avg=None, rank_diff=None)
    cell = report["stability"][0]["metrics"]["auc"]
    report["stability"][1]["metrics"]["auc"]["lower_than_hits"] = {"p": 0.0}
    report["scores"]["ppm"]["auc"]["hits_lower"] = {"p": float("nan")}
    cell["mean"] = None
    markdown = render_markdown(report)
    line = next(li for li in markdown.splitlines() if li.startswith("| weak |") and li.count("|") == 8)
    assert "None" not in line and line.endswith("| – | – |")
    second = f"| {report['stability'][1]['dataset']} |"
    r_avg = next(li for li in markdown.splitlines() if li.startswith(second))
    assert r_avg.split("|")[2].strip().endswith("*")  # p = 0.0 is significant
    assert "nan" not in markdown
    write_raven_report(tmp_path, report)  # the figures draw no bar for None (it raised TypeError)
