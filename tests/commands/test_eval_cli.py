"""`stylebench eval` from the command line: argument errors (exit 2, one line) and a real STEL run."""

from __future__ import annotations

import json

import pytest

from stylebench_jax.cli import main

STEL_BASELINES = ["char3gram", "punctuation", "word_length", "uppercase", "levenshtein"]


def run_cli(capsys, *args):
    code = main(["eval", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(code, err):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("stylebench eval: error:"), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("args, expected", [
    (["--models", "nonsense-model", "--suite", "stel"], "unknown model 'nonsense-model'"),
    (["--models", "baseline:nope", "--suite", "stel"], "unknown baseline 'nope'"),
    (["--models", "baseline:char3gram", "--suite", "no-such-suite"], "no-such-suite"),
    (["--models", "baseline:char3gram,,x", "--suite", "stel"], "--models: expected a comma-separated list"),
    (["--models", "baseline:char3gram,baseline:char3gram", "--suite", "stel"], "given more than once"),
    (["--models", "baseline:char3gram", "--suite", "stel", "--datasets", "atlantis"], "unknown dataset"),
    (["--models", "baseline:char3gram", "--suite", "stel", "--datasets", "cds_samples"], "not in suite"),
    (["--models", "baseline:char3gram", "--suite", "stel", "--n-boot", "0"], "--n-boot"),
    (["--models", "baseline:char3gram", "--suite", "stel", "--mesh", "data=x"], "--mesh"),
    (["--models", "baseline:char3gram", "--suite", "stel", "--max-length", "0"], "--max-length"),
])
def test_bad_arguments_exit_2_with_one_line(capsys, tmp_path, data_root, cache_dir, args, expected):
    code, _, err = run_cli(capsys, *args, "--output", str(tmp_path / "out"), "--data-root", str(data_root))
    assert expected in one_line_error(code, err)
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_missing_data_root_is_a_clear_error(capsys, tmp_path, cache_dir):
    code, _, err = run_cli(capsys, "--models", "baseline:char3gram", "--suite", "stel", "--output",
                           str(tmp_path / "out"), "--data-root", str(tmp_path / "nowhere"))
    assert "nowhere" in one_line_error(code, err)


def test_help_explains_outputs(capsys):
    with pytest.raises(SystemExit) as info:
        main(["eval", "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for word in ("results.jsonl", "--force", "--suite", "baseline:char3gram", "resume", "--seed"):
        assert word.lower() in text.lower()


def test_malformed_suite_file_names_file_and_line(capsys, tmp_path, data_root, cache_dir):
    suite = tmp_path / "bad.yaml"
    suite.write_text("name: bad\ndatasets:\n  - dataset: stel\n    tasks: [clusters]\n")
    code, _, err = run_cli(capsys, "--models", "baseline:char3gram", "--suite", str(suite), "--output",
                           str(tmp_path / "out"), "--data-root", str(data_root))
    assert f"{suite}:4" in one_line_error(code, err)


def test_stel_suite_end_to_end_resume_and_identical_results(capsys, tmp_path, data_root, cache_dir):
    models = ",".join(f"baseline:{name}" for name in STEL_BASELINES if name != "levenshtein")  # fast ones
    out = tmp_path / "run"
    args = ["--models", models, "--suite", "stel", "--output", str(out), "--data-root", str(data_root),
            "--n-boot", "200", "--quiet"]
    code, stdout, err = run_cli(capsys, *args)
    assert code == 0, err
    assert "28 computed" in stdout
    results = (out / "results.jsonl").read_bytes()
    rows = [json.loads(line) for line in results.decode().splitlines()]
    assert len(rows) == 4 * 7 * 3  # models x STEL components x (accuracy, distractor, triple)
    assert {r["subset"] for r in rows} >= {"formality", "simplicity", "contraction", "nbr_substitution"}
    for row in rows:
        assert row["ci_low"] <= row["value"] <= row["ci_high"] and row["n"] in (100, 200)
    scores = json.loads((out / "scores.json").read_text())
    # STEL's quadruples are STEL's protocol, not part of STEB's scores (STEB builds STEL its own way)
    assert not scores["operational"]["available"] and "order_list" in scores["operational"]["reason"]
    leaderboard = (out / "leaderboard.md").read_text()
    accuracy = next(r for r in rows if r["model"] == "baseline:punctuation" and r["subset"] == "contraction"
                    and r["primary"])
    assert f"{accuracy['value']:.3f} [{accuracy['ci_low']:.3f}, {accuracy['ci_high']:.3f}]" in leaderboard
    assert "data:image/png;base64," in (out / "report.html").read_text()

    code, stdout, err = run_cli(capsys, *args)  # resume: nothing recomputed, same bytes
    assert code == 0 and "0 computed, 28 reused" in stdout
    assert (out / "results.jsonl").read_bytes() == results
    info = json.loads((out / "run_info.json").read_text())
    assert {cell["status"] for cell in info["cells"]} == {"reused"}

    code, stdout, _ = run_cli(capsys, *args, "--force", "--datasets", "stel")
    assert code == 0 and "28 computed" in stdout
    assert (out / "results.jsonl").read_bytes() == results


def test_long_text_settings_reach_the_model_identity_and_run_info(capsys, tmp_path, data_root, cache_dir):
    from tests.helpers.tiny_models import write_tiny_model

    model = write_tiny_model(tmp_path / "tiny")
    suite = tmp_path / "one.yaml"
    suite.write_text("name: one\nsize: full\ndatasets:\n  - dataset: stel\n    subsets: [formality]\n"
                     "    tasks: [order_list]\n")
    out = tmp_path / "run"
    args = ["--models", f"{model},baseline:punctuation", "--suite", str(suite), "--output", str(out),
            "--data-root", str(data_root), "--n-boot", "20", "--quiet"]
    code, stdout, err = run_cli(capsys, *args, "--long-text", "steb", "--max-length", "30")
    assert code == 0, err
    info = json.loads((out / "run_info.json").read_text())
    assert info["encoding"] == {"long_text": "steb", "max_length": 30}
    assert info["options"]["long_text"] == "steb" and info["options"]["max_length"] == 30
    identity = next(m["identity"] for m in info["models"] if m["label"] == str(model))
    assert "long_text=steb" in identity and "max_length=30" in identity and "norm=0" in identity
    assert "--long-text steb --max-length 30" in (out / "leaderboard.md").read_text()
    # the re-render reads the encoding from run_info.json: the same bytes (it dropped that line)
    from stylebench_jax.report.__main__ import main as rerender

    assert rerender([str(out), "--output", str(tmp_path / "again")]) == 0
    for name in ("leaderboard.md", "report.html"):
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes()
    # other settings: the neural cell is recomputed (new fingerprint), the baseline's is reused
    code, stdout, err = run_cli(capsys, *args, "--long-text", "truncate")
    assert code == 0 and "1 computed, 1 reused" in stdout, stdout


def test_outputs_of_an_earlier_run_never_stay_beside_a_new_ones(capsys, tmp_path, data_root, cache_dir,
                                                                 monkeypatch):
    """A run stopped while writing its outputs left the previous run's report and run_info.json beside
    its own results; and a library upgrade that may move numbers (scikit-learn...) reused cells."""
    from stylebench_jax.evaluation import cells, pipeline

    suite = tmp_path / "one.yaml"
    suite.write_text("name: one\nsize: full\ndatasets:\n  - dataset: stel\n    subsets: [formality]\n"
                     "    tasks: [order_quad]\n")
    out = tmp_path / "run"
    args = ["--models", "baseline:punctuation", "--suite", str(suite), "--output", str(out),
            "--data-root", str(data_root), "--n-boot", "20", "--quiet"]
    code, _, err = run_cli(capsys, *args)
    assert code == 0, err
    info = json.loads((out / "run_info.json").read_text())
    assert info["environment"]["scikit-learn"] and info["environment"]["code"]

    def stopped(*_, **__):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "write_report", stopped)
    code, _, _ = run_cli(capsys, *args, "--seed", "1")
    assert code == 130
    assert (out / "results.jsonl").exists() and not (out / "run_info.json").exists()
    assert not (out / "report.html").exists() and not (out / "leaderboard.md").exists()
    monkeypatch.undo()

    code, stdout, _ = run_cli(capsys, *args, "--seed", "1")
    assert code == 0 and "0 computed, 1 reused" in stdout, stdout
    upgraded = {**cells.numeric_versions(), "scikit-learn": "99.0"}
    monkeypatch.setattr(pipeline, "numeric_versions", lambda: upgraded)
    monkeypatch.setattr("stylebench_jax.evaluation.runner.numeric_versions", lambda: upgraded)
    code, stdout, _ = run_cli(capsys, *args, "--seed", "1")
    assert code == 0 and "1 computed, 0 reused" in stdout, stdout
    assert json.loads((out / "run_info.json").read_text())["environment"]["scikit-learn"] == "99.0"
