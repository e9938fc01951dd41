"""Built benchmarks as evaluation units: a tiny `stylebench data build` output read back, run through
the task table (attribution, verification), the registry's lookup of the built directory, suites and
`stylebench eval --built` naming any build folder, and the config's evaluation split honoured."""

import json

import numpy as np
import pytest

from stylebench_jax.cli import main
from stylebench_jax.config import config_from_dict
from stylebench_jax.data.authbench import build_units, load_built_split, load_built_units, subsample_authors
from stylebench_jax.data.construct import BuildConfig, build_benchmark
from stylebench_jax.data.suites import load_suite
from stylebench_jax.data.units import EvalUnit
from stylebench_jax.errors import UserInputError
from stylebench_jax.tasks.base import TaskContext, TextScorer
from stylebench_jax.tasks.registry import run_task

WORDS = ("river heron dawn bread fence poetry candle market shares board dividend mining trading "
         "garden letter summer library tram council oil rates bank").split()


class BagOfWords:
    """Deterministic fake embedder: word counts over a fixed vocabulary (+1 so no row is zero)."""

    name, identity, dim = "bow", "bow:v1", len(WORDS) + 1

    def embed(self, texts):
        return np.array([[t.lower().count(w) for w in WORDS] + [1] for t in texts], dtype=np.float32)


def build_tiny(tmp_path, output, **extra):
    """A tiny benchmark built from 6 authors x 4 posts written here into ``output``."""
    rng = np.random.default_rng(0)
    rows = []
    for a in range(6):
        vocab = WORDS[a * 3:a * 3 + 5]
        for d in range(4):
            words = rng.choice(vocab, size=12).tolist() + rng.choice(WORDS, size=4).tolist()
            rows.append({"user": f"u{a}", "body": " ".join(words) + f" number {d}.",
                         "topic": "x" if d % 2 else "y", "sub": "people" if a % 2 else "sports"})
    with open(tmp_path / "posts.jsonl", "w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    config = config_from_dict(BuildConfig, {
        "name": "tiny", "output": str(output), "author_salt": "s",
        "data_root": str(tmp_path),
        "sources": [{"name": "posts", "path": "posts.jsonl", "format": "jsonl",
                     "fields": {"text": "body", "author": "user", "topic": "topic", "subgenre": "sub"},
                     "constants": {"language": "en", "genre": "social_media"}}],
        "dedup": {"near": False}, "filters": {"thresholds": {"min_unique_token_ratio": None}},
        "splits": {"proportions": {"test": 1.0}}, "evaluation": {"ks": [1, 3], "negatives_per_query": 5},
        **extra})
    return build_benchmark(config, log=lambda m: None)


@pytest.fixture()
def built(tmp_path):
    build_tiny(tmp_path, tmp_path / "authbench_en")
    return tmp_path


def test_built_split_reads_back_with_the_protocol(built):
    payload = load_built_split(built / "authbench_en", "test")
    assert len(payload.texts) == 24 and len(set(payload.authors)) == 6
    assert payload.ks == (1, 3) and payload.negatives_per_query == 5 and payload.mrr_cutoff == 100
    assert set(payload.subgenres) == {"people", "sports"} and set(payload.topics) == {"x", "y"}
    small = subsample_authors(payload, 2, np.random.default_rng(0))
    assert len(set(small.authors)) == 2 and len(small.texts) == 8 and small.ks == (1, 3)


def test_tasks_run_through_the_task_table(built):
    units = build_units(built, size="full")
    assert [u.task for u in units] == ["attribution", "verification"]
    scorer = TextScorer(BagOfWords())
    attribution = {s.metric: s for s in run_task("attribution", scorer, units[0].payload, seed=0, n_boot=50,
                                                 context=TaskContext())}
    assert list(attribution)[:3] == ["success@1", "recall@1", "ndcg@1"]  # no K = 5 here: the first K leads
    assert attribution["success@3"].n == 24 and 0.0 <= attribution["recall@3"].value <= 1.0
    assert attribution["success@3|genre=social_media"].n == 24
    assert "success@3|pool=topic" in attribution
    verification = {s.metric: s for s in run_task("verification", scorer, units[1].payload, seed=0, n_boot=50,
                                                  context=TaskContext())}
    assert list(verification)[:3] == ["eer", "eer_roc", "auroc"]
    assert verification["eer"].n == 24 and "eer|pool=topic" in verification


def test_missing_build_names_the_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # runs/data/authbench_en of a checkout that built it must not be found
    with pytest.raises(UserInputError, match="stylebench data build configs/data/authbench_en.yaml"):
        build_units(tmp_path, size="quick")
    with pytest.raises(ValueError, match="no author has two documents"):
        EvalUnit("x", "test", "attribution", load_built_split_like(["a", "b"]))


def load_built_split_like(authors):
    from stylebench_jax.data.authbench import AuthorshipSet

    n = len(authors)
    return AuthorshipSet(["t"] * n, authors, ["en"] * n, ["news"] * n, [""] * n, [5] * n)


def test_the_evaluation_split_of_the_config_is_used(tmp_path):
    result = build_tiny(tmp_path, tmp_path / "two", splits={"proportions": {"dev": 0.5, "test": 0.5}},
                        evaluation={"split": "dev", "ks": [1, 3]})
    dev, test = result.splits["dev"], result.splits["test"]
    dev_authors = {r.author_id for r in dev}
    assert dev and test and not dev_authors & {r.author_id for r in test}
    payload = load_built_split(tmp_path / "two")  # no split given: the manifest's evaluation split
    assert len(payload.texts) == len(dev) and set(payload.authors) == dev_authors
    units = load_built_units(tmp_path / "two", size="full")
    assert {(u.dataset, u.subset) for u in units} == {("tiny", "dev")}
    assert set(load_built_split(tmp_path / "two", "test").authors) == {r.author_id for r in test}


def test_suite_entries_name_built_folders(tmp_path, monkeypatch):
    build_tiny(tmp_path, tmp_path / "runs" / "mine", name="my_bench")
    monkeypatch.chdir(tmp_path)  # built paths are relative to the working directory
    suite_file = tmp_path / "suite.yaml"
    suite_file.write_text("name: mine\nsize: full\ndatasets:\n"
                          "  - built: runs/mine\n    tasks: [attribution]\n")
    suite = load_suite(suite_file)
    (entry,) = suite.datasets
    assert entry.name == "my_bench" and entry.tasks == ("attribution",)
    units = suite.load(tmp_path / "no-data-root-needed")
    assert [(u.dataset, u.subset, u.task) for u in units] == [("my_bench", "test", "attribution")]
    assert len(units[0].payload.texts) == 24
    # a manifest that is not a build's: one line naming the manifest's key
    (tmp_path / "runs" / "odd" / "splits").mkdir(parents=True)
    for manifest, expected in (
            ({}, "expected a non-empty string 'name', found None"),
            ({"name": "odd", "config": 5}, "'config': expected an object (the build config), found int"),
            ({"name": "odd", "config": {"evaluation": {"ks": 5}}},
             "'config.evaluation.ks': expected a list of positive integers, found 5"),
            ({"name": "odd", "config": {"evaluation": {"split": 3}}},
             "'config.evaluation.split': expected a split name, found 3")):
        (tmp_path / "runs" / "odd" / "manifest.json").write_text(json.dumps(manifest))
        suite_file.write_text("name: bad\n\ndatasets:\n  - built: runs/odd\n")
        with pytest.raises(UserInputError) as info:
            load_suite(suite_file)
        assert f"runs/odd/manifest.json: {expected}" in str(info.value), str(info.value)
    for text, expected in (
            ("  - built: runs/nothing\n", ":4: datasets[0].built: runs/nothing: not a directory"),
            ("  - built: runs\n", ":4: datasets[0].built: runs: no manifest.json"),
            ("  - built: runs/mine\n    dataset: stel\n", ":5: datasets[0].dataset: give either dataset"),
            ("  - built: runs/mine\n    tasks: [clustering]\n", ":5: datasets[0].tasks[0]: unknown task"),
            ("  - built: runs/mine\n  - built: ./runs/mine\n", ":5: datasets[1].built: dataset 'my_bench' "
                                                               "is listed twice")):
        suite_file.write_text("name: bad\n\ndatasets:\n" + text)
        with pytest.raises(UserInputError) as info:
            load_suite(suite_file)
        assert f"{suite_file}{expected}" in str(info.value), str(info.value)


def test_eval_built_end_to_end(tmp_path, capsys, cache_dir):
    build_tiny(tmp_path, tmp_path / "mine", name="my_bench")
    out = tmp_path / "eval"
    code = main(["eval", "--built", str(tmp_path / "mine"), "--models", "baseline:function_words", "--output",
                 str(out), "--data-root", str(tmp_path), "--n-boot", "20", "--quiet"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {(r["dataset"], r["subset"], r["task"]) for r in rows} == {
        ("my_bench", "test", "attribution"), ("my_bench", "test", "verification")}
    assert {r["metric"] for r in rows} >= {"success@1", "success@3", "ndcg@3", "eer", "auroc"}
    assert not any(r["metric"].startswith("success@5") for r in rows)  # the manifest's ks: 1, 3
    # a folder that is not a build: one line, exit 2, before any work
    code = main(["eval", "--built", str(tmp_path), "--models", "baseline:function_words", "--output",
                 str(tmp_path / "eval2"), "--data-root", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("stylebench eval: error: --built: ") and "no manifest.json" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "eval2").exists()
    code = main(["eval", "--models", "baseline:function_words", "--output", str(tmp_path / "eval2")])
    assert code == 2 and "--suite: required unless --built is given" in capsys.readouterr().err
