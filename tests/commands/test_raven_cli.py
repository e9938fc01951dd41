"""`stylebench raven`: config errors (file:line: key.path, exit 2, before any work), a tiny end-to-end
run on a Bible-format corpus written by the test (resume, identical bytes, per-method invalidation),
any corpus as a file (JSONL / TSV.gz, with and without topics) or a `data build` folder, and folds
that cannot be scored reported in one line before any method runs."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "raven"))
from raven_tiny import THEMES, verse_text, write_tiny_bible  # noqa: E402

from stylebench_jax.cli import main  # noqa: E402

TINY = """\
corpus:
  name: bible_8_versions
  bible:
    verses_per_passage: 2
    passages_per_book: 2
sampling:
  n_topics: 6
  k_folds: 3
  topic_embedder: baseline:function_words
  random_seeds: [0, 1]
  sweep: [3, 9, 12]
methods:
  topic_fit: {mask_top_k: 5}
  embedders: [baseline:function_words]
"""


def run_cli(capsys, *args):
    code = main(["raven", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(code, err):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("stylebench raven: error:"), err
    return lines[0]


@pytest.fixture()
def tiny_root(tmp_path) -> Path:
    return write_tiny_bible(tmp_path / "data")


def write_config(tmp_path, text: str) -> Path:
    path = tmp_path / "raven.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("replace, expected", [
    (("  k_folds: 3\n", "  k_folds: 3\n  n_topic: 4\n"), ":9: sampling.n_topic: unknown key 'n_topic'"),
    (("  n_topics: 6\n", "  n_topics: 5\n"), ":7: sampling.n_topics: expected a multiple of k_folds (3)"),
    (("embedders: [baseline:function_words]", "embedders: [baseline:nope]"),
     ":14: methods.embedders[0]: unknown baseline 'nope'"),
    (("embedders: [baseline:function_words]", "embedders: [baseline:char3gram]"),
     ":14: methods.embedders[0]: 'baseline:char3gram' is a pair similarity"),
    (("  n_topics: 6\n", "  n_topics: 30\n"),
     ":7: sampling.n_topics: 30 topics needed but bible_8_versions has 12"),
    (("name: bible_8_versions", "name: reuters_c50"),
     ":2: corpus.derive_topics: reuters_c50 has no topic labels"),
    # RAVEN's default 10,000 masks every word of a small corpus: was a traceback after other methods ran
    (("mask_top_k: 5", "mask_top_k: 100000"),
     ":13: methods.topic_fit.mask_top_k: 100000 masks every word of fold 0's training documents"),
])
def test_bad_config_is_located_and_exits_2(capsys, tmp_path, tiny_root, cache_dir, replace, expected):
    config = write_config(tmp_path, TINY.replace(*replace))
    code, _, err = run_cli(capsys, "--config", str(config), "--output", str(tmp_path / "out"),
                           "--data-root", str(tiny_root), "--quiet")
    assert f"{config}{expected}" in one_line_error(code, err)
    assert not (tmp_path / "out" / "raven.json").exists()


def test_bad_override_and_missing_config(capsys, tmp_path, tiny_root, cache_dir):
    config = write_config(tmp_path, TINY)
    code, _, err = run_cli(capsys, "--config", str(config), "--output", str(tmp_path / "out"),
                           "--data-root", str(tiny_root), "sampling.k_folds=x")
    assert "override 'sampling.k_folds=x': sampling.k_folds: expected an integer" in one_line_error(code, err)
    code, _, err = run_cli(capsys, "--config", str(tmp_path / "none.yaml"), "--output", str(tmp_path / "o"))
    assert "none.yaml: config file not found" in one_line_error(code, err)


def test_help_explains_outputs(capsys):
    with pytest.raises(SystemExit) as info:
        main(["raven", "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for word in ("raven.json", "topic_similarity", "--force", "resume", "key=value", "ppm", "topic_fit"):
        assert word in text


def test_tiny_end_to_end_resume_and_identical_bytes(capsys, tmp_path, tiny_root, cache_dir):
    config = write_config(tmp_path, TINY)
    out = tmp_path / "run"
    args = ["--config", str(config), "--output", str(out), "--data-root", str(tiny_root), "--quiet"]
    code, stdout, err = run_cli(capsys, *args)
    assert code == 0, err
    assert "36 fold results computed, 0 reused" in stdout  # 3 datasets x 3 folds x 4 methods
    report = json.loads((out / "raven.json").read_text())
    for kind in ("hits", "random"):
        for key in ("mean", "max"):
            assert 0.0 < report["topic_similarity"][kind][key] <= 1.0
    assert report["models"] == ["char_ngram", "ppm", "topic_fit", "baseline:function_words"]
    assert set(report["scores"]["ppm"]) == {"auc", "c_at_1", "f05u", "f1", "overall"}
    assert [e["n_topics"] for e in report["topic_similarity_sweep"]] == [3, 6, 9, 12]
    assert {r["model"] for r in report["shortcut"]["rows"]} == set(report["models"])
    assert [r["dataset"] for r in report["stability"]] == ["HITS", "R_avg", "R_0", "R_1"]
    assert len(report["datasets"]["hits"]["folds"]) == 3
    # test: 2 books x 2 passages x 8 versions, two pairs each
    assert report["datasets"]["hits"]["folds"][0]["test_pairs"] == 64
    assert (out / "raven.html").read_text().count("data:image/png;base64") == 3
    assert "Table 11" in (out / "raven.md").read_text()
    first = (out / "raven.json").read_bytes()

    code, stdout, err = run_cli(capsys, *args)
    assert code == 0, err
    assert "0 fold results computed, 36 reused" in stdout
    assert (out / "raven.json").read_bytes() == first
    info = json.loads((out / "run_info.json").read_text())
    assert info["cache"]["misses"] == 0 and info["cache"]["hits"] > 0  # embeddings from the cache

    code, stdout, _ = run_cli(capsys, *args, "methods.topic_fit.mask_top_k=6")
    assert code == 0 and "9 fold results computed, 27 reused" in stdout  # only topic_fit changed
    code, stdout, _ = run_cli(capsys, *args, "--force")
    assert code == 0 and "36 fold results computed" in stdout
    assert (out / "raven.json").read_bytes() == first


# --------------------------------------------------------------------------- any corpus: files and builds


def corpus_rows(n_topics: int = 6, n_authors: int = 6, docs: int = 2) -> list[dict]:
    """Authors write in their own style (raven_tiny's version styles), topics use their own theme."""
    rows = []
    for t in range(n_topics):
        theme = THEMES[t % len(THEMES)]
        for a in range(n_authors):
            for d in range(docs):
                parts = [verse_text(np.random.default_rng([t, a, d, part]), theme, a) for part in (0, 1)]
                text = " ".join(parts)
                rows.append({"body": text, "who": f"writer{a}", "subject": f"topic{t}"})
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def corpus_config(tmp_path: Path, corpus: str, *, k_folds: int = 3) -> Path:
    return write_config(tmp_path, f"""\
corpus:
{corpus}
sampling:
  n_topics: 6
  k_folds: {k_folds}
  topic_embedder: baseline:function_words
  random_seeds: [0, 1]
methods:
  ppm: {{enabled: false}}
  topic_fit: {{mask_top_k: 5}}
  embedders: [baseline:function_words]
""")


def run_corpus(capsys, tmp_path, config, out="run"):
    return run_cli(capsys, "--config", str(config), "--output", str(tmp_path / out), "--data-root",
                   str(tmp_path), "--quiet")


def test_file_corpus_with_topics(capsys, tmp_path, cache_dir):
    path = write_jsonl(tmp_path / "posts.jsonl", corpus_rows())
    config = corpus_config(tmp_path, f"  name: file\n  file: {{path: {path}, text: body, author: who, "
                                     "topic: subject}")
    code, stdout, err = run_corpus(capsys, tmp_path, config)
    assert code == 0, err
    assert "27 fold results computed" in stdout  # 3 datasets x 3 folds x 3 methods
    report = json.loads((tmp_path / "run" / "raven.json").read_text())
    assert report["corpus"]["name"] == "posts.jsonl"
    stats = report["corpus"]
    assert (stats["documents"], stats["authors"], stats["topics"]) == (72, 6, 6)
    assert set(report["datasets"]["hits"]["topics"]) == {f"topic{t}" for t in range(6)}
    fold = report["datasets"]["hits"]["folds"][0]
    assert fold["test_documents"] == 2 * 6 * 2 and fold["test_pairs"] == 2 * fold["test_documents"]


def test_file_corpus_without_topics_derives_them(capsys, tmp_path, cache_dir):
    path = tmp_path / "posts.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("who\tbody\n" + "".join(f"{r['who']}\t{r['body']}\n" for r in corpus_rows()))
    corpus = f"  name: file\n  file: {{path: {path}, text: body, author: who}}\n"
    derive = "  derive_topics: {n_topics: 6, embedder: baseline:function_words}"
    config = corpus_config(tmp_path, corpus + derive)
    code, stdout, err = run_corpus(capsys, tmp_path, config)
    assert code == 0, err
    report = json.loads((tmp_path / "run" / "raven.json").read_text())
    assert report["corpus"]["name"] == "posts.tsv.gz" and report["corpus"]["documents"] == 72
    assert any("k-means (6 clusters)" in note for note in report["corpus"]["notes"])
    assert all(topic.startswith("T0") for topic in report["datasets"]["hits"]["topics"])
    # without derive_topics the file corpus without a topic field is refused before any work
    code, _, err = run_corpus(capsys, tmp_path, corpus_config(tmp_path, corpus.rstrip("\n")), out="bad")
    assert f"{tmp_path / 'raven.yaml'}:2: corpus.derive_topics: the file corpus names no topic field" \
        in one_line_error(code, err)


def test_built_benchmark_as_corpus(capsys, tmp_path, cache_dir):
    from stylebench_jax.config import config_from_dict
    from stylebench_jax.data.construct import BuildConfig, build_benchmark

    write_jsonl(tmp_path / "posts.jsonl", corpus_rows())
    build_benchmark(config_from_dict(BuildConfig, {
        "name": "my_bench", "output": str(tmp_path / "built"), "author_salt": "s", "data_root": str(tmp_path),
        "sources": [{"name": "posts", "path": "posts.jsonl", "format": "jsonl",
                     "fields": {"text": "body", "author": "who", "topic": "subject"},
                     "constants": {"language": "en", "genre": "social_media"}}],
        "dedup": {"near": False}, "filters": {"thresholds": {"min_unique_token_ratio": None}},
        "splits": {"proportions": {"train": 0.5, "test": 0.5}}}), log=lambda message: None)
    config = corpus_config(tmp_path, f"  name: built\n  built: {{path: {tmp_path / 'built'}}}")
    code, stdout, err = run_corpus(capsys, tmp_path, config)
    assert code == 0, err
    report = json.loads((tmp_path / "run" / "raven.json").read_text())
    manifest = json.loads((tmp_path / "built" / "manifest.json").read_text())
    assert report["corpus"]["name"] == "my_bench"
    assert report["corpus"]["documents"] == manifest["stages"]["final"]  # both splits
    assert report["corpus"]["authors"] == sum(s["authors"] for s in manifest["splits"].values()) >= 4
    assert report["corpus"]["topics"] == 6
    config = corpus_config(tmp_path, f"  name: built\n  built: {{path: {tmp_path / 'built'}, splits: [dev]}}")
    code, _, err = run_corpus(capsys, tmp_path, config, out="bad")
    assert ":3: corpus.built.splits[0]: " in one_line_error(code, err) and "the build has test, train" in err


@pytest.mark.parametrize("corpus, expected", [
    ("  name: file\n  file: {path: nowhere.jsonl, topic: subject}",
     ":3: corpus.file.path: nowhere.jsonl: no such file"),
    ("  name: file\n  file: {path: POSTS, topic: subject, text: body, author: writer}",
     "posts.jsonl:1: missing key 'writer'"),
    ("  name: file\n  file: {path: POSTS, topic: subject, text: body, author: who, format: csv}",
     "posts.jsonl:1: header is missing column(s) 'body', 'who', 'subject'"),
    ("  name: file", ":2: corpus.file: corpus 'file' needs its section"),
    ("  name: built\n  built: {path: DIR}", ":3: corpus.built.path: "),
    ("  name: file\n  file: {path: POSTS, text: body, author: who}\n  derive_topics: {n_topics: 500, "
     "embedder: baseline:function_words}",
     ":4: corpus.derive_topics.n_topics: posts.jsonl: cannot derive 500 topics from 72 documents"),
])
def test_bad_corpus_source_is_located(capsys, tmp_path, cache_dir, corpus, expected):
    posts = write_jsonl(tmp_path / "posts.jsonl", corpus_rows())
    config = corpus_config(tmp_path, corpus.replace("POSTS", str(posts)).replace("DIR", str(tmp_path)))
    code, _, err = run_corpus(capsys, tmp_path, config)
    line = one_line_error(code, err)
    assert (f"{config}{expected}" if expected.startswith(":") else expected) in line, line
    assert not (tmp_path / "run" / "raven.json").exists()


@pytest.mark.parametrize("change, expected", [
    # topic5 written by writer0 alone: a fold testing on it has one author
    (lambda rows: [r for r in rows if r["subject"] != "topic5" or r["who"] == "writer0"],
     "test topics topic5): pair sampling needs documents of at least two authors, found 1"),
    # topic5 with one document per author: its test pairs are all different-author
    (lambda rows: [r for i, r in enumerate(rows) if r["subject"] != "topic5" or i % 2 == 0],
     "test topics topic5): all 6 test pairs are different-author"),
])
def test_fold_without_two_authors_or_positives_is_a_one_line_error(capsys, tmp_path, cache_dir, change,
                                                                  expected):
    path = write_jsonl(tmp_path / "posts.jsonl", change(corpus_rows()))
    config = corpus_config(tmp_path, f"  name: file\n  file: {{path: {path}, text: body, author: who, "
                                     "topic: subject}", k_folds=6)
    code, _, err = run_corpus(capsys, tmp_path, config)
    line = one_line_error(code, err)
    assert f"{config}:6: sampling.k_folds: dataset 'hits', fold " in line and expected in line, line
    assert not (tmp_path / "run" / "folds").exists()  # found before any method ran
