"""stylebench calibrate / score end to end on a tiny trained run: files in the seed's schema, the
classifier's logits reproduce the trainer's own validation metrics, the calibration refuses other
settings and embedders, bad inputs exit 2 with one line."""

import json

import numpy as np
import pytest

from stylebench_jax.cli import main
from tests.helpers.tiny_models import write_tiny_model
from tests.training.test_trainer import write_pairs


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("calib")
    model = write_tiny_model(root / "tiny", "bert", seed=1)
    pairs = write_pairs(root / "pairs")
    config = root / "tiny.yaml"
    config.write_text(f"seed: 3\ndata:\n  pairs: {pairs}\nmodel:\n  base: {model}\n  max_length: 16\n"
                      "loss:\n  contrastive: supcon\noptim:\n  learning_rate: 0.001\n"
                      "trainer:\n  batch_size: 8\n  steps: 8\n  log_every: 4\n  eval_every: 4\n",
                      encoding="utf-8")
    assert main(["train", str(config), "--output", str(root / "run"), "--quiet"]) == 0
    return root


def test_calibrate_training_run_writes_both_calibrations(trained, tmp_path, cache_dir):
    out = tmp_path / "out"
    assert main(["calibrate", "--model", str(trained / "run"), "--output", str(out), "--quiet"]) == 0
    style = json.loads((out / "style_calibration.json").read_text())
    assert set(style["style_calibration"]) >= {"method", "coef", "intercept", "cv_brier"}
    assert {"num_chunks", "chunk_size", "overlap", "aggregate", "n_samples"} <= set(style["meta"])
    assert style["meta"]["n_samples"] == 16 and style["embedder"]["identity"].startswith("flax-bert/export/")
    clf = json.loads((out / "calibration.json").read_text())
    assert clf["temperature"] > 0 and 0.01 <= clf["threshold"] <= 0.99
    assert clf["nll"]["after"] <= clf["nll"]["before"] + 1e-12  # T minimises the fitting NLL
    report = json.loads((out / "calibration_report.json").read_text())
    # The run's logits, recomputed from its best checkpoint, give the trainer's own validation numbers.
    best = json.loads((trained / "run" / "summary.json").read_text())["best_validation"]
    argmax = report["classifier"]["fit"]["argmax"]
    assert argmax["balanced_accuracy"] == pytest.approx(best["balanced_accuracy"])
    assert argmax["roc_auc"] == pytest.approx(best["auroc_classifier"])
    assert report["classifier"]["fit"]["adversary"]["adversary_accuracy"] == \
        pytest.approx(best["adversary_accuracy"])
    for name in ("calibration.md", "calibration.html", "reliability_similarity_fit.png",
                 "reliability_classifier_fit.png"):
        assert (out / name).stat().st_size > 0, name
    assert "| calibrated (T, threshold) |" in (out / "calibration.md").read_text()


def test_calibrate_jsonl_pairs_then_score_with_and_against_the_file(trained, tmp_path, cache_dir, capsys):
    rows = [json.loads(line) for line in (trained / "pairs" / "pairs.jsonl").read_text().splitlines()]
    pairs = tmp_path / "pairs.jsonl"
    keys = ("text1", "text2", "label", "book1", "book2")
    pairs.write_text("".join(json.dumps({k: r[k] for k in keys}) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    model = str(trained / "tiny")
    assert main(["calibrate", "--model", model, "--pairs", str(pairs), "--output", str(out), "--quiet",
                 "--method", "logistic"]) == 0
    assert not (out / "calibration.json").exists()  # no classifier without a training run
    calibration = out / "style_calibration.json"
    coef = json.loads(calibration.read_text())["style_calibration"]["coef"]
    capsys.readouterr()
    assert main(["score", "--model", model, "--calibration", str(calibration), "--quiet", rows[0]["text1"],
                 rows[0]["text2"]]) == 0
    single = json.loads(capsys.readouterr().out)
    assert set(single) == {"cosine", "score_0_1", "score_calibrated", "aggregate", "pairs"}
    assert single["score_calibrated"] == pytest.approx(
        1 / (1 + np.exp(-(coef * single["cosine"] + json.loads(calibration.read_text())["style_calibration"]
                                                                       ["intercept"]))))
    batch_in = tmp_path / "in.jsonl"
    batch_in.write_text("".join(json.dumps({"id": i, "text1": r["text1"], "text2": r["text2"]}) + "\n"
                                for i, r in enumerate(rows[:5])), encoding="utf-8")
    assert main(["score", "--model", model, "--calibration", str(calibration), "--pairs", str(batch_in),
                 "--output", str(tmp_path / "scores.jsonl"), "--quiet"]) == 0
    scored = [json.loads(line) for line in (tmp_path / "scores.jsonl").read_text().splitlines()]
    assert [s["id"] for s in scored] == list(range(5)) and "text1" not in scored[0]
    assert scored[0]["cosine"] == pytest.approx(single["cosine"], abs=1e-6)
    capsys.readouterr()
    assert main(["score", "--model", model, "--calibration", str(calibration), "--chunk-size", "10", "a .",
                 "b ."]) == 2
    assert "chunk_size=14 (this run: 10)" in capsys.readouterr().err
    assert main(["score", "--model", model, "--max-length", "20", "--calibration", str(calibration), "a .",
                 "b ."]) == 2
    assert "calibrate this embedder" in capsys.readouterr().err


def test_bad_calibration_inputs_exit_2(tmp_path, capsys, monkeypatch):
    assert main(["calibrate", "--model", "minilm", "--output", str(tmp_path / "o")]) == 2
    assert "--pairs" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text1": "a", "text2": "b", "label": 1}\n{"text1": "a", "text2": "b", "label": 3}\n')
    assert main(["calibrate", "--model", "baseline:function_words", "--pairs", str(bad), "--output",
                 str(tmp_path / "o")]) == 2
    assert "bad.jsonl:2" in capsys.readouterr().err
    same = tmp_path / "same.jsonl"
    same.write_text('{"text1": "a", "text2": "b", "label": 1}\n' * 3)
    assert main(["calibrate", "--model", "baseline:function_words", "--pairs", str(same), "--output",
                 str(tmp_path / "o")]) == 2
    assert "all 3 pairs have label 1" in capsys.readouterr().err
    # isotonic on 1,000 pairs or fewer was refused only after the embedding
    few = tmp_path / "few.jsonl"
    few.write_text("".join(f'{{"text1": "a {i}", "text2": "b {i}", "label": {i % 2}, "group1": "g{i % 7}", '
                           f'"group2": "h{i % 5}"}}\n' for i in range(40)))
    import stylebench_jax.commands.calibrate as calibrate_command

    monkeypatch.setattr(calibrate_command, "build_embedder", lambda *a, **k: pytest.fail("embedded first"))
    assert main(["calibrate", "--model", "baseline:function_words", "--pairs", str(few),
                 "--method", "isotonic", "--output", str(tmp_path / "o")]) == 2
    assert "--method isotonic: needs more than 1000 fitting pairs" in capsys.readouterr().err
    assert main(["score", "--model", "baseline:function_words", "only one"]) == 2
    assert "expected two texts" in capsys.readouterr().err


def test_calibrate_training_run_is_quiet_and_a_rerun_drops_the_classifier_files(trained, tmp_path, cache_dir,
                                                                                 capfd, caplog):
    """orbax's "Metadata file does not exist" warning (the run's best/<step>/state has no
    _CHECKPOINT_METADATA: CheckpointManager keeps it one level up) is not shown; a rerun with
    --no-classifier into the same directory removes the earlier run's calibration.json and classifier
    figures."""
    out = tmp_path / "out"
    assert main(["calibrate", "--model", str(trained / "run"), "--output", str(out), "--quiet"]) == 0
    err = capfd.readouterr().err
    assert "Metadata file does not exist" not in err + caplog.text, err
    assert (out / "calibration.json").is_file() and (out / "reliability_classifier_fit.png").is_file()
    assert main(["calibrate", "--model", str(trained / "run"), "--output", str(out), "--quiet",
                 "--no-classifier"]) == 0
    assert not (out / "calibration.json").exists()
    assert not (out / "reliability_classifier_fit.png").exists()
    assert "classifier" not in json.loads((out / "calibration_report.json").read_text())
    assert (out / "style_calibration.json").is_file() and (out / "reliability_similarity_fit.png").is_file()


def test_an_unmet_threshold_constraint_is_said_on_the_console(trained, tmp_path, cache_dir, capfd):
    """No threshold met --min-accuracy 1 --min-recall 1: the command said only "threshold=0.51";
    the warning was in calibration.json alone."""
    out = tmp_path / "out"
    assert main(["calibrate", "--model", str(trained / "run"), "--output", str(out), "--min-accuracy", "1",
                 "--min-recall", "1"]) == 0
    err = capfd.readouterr().err
    assert json.loads((out / "calibration.json").read_text())["constraints_met"] is False
    assert "warning: no threshold meets accuracy >= 1.0 and recall >= 1.0" in err, err


def test_the_fitting_split_is_not_reported_as_held_out(trained, tmp_path, capsys, monkeypatch):
    """--eval-split equal to --split printed "validation: ECE ... -> ..." as a held-out evaluation of
    the very pairs the map was fitted on."""
    import stylebench_jax.commands.calibrate as calibrate_command

    monkeypatch.setattr(calibrate_command, "build_embedder", lambda *a, **k: pytest.fail("embedded first"))
    assert main(["calibrate", "--model", "baseline:function_words", "--pairs", str(trained / "pairs"),
                 "--eval-split", "validation", "--output", str(tmp_path / "o")]) == 2
    assert "--eval-split validation: the calibration is fitted on that split" in capsys.readouterr().err
