"""`stylebench prepare-pairs` end to end on a tiny JSONL corpus with a real embedder
(``baseline:function_words``): outputs, bad configs caught before any work (exit 2, one line)."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data" / "pairs"))
from pairs_corpus import write_corpus  # noqa: E402

from stylebench_jax.cli import main  # noqa: E402
from stylebench_jax.data.pairs import load_pairs  # noqa: E402

CONFIG = """\
seed: 0
sources:
  - jsonl: {corpus}
mining:
  model: baseline:function_words
  neighbour_books: 3
pairs:
  positives_per_book: 5
  negatives_per_book: 10
output:
  dir: {out}
  format: jsonl
"""


@pytest.fixture()
def setup(tmp_path, cache_dir):
    write_corpus(tmp_path / "corpus.jsonl")
    config = tmp_path / "pairs.yaml"
    config.write_text(CONFIG.format(corpus=tmp_path / "corpus.jsonl", out=tmp_path / "out"), encoding="utf-8")
    return tmp_path, config


def test_writes_every_output_file(setup, capsys):
    tmp_path, config = setup
    assert main(["prepare-pairs", str(config), "pairs.negatives_per_book=20"]) == 0
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["chunks.jsonl", "config.json", "pairs.jsonl", "run.json",
                                                     "stats.json"]
    pairs = load_pairs(out)
    assert set(pairs["label"]) == {0, 1} and set(pairs["split"]) == {"train", "validation", "test"}
    saved = json.loads((out / "config.json").read_text())
    assert saved["pairs"]["negatives_per_book"] == 20
    assert saved["mining"]["model"] == "baseline:function_words"
    run = json.loads((out / "run.json").read_text())
    assert run["cache"]["misses"] > 0 and "mining" in run["seconds_per_stage"]
    assert "wrote" in capsys.readouterr().err
    # the same command again: refused before any work, the result untouched
    before = (out / "pairs.jsonl").read_bytes()
    assert main(["prepare-pairs", "--quiet", str(config), "pairs.negatives_per_book=20"]) == 2
    assert "already exists" in capsys.readouterr().err
    # replaced on request; same config, seed and (now cached) embeddings: same bytes
    assert main(["prepare-pairs", "--quiet", str(config), "pairs.negatives_per_book=20",
                 "output.overwrite=true"]) == 0
    assert (out / "pairs.jsonl").read_bytes() == before
    assert json.loads((out / "run.json").read_text())["cache"]["misses"] == 0


@pytest.mark.parametrize("edit, override, expected", [
    (("  neighbour_books: 3", "  neighbour_book: 3"), None,
     "pairs.yaml:6: mining.neighbour_book: unknown key 'neighbour_book'"),
    (("  negatives_per_book: 10", "  negatives_per_book: ten"), None,
     "pairs.yaml:9: pairs.negatives_per_book: expected an integer, found 'ten'"),
    (None, "windows.overlap=20",
     "override 'windows.overlap=20': windows.overlap: expected fewer than sentences"),
    (None, "split.train=0.9", "split: train + validation + test must be 1"),
    (None, "sources[0].novels=nope", "sources[0]: expected exactly one of"),
    (None, "mining.model=nonexistent_model", "unknown model 'nonexistent_model'"),
    (None, "output.format=csv", "output.format: expected one of parquet, jsonl, found 'csv'"),
])
def test_bad_config_is_one_line_exit_2_before_any_work(setup, capsys, edit, override, expected):
    tmp_path, config = setup
    if edit:
        config.write_text(config.read_text().replace(*edit), encoding="utf-8")
    args = ["prepare-pairs", "--quiet", str(config)] + ([override] if override else [])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_missing_data_file_is_named(setup, capsys, tmp_path):
    _, config = setup
    missing = tmp_path / "nowhere.jsonl"
    assert main(["prepare-pairs", "--quiet", str(config), f"sources[0].jsonl={missing}"]) == 2
    err = capsys.readouterr().err
    assert f"{missing}: file not found" in err
    empty_root = tmp_path / "data"
    empty_root.mkdir()
    assert main(["prepare-pairs", "--quiet", str(config), "sources[0]={novels: british_fiction_corpus}",
                 f"data_root={empty_root}"]) == 2
    assert "british_fiction_corpus" in capsys.readouterr().err
    # the flag every other data command has (it was "unrecognized arguments")
    assert main(["prepare-pairs", "--quiet", str(config), "sources[0]={novels: british_fiction_corpus}",
                 "--data-root", str(empty_root)]) == 2
    assert "british_fiction_corpus" in capsys.readouterr().err


def test_help_explains_the_command(capsys):
    with pytest.raises(SystemExit):
        main(["prepare-pairs", "--help"])
    text = capsys.readouterr().out
    assert "14 sentences" in text and "pairs.parquet" in text and "key.path=value" in text
