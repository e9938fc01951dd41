"""stylebench calibrate: flags checked before any embedding (threshold constraints in [0, 1], enough
pairs of each label for --n-splits folds), --help for every option, and an output directory that
describes only the latest run (no stale figures of an earlier one)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stylebench_jax.cli import build_parser, main
from stylebench_jax.commands import calibrate
from tests.training.test_trainer import write_pairs

MODEL = "baseline:function_words"  # a fast embedding baseline
WORDS = ("the a of and to in it was he she said that with for on at by this had not but").split()


def _pairs_file(path, labels, books=None, seed=0):
    rng = np.random.default_rng(seed)
    text = lambda: " ".join(rng.choice(WORDS, 12)) + " ."  # noqa: E731
    rows = []
    for i, label in enumerate(labels):
        row = {"text1": text(), "text2": text(), "label": label}
        if books is not None:
            row["book1"], row["book2"] = books[i], books[i]
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture()
def no_embedding(monkeypatch):
    """Fails a test whose command gets as far as building the embedder."""
    def refuse(*args, **kwargs):
        raise AssertionError("the embedder was built before the bad input was refused")

    monkeypatch.setattr(calibrate, "build_embedder", refuse)


def _error(capsys, argv) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("flag, value", [("--min-accuracy", "1.5"), ("--min-recall", "-2"),
                                         ("--min-accuracy", "nan"), ("--min-recall", "inf")])
def test_threshold_constraints_out_of_range_exit_2_before_embedding(tmp_path, capsys, cache_dir, no_embedding,
                                                                    flag, value):
    pairs = _pairs_file(tmp_path / "pairs.jsonl", [1, 0] * 10)
    err = _error(capsys, ["calibrate", "--model", MODEL, "--pairs", str(pairs), "--output",
                          str(tmp_path / "out"), flag, value])
    assert f"{flag}: expected a number in [0, 1], found {value}" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("labels, books, extra, expected", [
    ([1, 0], None, [], ["--n-splits 5", "2 pairs", "1 same-style", "1 different-style"]),
    ([1, 0] * 8, None, ["--n-splits", "100"], ["--n-splits 100", "16 pairs"]),
    # stratified folds (no books): 12 pairs but only 2 different-style ones for 5 folds
    ([1] * 10 + [0] * 2, None, [], ["--n-splits 5", "12 pairs", "2 different-style"]),
    # books, but fewer than the folds: the stratified fallback's per-label rule applies
    ([1, 1, 1, 0, 0, 0], ["b1", "b1", "b2", "b2", "b3", "b3"], [], ["--n-splits 5", "3 books"]),
])
def test_too_few_pairs_for_the_folds_exit_2_before_embedding(tmp_path, capsys, cache_dir, no_embedding,
                                                             labels, books, extra, expected):
    pairs = _pairs_file(tmp_path / "pairs.jsonl", labels, books)
    err = _error(capsys, ["calibrate", "--model", MODEL, "--pairs", str(pairs), "--output",
                          str(tmp_path / "out"), *extra])
    for word in expected:
        assert word in err, err
    assert "n_splits=" not in err  # not scikit-learn's own message
    assert not (tmp_path / "out").exists()


def test_max_pairs_subsample_with_one_label_exit_2_before_embedding(tmp_path, capsys, cache_dir,
                                                                     no_embedding):
    books = [f"b{i}" for i in range(20)]
    pairs = _pairs_file(tmp_path / "pairs.jsonl", [1] * 19 + [0], books)
    err = _error(capsys, ["calibrate", "--model", MODEL, "--pairs", str(pairs), "--output",
                          str(tmp_path / "out"), "--max-pairs", "5", "--n-splits", "2"])
    assert "--max-pairs 5" in err and "label" in err


def test_group_folds_need_only_enough_books(tmp_path, capsys, cache_dir):
    """GroupKFold has no per-label requirement: one different-style pair among 6 books is fine."""
    books = [f"b{i}" for i in range(6)] * 2
    pairs = _pairs_file(tmp_path / "pairs.jsonl", [1] * 11 + [0], books)
    assert main(["calibrate", "--model", MODEL, "--pairs", str(pairs), "--output",
                 str(tmp_path / "out"), "--quiet"]) == 0
    style = json.loads((tmp_path / "out" / "style_calibration.json").read_text())
    assert style["selection"]["cv"] == "GroupKFold"


def test_help_explains_every_option(capsys):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["calibrate"]
    undocumented = [a.option_strings[-1] for a in sub._actions if a.option_strings and not a.help]
    assert undocumented == []
    with pytest.raises(SystemExit) as info:
        main(["calibrate", "--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for words in ("logistic", "isotonic", "brier", "ece", "balanced_accuracy", "f1", "default: 0",
                  "--quiet", "in [0, 1]", "stale", "StratifiedKFold"):
        assert words in text, words


def test_rerun_into_the_same_directory_leaves_no_stale_outputs(tmp_path, capsys, cache_dir):
    pairs = write_pairs(tmp_path / "pairs")
    out = tmp_path / "out"
    base = ["calibrate", "--model", MODEL, "--pairs", str(pairs), "--output", str(out), "--quiet"]
    assert main([*base, "--eval-split", "train"]) == 0
    assert (out / "reliability_similarity_train.png").is_file()
    assert "train" in json.loads((out / "calibration_report.json").read_text())["similarity"]["evaluation"]
    (out / "notes.txt").write_text("mine")  # not calibrate's: kept
    assert main([*base, "--eval-split", ""]) == 0
    assert not (out / "reliability_similarity_train.png").exists()
    assert (out / "reliability_similarity_fit.png").is_file()
    assert (out / "notes.txt").read_text() == "mine"
    assert "reliability_similarity_train" not in (out / "calibration.md").read_text()


@pytest.mark.parametrize("extra", [["--min-accuracy"], ["--min-recall", "0.5"],
                                   ["--threshold-metric", "f1"]])
def test_classifier_threshold_flags_without_a_classifier_exit_2(tmp_path, capsys, cache_dir, no_embedding,
                                                                extra):
    pairs = _pairs_file(tmp_path / "pairs.jsonl", [1, 0] * 10)
    err = _error(capsys, ["calibrate", "--model", MODEL, "--pairs", str(pairs), "--output",
                          str(tmp_path / "out"), *extra])
    assert err.endswith(f"{extra[0]}: options of a training run's classifier threshold; --model {MODEL} is "
                        "not a stylebench train run (only a run has one)")
    assert not (tmp_path / "out").exists()


def test_a_one_label_draw_of_the_evaluation_split_exits_2_before_embedding(tmp_path, capsys, cache_dir,
                                                                           no_embedding):
    pairs = write_pairs(tmp_path / "pairs")  # train and validation splits, labels alternating
    rows = [json.loads(line) for line in (pairs / "pairs.jsonl").read_text().splitlines()]
    # the test split: 15 same-style pairs and one different-style pair
    test = [{**r, "split": "test", "label": int(i < 15)} for i, r in enumerate(rows[:16])]
    (pairs / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows + test), encoding="utf-8")
    err = _error(capsys, ["calibrate", "--model", MODEL, "--pairs", str(pairs), "--output",
                          str(tmp_path / "out"), "--max-pairs", "4", "--n-splits", "2"])
    assert "--max-pairs 4: the seeded draw (--seed 0) of" in err and "'test' pairs has one label only" in err
    assert not (tmp_path / "out").exists()
