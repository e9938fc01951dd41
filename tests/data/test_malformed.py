"""Each loader rejects a malformed file with file:line:column and a UserInputError (exit code 2 in
the CLI). The files are small copies of the real layouts written into tmp_path."""

import gzip
import json

import pytest

from stylebench_jax.cli import main as cli_main
from stylebench_jax.data.registry import BUILT_DATASETS, DATASETS, load_units
from stylebench_jax.errors import UserInputError


def tsv(*rows):
    return "".join("\t".join(row) + "\n" for row in rows)


def csv_text(*rows):
    return "".join(",".join(row) + "\n" for row in rows)


BIBLE_HEADER = ["book", "chapter", "verse", "KJV", "ASV", "DARBY", "DRA", "YLT", "WEB", "BBE", "LEB"]
PASTEL_HEADER = ["split", "id", "annotation_id", "per_annotation_id", "persona_country", "persona_politics",
                 "persona_tod", "persona_age", "persona_education", "persona_ethnic", "persona_gender",
                 "input_keywords", "input_sentence", "output_sentence", "input_image"]
PASTEL_ROW = ["test", "1_0_1", "1", "1", "U.S.A", "Centrist", "Morning", "25-34", "Master", "African", "Male",
              "(a|b)", "in.", "out."]
POLITE_HEADER = ["Community", "Id", "Request", "Score1", "Score2", "Score3", "Score4", "Score5", "TurkId1",
                 "TurkId2", "TurkId3", "TurkId4", "TurkId5", "Normalized Score"]
POLITE_ROW = ["Wikipedia", "1", "Could you?", "13", "9", "11", "11", "5", "A", "B", "C", "D", "E", "-1.1"]
M4_ROW = {"domain": "arxiv", "model": "llama", "source": "arxiv", "source_id": None, "prompt": "p",
          "human_text": "h", "machine_text": "m"}
NOVEL = "word " * 1200
SIMPLIFICATIONS = {f"dataset/asset.{split}.simp.{k}": "s one\ns two\n" for split in ("valid", "test")
                   for k in range(10)}


# (dataset, {relative path: content (str) or bytes}, relative path of the bad file, line, column, fragment)
CASES = [
    ("bible_8_versions",
     {"bible_verses_8versions.tsv.gz": gzip.compress(tsv(BIBLE_HEADER, ["Gen", "1", "1"] + ["x"] * 8,
                                                          ["Gen", "one", "2"] + ["y"] * 8).encode())},
     "bible_verses_8versions.tsv.gz", 3, 2, "field 'chapter': expected an integer, found 'one'"),
    ("cds_samples", {"cds_samples.tsv": tsv(["style", "idx", "text"], ["aae", "0", "hi"], ["aae", "1"])},
     "cds_samples.tsv", 3, 3, "expected 3 tab-separated fields"),
    ("onestopenglish",
     {"onestop_articles_by_level.tsv": tsv(["article", "level", "complexity_rank", "text", "source_file"],
                                           ["A", "adv", "2", "t", "f"], ["A", "int", "2", "t", "f"]),
      "onestop_sentence_pairs.tsv": tsv(["pair_file", "first_level", "second_level", "first_text",
                                         "second_text"])},
     "onestop_articles_by_level.tsv", 3, 3, "field 'complexity_rank': expected 1 for level 'int', found 2"),
    ("asset",
     {**SIMPLIFICATIONS,
      "dataset/asset.valid.orig": "o one\no two\n", "dataset/asset.test.orig": b"o one\no \xc3( two\n"},
     "dataset/asset.test.orig", 2, 3, "invalid UTF-8"),
    ("shakespeare_modern_parallel",
     {"shakespeare_original_modern.tsv": tsv(["source", "play", "line_idx", "original", "modern"],
                                             ["sparknotes", "hamlet", "0", "Ay.", "Yes."],
                                             ["folio", "hamlet", "1", "Nay.", "No."])},
     "shakespeare_original_modern.tsv", 3, 1, "field 'source': expected one of sparknotes, enotes"),
    ("styleptb_compositional",
     {"styleptb_compositional_valid_test.tsv": tsv(
         ["dataset", "split", "raw_codes", "tense_op", "voice_op", "pp_op", "source", "target"],
         ["Tense + Voice", "valid", "0 x", "keep", "keep", "keep", "a b", "a b"])},
     "styleptb_compositional_valid_test.tsv", 2, 3, "field 'raw_codes': expected two integers"),
    ("pastel",
     {"pastel_v1_sentences.tsv": tsv(PASTEL_HEADER, PASTEL_ROW + ["u"], ["dev"] + PASTEL_ROW[1:] + ["u"])},
     "pastel_v1_sentences.tsv", 3, 1, "field 'split': expected one of train, valid, test; found 'dev'"),
    ("stanford_politeness",
     {"wikipedia.annotated.csv": csv_text(POLITE_HEADER, POLITE_ROW, ["Wikipedia", "2"] + POLITE_ROW[2:5]
                                          + ["many"] + POLITE_ROW[6:]),
      "stack-exchange.annotated.csv": csv_text(POLITE_HEADER, POLITE_ROW)},
     "wikipedia.annotated.csv", 3, 6, "field 'Score3': expected an integer, found 'many'"),
    ("m4_llama2_sample",
     {"m4_llama2_en_pairs.jsonl": json.dumps(M4_ROW) + "\n" + '{"domain": "arxiv", "model" "llama"}\n'},
     "m4_llama2_en_pairs.jsonl", 2, 29, "invalid JSON"),
    ("reuters_c50",
     {"reuters_c50.tsv.gz": gzip.compress(tsv(["split", "author", "file", "text"],
                                              ["train", "A", "1.txt", "t"],
                                              ["dev", "A", "2.txt", "t"]).encode())},
     "reuters_c50.tsv.gz", 3, 1, "field 'split': expected one of train, test; found 'dev'"),
    ("english_novels_100",
     {"english_novels_100.tsv.gz": gzip.compress(tsv(["author", "title", "year", "file", "n_words", "text"],
                                                     ["Hardy", "Tess", "1891", "Hardy_Tess", "1200", NOVEL],
                                                     ["Hardy", "Jude", "1895", "Hardy_Jude", "many", NOVEL]
                                                     ).encode())},
     "english_novels_100.tsv.gz", 3, 5, "field 'n_words': expected an integer, found 'many'"),
    ("british_fiction_corpus",
     {"british_fiction_novels.tsv.gz": gzip.compress(tsv(["author", "short_title", "file", "n_words", "text"],
                                                         ["Austen", "Emma", "Austen_Emma", "10", "too short"]
                                                         ).encode())},
     "british_fiction_novels.tsv.gz", 2, 5, "field 'text': expected a book"),
    ("eighteenth_century_novels",
     {"eighteenth_century_novels.tsv.gz": gzip.compress(
         ("author\tfile\tpg_title\tpg_ebook_no\tpg_markers_found\tn_words\tsource_encoding\ttext\n"
          "Burney\tEvelina\tEvelina\t\tstart\t1200\tutf-8\t\"" + NOVEL + "\n").encode())},
     "eighteenth_century_novels.tsv.gz", 2, None, "malformed tab-separated record"),
    ("gutenberg_classics_pyrse",
     {"gutenberg_classics_16.tsv.gz": gzip.compress(tsv(["author", "title", "file_stem", "n_words"],
                                                        ["Austen", "Emma", "emma", "1200"]).encode())},
     "gutenberg_classics_16.tsv.gz", 1, None, "header is missing column(s) 'text'"),
    ("federalist_papers",
     {"federalist.csv": csv_text(["number", "author", "text"], ["1", "HAMILTON", "a <c> b"],
                                 ["1", "MADISON", "c <p>"])},
     "federalist.csv", 3, 1, "field 'number': duplicate paper number 1 (first on line 2)"),
]

def make_root(tmp_path, dataset, files):
    root = tmp_path / "data"
    for relative, content in files.items():
        path = root / dataset / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode("utf-8")
        path.write_bytes(content)
    return root


def test_every_dataset_has_a_malformed_case():
    # stel: tests/data/test_stel.py; built benchmarks: tests/data/test_authbench.py
    assert {case[0] for case in CASES} == set(DATASETS) - {"stel", *BUILT_DATASETS}


@pytest.mark.parametrize("dataset, files, bad, line, column, fragment", CASES, ids=[c[0] for c in CASES])
def test_malformed_file_is_located(tmp_path, dataset, files, bad, line, column, fragment):
    root = make_root(tmp_path, dataset, files)
    with pytest.raises(UserInputError) as info:
        load_units(dataset, root, size="quick")
    message = str(info.value)
    where = f"{root / dataset / bad}:{line}" + (f":{column}" if column is not None else "")
    assert message.startswith(where + ":"), message
    assert fragment in message, message
    assert "\n" not in message


@pytest.mark.parametrize("dataset", sorted(set(DATASETS) - set(BUILT_DATASETS)))
def test_missing_folder_names_the_expected_layout(tmp_path, dataset):
    (tmp_path / "data").mkdir()
    with pytest.raises(UserInputError) as info:
        load_units(dataset, tmp_path / "data", size="quick")
    message = str(info.value)
    assert message.startswith(str(tmp_path / "data" / dataset)), message
    assert "expected" in message and "source:" in message, message


def test_asset_reference_file_with_missing_line(tmp_path):
    files = dict(SIMPLIFICATIONS)
    files.update({"dataset/asset.valid.orig": "o one\no two\n", "dataset/asset.test.orig": "o one\no two\n",
                  "dataset/asset.test.simp.7": "s one\n"})
    root = make_root(tmp_path, "asset", files)
    expected = r"asset\.test\.simp\.7:2: has 1 lines but asset\.test\.orig has 2"
    with pytest.raises(UserInputError, match=expected):
        load_units("asset", root)


def test_onestopenglish_article_missing_a_level(tmp_path):
    files = {"onestop_articles_by_level.tsv": tsv(["article", "level", "complexity_rank", "text"],
                                                  ["A", "adv", "2", "t"], ["A", "ele", "0", "t"]),
             "onestop_sentence_pairs.tsv": tsv(["pair_file", "first_level", "second_level", "first_text",
                                                "second_text"])}
    root = make_root(tmp_path, "onestopenglish", files)
    with pytest.raises(UserInputError, match=r"by_level\.tsv:2:1: article 'A' lacks level\(s\) int"):
        load_units("onestopenglish", root)



@pytest.mark.parametrize("dataset, files, bad, line, column, fragment", CASES, ids=[c[0] for c in CASES])
def test_cli_exits_2_with_the_location(tmp_path, capsys, cache_dir, dataset, files, bad, line, column,
                                       fragment):
    """`stylebench eval` on a malformed dataset file: exit code 2, one line naming file:line:column."""
    root = make_root(tmp_path, dataset, files)
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: broken\ndatasets:\n  - dataset: {dataset}\n", encoding="utf-8")
    code = cli_main(["eval", "--suite", str(suite), "--models", "baseline:char3gram",
                     "--data-root", str(root), "--output", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("stylebench eval: error: "), err
    where = f"{root / dataset / bad}:{line}" + (f":{column}" if column is not None else "")
    assert f"error: {where}:" in lines[0] and fragment in lines[0], err
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_too_little_data_is_a_user_error(tmp_path):
    """Files that parse but cannot make a unit (a single style) fail as bad input, not with a traceback."""
    table = tsv(["style", "idx", "text"], ["aae", "0", "a"], ["aae", "1", "b"])
    root = make_root(tmp_path, "cds_samples", {"cds_samples.tsv": table})
    expected = r"cds_samples: cannot build cds_samples units \(quick\): only 1 label"
    with pytest.raises(UserInputError, match=expected):
        load_units("cds_samples", root)
