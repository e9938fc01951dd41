"""`stylebench data build`: the AuthBench pipeline on small multilingual records written here.

Guarantees checked: bad records counted with file and line (never fatal); every drop counted by
rule; author- and duplicate-disjoint splits; byte-identical outputs for the same config; config
errors name the key path (exit 2); the TFDS directory loads without TensorFlow.
"""

import gzip
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from stylebench_jax.cli import main
from stylebench_jax.config import InvalidField, config_from_dict
from stylebench_jax.data.construct import BuildConfig, build_benchmark, load_build_config
from stylebench_jax.data.construct.config import FilterConfig, SamplingConfig, StructureConfig
from stylebench_jax.data.construct.dedup import NearDuplicateIndex, jaccard, lsh_bands
from stylebench_jax.data.construct.filters import rule_failed
from stylebench_jax.data.construct.pipeline import load_tokenizer
from stylebench_jax.data.construct.records import Origin, Record, length_bucket
from stylebench_jax.data.construct.sampling import redistribute, sample
from stylebench_jax.data.construct.structure import split_document
from stylebench_jax.data.construct.textops import canonicalize, char_stats, script_ratio

# Several sentences per author and language, distinct enough not to be near duplicates.
TEXTS = {
    ("en", "ann"): [
        "I walked along the quiet river at dawn and counted the herons.",
        "My sister baked bread while I repaired the old wooden fence.",
        "We argued about poetry until the candles burned down to stubs.",
    ],
    ("en", "ben"): [
        "Quarterly revenue rose four percent, beating analyst expectations.",
        "The board approved a dividend after a lengthy discussion on Tuesday.",
        "Shares of the mining group fell sharply in early trading today.",
    ],
    ("ru", "ivan"): [
        "Мы долго гуляли по парку и разговаривали о книгах.",
        "Вечером пошёл дождь, и мы вернулись домой пить чай.",
        "Старый учитель рассказывал нам истории о своей молодости.",
    ],
    ("ar", "layla"): [
        "ذهبت إلى السوق صباحا واشتريت الخبز والفواكه الطازجة.",
        "كتبت رسالة طويلة إلى صديقتي التي تعيش في مدينة بعيدة.",
        "جلسنا في الحديقة نتحدث عن الكتب التي قرأناها هذا الصيف.",
    ],
    ("zh", "wang"): [
        "今天早上我去公园散步，看到很多人在打太极拳。",
        "昨天晚上我们一起吃饭，聊了很久关于旅行的计划。",
        "这本小说的故事非常感人，我一口气读完了全书。",
    ],
    ("ja", "sato"): [
        "きょうはともだちとこうえんでおべんとうをたべました。",
        "あしたはあめがふるので、いえでほんをよむつもりです。",
        "わたしのねこはまいにちまどのそばでひるねをしています。",
    ],
    ("ko", "kim"): [
        "오늘 아침에 친구와 함께 공원에서 산책을 했습니다.",
        "어제 저녁에는 가족과 함께 맛있는 음식을 먹었습니다.",
        "이 책은 정말 재미있어서 밤새도록 읽었습니다 정말로.",
    ],
    ("hi", "ravi"): [
        "आज सुबह मैं अपने दोस्त के साथ बाज़ार गया और फल खरीदे।",
        "कल शाम हम सबने मिलकर एक पुरानी फिल्म देखी और हँसे।",
        "मेरी दादी हर रात हमें राजाओं की कहानियाँ सुनाती थीं।",
    ],
}


WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango").split()


def write_jsonl(path, rows, extra_lines=()):
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        for line in extra_lines:
            handle.write(line + "\n")


@pytest.fixture()
def corpus(tmp_path):
    rows = [
        {"user": author, "lang": lang, "body": text, "topic": f"t{i % 2}"}
        for (lang, author), texts in TEXTS.items()
        for i, text in enumerate(texts)
    ]
    rows.append({"user": "ann", "lang": "en", "body": TEXTS[("en", "ann")][0]})  # exact duplicate
    rows.append({"user": "zoe", "lang": "en", "body": TEXTS[("en", "ben")][0] + " Indeed."})  # near duplicate
    rows.append(
        {"user": "mix", "lang": "en", "body": "Привет, как дела у тебя сегодня, друг мой?"}
    )  # wrong script
    rows.append({"user": "mix", "lang": "ko", "body": "짧다 ok"})  # < 8 letters: script not evaluated
    rows.append(
        {"user": "spam", "lang": "en", "body": "a b c d e f g h i j k l m n o p q r"}
    )  # spaced letters
    write_jsonl(
        tmp_path / "posts.jsonl",
        rows,
        extra_lines=[
            '{"lang": "en", "body": "no author in this one"}',  # missing author
            '{"user": "x", "lang": "en", "body": ""}',  # empty text
            '{"user": "x", "lang": "en", "body": ["a list"]}',  # wrong type
            '{"user": "x", "lang": "en", "body": "cut',  # invalid JSON
            "[1, 2]",
        ],
    )  # not an object
    with open(tmp_path / "posts.jsonl", "ab") as handle:
        handle.write(b'{"user": "x", "lang": "en", "body": "bad \xff byte"}\n')
    with gzip.open(tmp_path / "news.tsv.gz", "wb") as handle:
        handle.write(b"writer\tstory\tdesk\n")
        handle.write(b"Reporter A\tMarkets rallied after the central bank held rates steady.\tbiz\n")
        handle.write(b"Reporter A\tOil prices slipped as inventories rose more than forecast.\tbiz\n")
        handle.write(b"Reporter B\tThe city council voted to expand the tram network north.\tcity\n")
        handle.write(b"Reporter B\tA new library opened downtown with a rooftop garden.\tcity\n")
        handle.write(b"Reporter C\tonly two\n")  # wrong field count
        handle.write(b"Reporter C\tbad \xfe bytes here\tbiz\n")  # invalid UTF-8
        handle.write(b"Disputed\tWho wrote this one is unknown to us.\tbiz\n")  # excluded
    return tmp_path


def config_dict(root, output, **extra):
    data = {
        "name": "tiny",
        "output": str(output),
        "author_salt": "pepper",
        "data_root": str(root),
        "sources": [
            {
                "name": "posts",
                "path": "posts.jsonl",
                "format": "jsonl",
                "fields": {"text": "body", "author": "user", "language": "lang", "topic": "topic"},
                "constants": {"genre": "social_media", "subgenre": "forum"},
            },
            {
                "name": "news",
                "path": "news.tsv.gz",
                "format": "tsv",
                "fields": {"text": "story", "author": "writer"},
                "labels": ["desk"],
                "constants": {"language": "en", "genre": "news"},
                "exclude": {"writer": ["Disputed"]},
            },
        ],
        "sampling": {"min_docs_per_author": 1},
        "splits": {"proportions": {"dev": 0.5, "test": 0.5}},
    }
    data.update(extra)
    return data


def build(root, output, **extra):
    config = config_from_dict(BuildConfig, config_dict(root, output, **extra))
    return build_benchmark(config, log=lambda message: None)


def test_bad_records_are_counted_with_file_and_line(corpus):
    result = build(corpus, corpus / "out")
    bad = result.manifest["bad_records"]
    where = {(b["file"], b["line"], b["kind"]) for b in bad["listed"]}
    n = sum(len(v) for v in TEXTS.values()) + 5
    assert where == {
        ("posts.jsonl", n + 1, "missing_author"),
        ("posts.jsonl", n + 2, "empty_text"),
        ("posts.jsonl", n + 3, "wrong_type"),
        ("posts.jsonl", n + 4, "invalid_json"),
        ("posts.jsonl", n + 5, "not_an_object"),
        ("posts.jsonl", n + 6, "invalid_utf8"),
        ("news.tsv.gz", 6, "field_count"),
        ("news.tsv.gz", 7, "invalid_utf8"),
    }
    assert bad["count"] == 8
    assert result.manifest["sources"]["news"]["excluded"] == 1


def test_every_drop_is_counted_by_rule(corpus):
    m = build(corpus, corpus / "out").manifest
    drops = m["drops"]
    assert drops["dedup:exact"] == 1 and drops["dedup:near"] == 1
    assert drops["filter:script"] == 1  # Russian text declared English
    assert drops["filter:single_letter_ratio"] == 1
    stages = m["stages"]
    assert stages["ingested"] - stages["final"] == sum(drops.values())
    # the short Korean text was not script-checked (fewer than 8 letters) and is kept
    texts = {
        r["text"]
        for split in ("dev", "test")
        for r in map(json.loads, open(corpus / "out" / "splits" / f"{split}.jsonl"))
    }
    assert "짧다 ok\n" in texts


def _mutated(base: str, count: int, rng) -> str:
    chars = list(base)
    for i in rng.choice(len(chars), size=count, replace=False):
        chars[i] = "ABCDEFG"[rng.integers(7)]
    return "".join(chars)


@pytest.mark.parametrize(("mutations", "least_removed"), [(30, 1.0), (45, 0.9)])
def test_near_duplicates_above_the_threshold_are_found(mutations, least_removed):
    # a 3,000-character text and a copy with a few characters changed (J ~ 0.91 / 0.87 over 5-grams),
    # under 60 MinHash seeds: LSH must propose the pair (datasketch's default 9 x 13 band split for
    # 0.8 left 98% / 82% of them found), then the MinHash estimate decides
    rng = np.random.default_rng(0)
    base = "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz "), size=3000))
    copy = _mutated(base, mutations, rng)
    similarity = jaccard(base, copy, 5)
    assert 0.85 < similarity < 0.92
    removed = []
    for seed in range(1, 61):
        index = NearDuplicateIndex(0.8, seed=seed)
        index.check("base", base)
        removed.append(index.check("copy", copy) == "base")
    assert np.mean(removed) >= least_removed, (similarity, np.mean(removed))


@pytest.mark.parametrize("threshold", [0.0, 0.5, 0.8, 0.9, 1.0])
@pytest.mark.parametrize("num_perm", [16, 128, 256])
def test_lsh_band_split_keeps_misses_rare_just_above_the_threshold(threshold, num_perm):
    bands, rows = lsh_bands(threshold, num_perm)
    assert bands * rows <= num_perm
    j = threshold + min(0.05, (1 - threshold) / 2)
    assert (1 - j ** rows) ** bands <= 1e-3 or (bands, rows) == (num_perm, 1)
    # the largest such number of rows: one more row per band would miss more often
    if rows < num_perm:
        assert (1 - j ** (rows + 1)) ** (num_perm // (rows + 1)) > 1e-3
    assert lsh_bands(0.8, 128) == (18, 7)


def test_splits_are_author_and_duplicate_disjoint(corpus):
    result = build(corpus, corpus / "out")
    authors = {split: {r.author_id for r in records} for split, records in result.splits.items()}
    assert not authors["dev"] & authors["test"]
    for a in result.splits["dev"]:
        for b in result.splits["test"]:
            assert a.text != b.text
            assert jaccard(a.text, b.text, 5) < 0.8
    # every language of the corpus survives, authors hashed with the salt, no raw names anywhere
    out = (corpus / "out" / "splits" / "test.jsonl").read_text() + (
        corpus / "out" / "splits" / "dev.jsonl"
    ).read_text()
    assert "Reporter A" not in out and '"ann"' not in out
    assert {r.language for rs in result.splits.values() for r in rs} == {
        "en",
        "ru",
        "ar",
        "zh",
        "ja",
        "ko",
        "hi",
    }


def test_same_config_twice_gives_identical_bytes(corpus):
    out = corpus / "out"
    build(corpus, out)  # Parquet is on by default
    first = {
        p.relative_to(out): p.read_bytes()
        for p in out.rglob("*")
        if p.is_file() and p.name != "build_info.json"
    }
    (out / "splits" / "stale.jsonl").write_text("from an earlier build\n")
    with pytest.raises(InvalidField, match=r"output: .* already exists; choose another output or set "
                                           r"overwrite=true"):
        build(corpus, out)
    build(corpus, out, overwrite=True)  # replaced as a whole: no file of the earlier build is left
    second = {
        p.relative_to(out): p.read_bytes()
        for p in out.rglob("*")
        if p.is_file() and p.name != "build_info.json"
    }
    assert first.keys() == second.keys() and Path("manifest.json") in first
    assert {Path("parquet/dev.parquet"), Path("parquet/test.parquet")} <= first.keys()
    assert all(first[k] == second[k] for k in first)
    files = json.loads(first[Path("manifest.json")])["files"]
    parquet = first[Path("parquet/test.parquet")]
    assert files["parquet/test.parquet"] == __import__("hashlib").sha256(parquet).hexdigest()


def test_missing_export_package_fails_before_the_build(corpus, monkeypatch):
    import importlib.util

    from stylebench_jax.config import InvalidField

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a)
    )
    expected = r"export.parquet: needs pyarrow.*\[authbench\].*export.parquet=false"
    with pytest.raises(InvalidField, match=expected):
        build(corpus, corpus / "out")
    assert not (corpus / "out").exists()
    build(corpus, corpus / "out", export={"parquet": False})
    assert not (corpus / "out" / "parquet").exists() and (corpus / "out" / "splits" / "test.jsonl").is_file()


SECRET_SALT = "pepper-9f3e-not-for-release"


def test_no_salt_or_raw_author_name_in_any_output(corpus):
    pa = pytest.importorskip("pyarrow.parquet")
    pytest.importorskip("tensorflow_datasets", reason="tfds extra not installed (pip install -e '.[tfds]')")
    data = config_dict(corpus, corpus / "out", author_salt=SECRET_SALT,
                       export={"parquet": True, "tfds": "parquet", "manifest_only_release": True})
    data["sources"][1]["author_aliases"] = {"Reporter A": "Alpha Writer"}
    data["sources"][1]["exclude"] = {"writer": ["Disputed"]}
    result = build_benchmark(config_from_dict(BuildConfig, data), log=lambda message: None)
    out = corpus / "out"
    texts = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        if path.suffix == ".parquet" or ".parquet-" in path.name:
            texts[path] = json.dumps(pa.read_table(path).to_pylist(), ensure_ascii=False, default=str)
        else:
            texts[path] = path.read_bytes().decode("utf-8", "replace")
    kinds = {p.relative_to(out).parts[0] for p in texts}
    assert {"manifest.json", "splits", "release", "parquet", "tfds"} <= kinds
    assert any(".parquet" in p.name for p in (out / "tfds").rglob("*"))
    for path, text in texts.items():
        for secret in (SECRET_SALT, "Reporter A", "Reporter B", "Alpha Writer", "Disputed"):
            assert secret not in text, f"{secret!r} in {path.relative_to(out)}"
    manifest = result.manifest["config"]
    assert manifest["author_salt_sha256"] == __import__("hashlib").sha256(SECRET_SALT.encode()).hexdigest()
    assert "author_salt" not in manifest
    # the alias map links salted hashes; the canonical name's hash is the author_id of its documents
    ((raw, canonical),) = manifest["sources"][1]["author_aliases"].items()
    news_authors = {r.author_id for rs in result.splits.values() for r in rs if r.source == "news"}
    assert canonical in news_authors and raw not in news_authors and len(news_authors) == 2
    assert len(manifest["sources"][1]["exclude"]["writer"][0]) == 64


def test_release_offsets_rebuild_the_text(corpus):
    result = build(corpus, corpus / "out")
    rows = [json.loads(line) for line in open(corpus / "out" / "release" / "test.jsonl")]
    assert rows and all("text" not in row for row in rows)
    by_id = {r.id: r for r in result.splits["test"]}
    for row in rows:
        record = by_id[row["id"]]
        assert row["sha256"] == __import__("hashlib").sha256(record.text.encode()).hexdigest()
        assert row["end"] - row["start"] == len(record.text.rstrip("\n"))


@pytest.mark.parametrize("file_format", ["array_record", "parquet"])
def test_tfds_directory_loads_without_tensorflow(corpus, file_format):
    tfds = pytest.importorskip(
        "tensorflow_datasets", reason="tfds extra not installed (pip install -e '.[tfds]')"
    )
    result = build(corpus, corpus / "out", export={"tfds": file_format})
    builder = tfds.builder_from_directory(str(corpus / "out" / result.manifest["tfds_builder_dir"]))
    assert builder.info.file_format.value == file_format
    shards = [p.name for p in (corpus / "out" / result.manifest["tfds_builder_dir"]).iterdir()]
    assert any(f"test.{file_format}" in name for name in shards), shards
    assert builder.info.splits["test"].num_examples == len(result.splits["test"])
    source = builder.as_data_source(split="test")
    got = {source[i]["id"].decode(): source[i]["text"].decode() for i in range(len(source))}
    assert got == {r.id: r.text for r in result.splits["test"]}
    assert "tensorflow" not in sys.modules
    if file_format == "array_record":
        # each record is serialised with its feature map in sorted order: the same build in another
        # process gave other bytes (protobuf's map order changes from process to process)
        from array_record.python.array_record_module import ArrayRecordReader
        from tensorflow_datasets.proto import tf_example_pb2

        (shard,) = (corpus / "out" / result.manifest["tfds_builder_dir"]).glob("*test.array_record*")
        reader = ArrayRecordReader(str(shard))
        records = reader.read_all()
        reader.close()
        for raw in records:
            example = tf_example_pb2.Example.FromString(raw)
            assert example.SerializeToString(deterministic=True) == raw
    import pyarrow.parquet as pq

    table = pq.read_table(corpus / "out" / "parquet" / "dev.parquet")
    assert table.column("id").to_pylist() == [r.id for r in result.splits["dev"]]


def test_malformed_config_names_key_path_and_exits_2(corpus, capsys):
    path = corpus / "bad.yaml"
    data = config_dict(corpus, corpus / "out")
    data["sampling"] = {"total": "many"}
    import yaml

    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["data", "build", str(path)]) == 2
    err = capsys.readouterr().err
    assert "sampling.total: expected an integer, found 'many'" in err and "bad.yaml:" in err
    assert main(["data", "build", str(path), "sampling.total=3", "sources[0].format=xml"]) == 2
    assert "sources[0].format: expected one of jsonl, tsv, csv, directory" in capsys.readouterr().err
    data["sampling"] = {}
    data["sources"][0]["fields"] = {"text": "body"}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["data", "build", str(path)]) == 2
    assert "sources[0].fields: missing author" in capsys.readouterr().err
    # keys whose value is checked by the build (a file, the tokenizer, a hook): still file:line: key.path
    data = config_dict(corpus, corpus / "out")
    for key, value, expected in (
            ("path", "nowhere.jsonl", "sources[0].path: {root}/nowhere.jsonl: no such file or directory"),
            ("tokenizer", "no_such_tokenizer", "tokenizer: 'no_such_tokenizer' is neither 'minilm' nor a "
                                                "model directory"),
            ("toxicity", {"function": "no_such_module:score"},
             "filters.toxicity.function: cannot import 'no_such_module'")):
        bad = json.loads(json.dumps(data))
        if key == "path":
            bad["sources"][0]["path"] = value
        elif key == "tokenizer":
            bad["tokenizer"] = value
        else:
            bad.setdefault("filters", {})["toxicity"] = value
        path.write_text(yaml.safe_dump(bad, sort_keys=False))
        assert main(["data", "build", str(path)]) == 2
        err = capsys.readouterr().err
        assert f"{path}:" in err and expected.format(root=data["data_root"]) in err, err
        assert len(err.strip().splitlines()) == 1


def test_cli_builds_and_loads_overrides(corpus, capsys):
    import yaml

    path = corpus / "ok.yaml"
    path.write_text(yaml.safe_dump(config_dict(corpus, corpus / "unused"), sort_keys=False))
    assert main(["data", "build", str(path), f"output={corpus / 'cli'}", "--quiet"]) == 0
    assert json.loads((corpus / "cli" / "manifest.json").read_text())["stages"]["final"] > 10
    config = load_build_config(path, ["dedup.threshold=0.5"])
    assert config.dedup.threshold == 0.5


@pytest.mark.parametrize("overrides, fragment", [
    (["sampling.min_docs_per_author=1000"],
     "filtered 29, sampled 29, canonical 29, final 0; 8 bad records (invalid_utf8 2, missing_author 1, "
     "empty_text 1; first: posts.jsonl:30: missing author (source field 'user')); most dropped by "
     "final:below_min_docs_per_author 29"),
    (["sources[0].fields.text=nope",  # every JSONL row lacks it; every table row is excluded
      "sources[1].exclude={writer: [Reporter A, Reporter B, Reporter C, Disputed]}"], "(ingested 0; "),
])
def test_a_build_that_leaves_no_document_is_an_error_and_writes_nothing(corpus, capsys, overrides, fragment):
    import yaml

    path = corpus / "empty.yaml"
    path.write_text(yaml.safe_dump(config_dict(corpus, corpus / "empty_out"), sort_keys=False))
    assert main(["data", "build", str(path), *overrides, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "tiny: no document is left for the benchmark (ingested " in err and fragment in err, err
    assert len(err.splitlines()) == 1 and not (corpus / "empty_out").exists()


@pytest.mark.parametrize("overrides, message", [
    (["sources[1].fields.text=nope"], "sources[1].fields.text: column 'nope' is not in the header of "
                                      "news.tsv.gz ('writer', 'story', 'desk')"),
    (["sources[1].path=none.tsv"], "sources[1].path: {root}/none.tsv: no such file or directory"),
    (["data_root=/no/such/root"], "data_root: /no/such/root: no such directory"),
    (["--data-root", "/no/such/root"], "--data-root /no/such/root: no such directory"),
    (["dedup.seed=-1"], "dedup.seed: expected a value >= 0, found -1"),
    (["structure.max_tokens={attribution: 0}"], "structure.max_tokens.attribution: expected a positive"),
    (['sampling.quotas={"en/short/news/attribution": -3}'], "sampling.quotas.en/short/news/attribution: "
                                                             "expected a non-negative count, found -3"),
    (["filters.thresholds.min_alpha_ratio=2"], "filters.thresholds.min_alpha_ratio: expected a ratio in "
                                                "[0, 1], found 2"),
    (["filters.per_language={en: {min_alpha_ratio: -4}}"], "filters.per_language.en.min_alpha_ratio: "
                                                           "expected a ratio in [0, 1], found -4"),
    (["splits.isolate=[source]", "splits.proportions={train: 0.5, test: 0.5}"],
     "tiny: split 'test' (evaluation.split) has 0 documents and no author with two"),
])
def test_config_problems_are_refused_before_any_output(corpus, capsys, overrides, message):
    import yaml

    path = corpus / "bad.yaml"
    path.write_text(yaml.safe_dump(config_dict(corpus, corpus / "bad_out"), sort_keys=False))
    assert main(["data", "build", str(path), *overrides, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert message.format(root=corpus) in err and len(err.splitlines()) == 1, err
    assert not (corpus / "bad_out").exists()


def test_directory_source_and_aliases(tmp_path):
    for author, folder in (("Austen", "a"), ("JaneAusten", "b"), ("Dickens", "a")):
        (tmp_path / folder / author).mkdir(parents=True, exist_ok=True)
    (tmp_path / "a" / "Austen" / "1.txt").write_text("It is a truth universally acknowledged, that a man.")
    (tmp_path / "b" / "JaneAusten" / "2.txt").write_text(
        "Emma Woodhouse, handsome, clever, and rich, with a home."
    )
    (tmp_path / "a" / "Dickens" / "3.txt").write_text("It was the best of times, it was the worst of times.")
    source = {
        "path": ".",
        "format": "directory",
        "glob": "**/*.txt",
        "fields": {"text": "text", "author": "parent"},
        "constants": {"language": "en", "genre": "literature"},
        "author_namespace": "novels",
    }
    config = config_from_dict(
        BuildConfig,
        {
            "name": "dirs",
            "output": str(tmp_path / "out"),
            "author_salt": "s",
            "data_root": str(tmp_path),
            "sources": [
                {**source, "name": "x", "path": "a"},
                {**source, "name": "y", "path": "b", "author_aliases": {"JaneAusten": "Austen"}},
            ],
            "sampling": {"min_docs_per_author": 2},
            "splits": {"proportions": {"test": 1.0}},
        },
    )
    result = build_benchmark(config, log=lambda m: None)
    # the two Austen files (two sources, one namespace, an alias) share an author; Dickens alone is dropped
    assert len(result.splits["test"]) == 2
    assert len({r.author_id for r in result.splits["test"]}) == 1
    assert result.manifest["drops"]["final:below_min_docs_per_author"] == 1


def test_toxicity_and_language_id_hooks(corpus, monkeypatch):
    module = corpus / "my_hooks.py"
    module.write_text("def tox(texts):\n    return [1.0 if 'herons' in t else 0.0 for t in texts]\n")
    monkeypatch.syspath_prepend(str(corpus))
    m = build(
        corpus, corpus / "out", filters={"toxicity": {"function": "my_hooks:tox", "threshold": 0.5}}
    ).manifest
    assert m["drops"]["filter:toxicity"] == 1

    def language_id(texts):
        return ["xx" for _ in texts]  # every text judged foreign: only the too-short ones are asked

    config = config_from_dict(BuildConfig, config_dict(corpus, corpus / "out2"))
    m = build_benchmark(config, language_id=language_id, log=lambda x: None).manifest
    assert m["drops"]["filter:language_id"] == 1  # "짧다 ok": script ratio undefined


# --------------------------------------------------------------------------- unit checks of the stages


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("minilm")[0]


def check(tokenizer, text, language="en", **thresholds):
    ((tokens, words),) = tokenizer.content_tokens([text])
    config = config_from_dict(FilterConfig, {"thresholds": thresholds} if thresholds else {})
    return rule_failed(text, tokens, words, len(tokens), "attribution", language, config, {})[0]


def test_each_quality_rule(tokenizer):
    assert check(tokenizer, "A perfectly ordinary sentence about the weather today.") is None
    assert check(tokenizer, "buy buy buy buy buy buy buy buy buy buy") == "unique_token_ratio"
    assert (
        check(tokenizer, "Hello $$$ %%% &&& *** ((( ))) !!! ??? ### @@@ world", max_symbol_run=100)
        == "symbol_ratio"
    )
    assert (
        check(
            tokenizer,
            "Well " + "-" * 35 + " then, said the old man at the door of the house by the "
            "river, and he waited for the others to come back from the long walk.",
        )
        == "symbol_run"
    )
    assert (
        check(tokenizer, "Sooooooooooooooooooooooooooo good, said everybody in the town.")
        == "repeated_char_run"
    )
    assert (
        check(tokenizer, "12 34 56 78 90 12 34 56 78 91 23 45 and", min_unique_token_ratio=None)
        == "alpha_ratio"
    )
    assert check(tokenizer, "w o r d s   s p a c e d   o u t   l i k e   t h i s") == "single_letter_ratio"
    assert (
        check(
            tokenizer,
            "x " * 12 + "then a very long tail of proper words that dilutes the ratio of "
            "single letters well below the limit set for density in this test sentence here",
            max_single_letter_ratio=0.9,
        )
        == "single_letter_run"
    )
    assert check(tokenizer, "Это русский текст, а язык указан английский.") == "script"
    assert check(tokenizer, "Это русский текст, а язык указан английский.", language="ru") is None
    # per-language override disables the script rule for English only
    ((tokens, words),) = tokenizer.content_tokens(["Это русский текст, а язык указан английский."])
    config = config_from_dict(FilterConfig, {"per_language": {"en": {"min_script_ratio": None}}})
    assert (
        rule_failed(
            "Это русский текст, а язык указан английский.",
            tokens,
            words,
            len(tokens),
            "attribution",
            "en",
            config,
            {},
        )[0]
        is None
    )
    assert check(tokenizer, "") == "length:empty"


@pytest.mark.parametrize(
    "language,text",
    [
        ("en", "Plain English words"),
        ("ru", "Русские слова здесь"),
        ("ar", "كلمات عربية هنا"),
        ("zh", "这是中文文本内容测试"),
        ("ja", "ひらがなとカタカナのテキスト"),
        ("ko", "한국어 텍스트 입니다"),
        ("hi", "हिन्दी भाषा का पाठ"),
    ],
)
def test_script_sets(language, text):
    config = config_from_dict(FilterConfig, {})
    assert script_ratio(char_stats(text), config.scripts_for(language)) == pytest.approx(1.0)
    others = [
        lang
        for lang in ("en", "ru", "ar", "zh", "ko", "hi")
        if not set(config.scripts_for(lang)) & set(config.scripts_for(language))
    ]
    assert len(others) >= 4
    for other in others:
        assert script_ratio(char_stats(text), config.scripts_for(other)) < 0.5


def test_chunks_are_contiguous_with_derived_ids(tokenizer):
    text = " ".join(
        f"Sentence number {i} talks about something rather different from the rest." for i in range(60)
    )
    record = Record(
        "src:f:1",
        "doc_x",
        "a",
        "en",
        "literature",
        "",
        "src",
        "attribution",
        text,
        len(tokenizer.content_ids([text])[0]),
        Origin("f", 1, 0, len(text)),
    )
    config = StructureConfig(max_tokens={"attribution": 100}, chunk_tokens=(40, 80))
    chunks = split_document(record, config, 0, "salt", lambda ts: [len(x) for x in tokenizer.content_ids(ts)])
    assert len(chunks) > 5
    assert " ".join(c.text for c in chunks) == text
    assert all(c.token_length <= 80 for c in chunks) and {c.key for c in chunks} == {
        f"src:f:1@{c.origin.start}" for c in chunks
    }
    assert all(text[c.origin.start : c.origin.end] == c.text for c in chunks)
    again = split_document(record, config, 0, "salt", lambda ts: [len(x) for x in tokenizer.content_ids(ts)])
    assert [c.text for c in again] == [c.text for c in chunks]


def test_chinese_documents_are_chunked_at_their_sentence_marks_and_long_runs_at_characters():
    """Sentences ending in 。！？ with no space after were one "sentence" to the English splitter, and
    a text without spaces could not be cut: every long Chinese document came out whole, over the cap
    (or was dropped by the length filter)."""
    sentences = [f"我今天去了第{i}家商店，买了很多东西{'！' if i % 3 else '。'}" for i in range(60)]
    text = "".join(sentences) + "这" * 300 + "。"  # a 301-character run with one mark at its end
    record = Record("src:f:1", "doc_x", "a", "zh", "blog", "", "src", "attribution", text, len(text),
                    Origin("f", 1, 0, len(text)))
    config = StructureConfig(max_tokens={"attribution": 100}, chunk_tokens=(40, 80))
    chunks = split_document(record, config, 0, "salt", lambda ts: [len(t) for t in ts])  # a token a character
    assert len(chunks) > 15 and "".join(c.text for c in chunks) == text
    assert all(c.token_length <= 80 for c in chunks)
    assert all(c.text.endswith(("。", "！")) for c in chunks if "这" not in c.text)  # at sentence ends


def make_records(spec):
    """spec: (language, length, genre, author) per record."""
    return [
        Record(f"k{i}", f"doc_{i}", author, lang, genre, "", "s", "attribution", "t", length, Origin("f", i))
        for i, (lang, length, genre, author) in enumerate(spec)
    ]


def test_quotas_deficits_and_caps():
    spec = (
        [("en", 50, "news", f"a{i % 10}") for i in range(40)]
        + [("en", 50, "blog", "b0")] * 3
        + [("fr", 300, "news", f"f{i % 5}") for i in range(30)]
    )
    records = make_records(spec)
    kept, report = sample(
        records, config_from_dict(SamplingConfig, {"total": 40, "min_docs_per_author": 1}), 0
    )
    # en gets 20 (news 10, blog 10 -> blog has 3: its deficit of 7 moves to en/medium/news), fr gets 20
    assert report["buckets"]["en/medium/blog/attribution"]["sampled"] == 3
    assert report["buckets"]["en/medium/news/attribution"]["sampled"] == 17
    assert report["buckets"]["fr/long/news/attribution"]["sampled"] == 20
    assert report["deficit"] == {"moved": 7, "unplaced": 0} and len(kept) == 40
    capped, report = sample(
        records, config_from_dict(SamplingConfig, {"max_docs_per_author": 2, "min_docs_per_author": 2}), 0
    )
    per_author = {}
    for r in capped:
        per_author[r.author_id] = per_author.get(r.author_id, 0) + 1
    assert max(per_author.values()) == 2 and report["author_cap_dropped"] == len(records) - len(capped)
    final, moves = redistribute(
        {"x/a/g/t": 5, "x/b/g/t": 5, "y/a/g/t": 5}, {"x/a/g/t": 1, "x/b/g/t": 20, "y/a/g/t": 2}
    )
    assert final == {"x/a/g/t": 1, "x/b/g/t": 9, "y/a/g/t": 2} and moves == {"moved": 4, "unplaced": 3}


def test_quantile_bins_and_reservoir_mode():
    rng = np.random.default_rng(0)
    spec = [("en", int(x), "news", f"a{i % 7}") for i, x in enumerate(rng.integers(1, 1000, 400))]
    records = make_records(spec)
    _, report = sample(
        records,
        config_from_dict(SamplingConfig, {"length_bins": "quantile", "total": 100, "min_docs_per_author": 1}),
        0,
    )
    assert {k.split("/")[1] for k in report["buckets"]} == {"q1of4", "q2of4", "q3of4", "q4of4"}
    assert all(v["sampled"] == 25 for v in report["buckets"].values())
    kept, report = sample(
        iter(records),
        config_from_dict(
            SamplingConfig, {"mode": "reservoir", "reservoir_capacity": 30, "min_docs_per_author": 1}
        ),
        0,
    )
    counts = {}
    for r in kept:
        key = length_bucket(r.token_length)
        counts[key] = counts.get(key, 0) + 1
    seen = {key.split("/")[1]: n for key, n in report["reservoir_seen"].items()}
    assert counts == {key: min(n, 30) for key, n in seen.items()} and sum(seen.values()) == 400
    assert report["reservoir_dropped"] == 400 - len(kept) > 0
    again, _ = sample(
        iter(records),
        config_from_dict(
            SamplingConfig, {"mode": "reservoir", "reservoir_capacity": 30, "min_docs_per_author": 1}
        ),
        0,
    )
    assert [r.key for r in again] == [r.key for r in kept]


def test_canonicalisation():
    assert (
        canonicalize("  “Hello,” she said — ‘twice’.  ", normalize_quotes=True, trailing_newline=True)
        == "\"Hello,\" she said — 'twice'.\n"
    )


def test_split_groups_keep_authors_threads_and_links_together():
    from stylebench_jax.data.construct.config import SplitConfig
    from stylebench_jax.data.construct.splits import assign_splits

    records = [
        Record(
            f"k{i}",
            f"doc_{i}",
            f"a{i % 12}",
            "en",
            "news",
            "",
            "s",
            "attribution",
            "t",
            50,
            Origin("f", i),
            thread=f"th{i % 5}",
        )
        for i in range(60)
    ]
    buckets = ["en/medium/news/attribution"] * 60
    config = config_from_dict(SplitConfig, {"proportions": {"train": 0.5, "test": 0.5}})
    plain = assign_splits(records, buckets, config, seed=0)
    assert set(plain) == {"train", "test"}
    for author in {r.author_id for r in records}:
        assert len({s for r, s in zip(records, plain) if r.author_id == author}) == 1
    assert plain == assign_splits(records, buckets, config, seed=0)  # deterministic
    threads = config_from_dict(
        SplitConfig, {"proportions": {"train": 0.5, "test": 0.5}, "isolate": ["thread"]}
    )
    joined = assign_splits(records, buckets, threads, seed=0)
    # authors a0..a11 and threads th0..th4 chain every record into one group: one split only
    assert len(set(joined)) == 1
    linked = assign_splits(records[:2], buckets[:2], config, seed=0, linked=[("k0", "k1")])
    assert linked[0] == linked[1]


def test_splits_follow_the_proportions_in_big_buckets_and_across_one_group_buckets():
    """Dealing groups to the split furthest below target sent every one-group bucket to train."""
    from stylebench_jax.data.construct.config import SplitConfig
    from stylebench_jax.data.construct.splits import assign_splits

    def record(i, author):
        return Record(f"k{i}", f"doc_{i}", author, "en", "news", "", "s", "attribution", "t", 50,
                      Origin("f", i))

    config = config_from_dict(SplitConfig, {"proportions": {"train": 0.5, "dev": 0.1, "test": 0.4}})
    # one bucket of 400 authors x 2 documents: each split within one group (2 documents) of its share
    records = [record(i, f"a{i // 2}") for i in range(800)]
    counts = Counter(assign_splits(records, ["b"] * 800, config, seed=3))
    assert all(abs(counts[s] - 800 * p) <= 2 for s, p in config.proportions.items()), counts
    # 600 buckets of one author each: a bucket lands in a split with that split's probability
    records = [record(i, f"a{i}") for i in range(600)]
    counts = Counter(assign_splits(records, [f"b{i}" for i in range(600)], config, seed=3))
    assert all(abs(counts[s] - 600 * p) <= 4 * (600 * p * (1 - p)) ** 0.5 for s, p in
               config.proportions.items()), counts


def test_required_fields_per_task_type(corpus):
    m = build(
        corpus, corpus / "out", structure={"required_fields": {"attribution": ["text", "author", "topic"]}}
    )
    # the 4 news rows have no topic, nor do the 3 extra posts rows that survive de-duplication
    assert m.manifest["drops"]["structure:missing:topic"] == 4 + 3


def test_reservoir_overflow_is_its_own_drop_rule(corpus):
    m = build(corpus, corpus / "out", sampling={"mode": "reservoir", "reservoir_capacity": 2,
                                                "min_docs_per_author": 1}).manifest
    drops = m["drops"]
    # every (language, bin, genre, task) bucket keeps 2 documents; what did not fit is counted apart
    seen = m["sampling"]["reservoir_seen"]
    assert drops["sampling:reservoir_overflow"] == sum(max(n - 2, 0) for n in seen.values()) > 0
    assert "sampling:bucket_quota" not in drops
    assert m["stages"]["sampled"] == sum(min(n, 2) for n in seen.values())
    assert m["stages"]["ingested"] - m["stages"]["final"] == sum(drops.values())


def test_min_documents_per_author_applies_after_the_final_dedup(tmp_path):
    # "x" wrote the same sentence twice with curly and with straight quotes: distinct until A.6's
    # canonicalisation straightens the quotes, then the final de-duplication leaves x one document
    text = "the lighthouse keeper counted ships every night until the winter storms finally came"
    rows = [{"a": "x", "t": f"“{text}”"}, {"a": "x", "t": f'"{text}"'}]
    rows += [{"a": "y", "t": f"Letter {i}: " + " ".join(WORDS[i:i + 9])} for i in range(3)]
    write_jsonl(tmp_path / "p.jsonl", rows)
    config = config_from_dict(BuildConfig, {
        "name": "q", "output": str(tmp_path / "out"), "author_salt": "s", "data_root": str(tmp_path),
        "sources": [{"name": "p", "path": "p.jsonl", "format": "jsonl",
                     "fields": {"text": "t", "author": "a"},
                     "constants": {"language": "en", "genre": "essay"}}],
        "dedup": {"near": False}, "filters": {"thresholds": {"min_unique_token_ratio": None}},
        "splits": {"proportions": {"test": 1.0}}})
    m = build_benchmark(config, log=lambda message: None).manifest
    assert m["drops"]["final_dedup:exact"] == 1 and m["drops"]["final:below_min_docs_per_author"] == 1
    assert m["stages"]["sampled"] == 5 and m["stages"]["final"] == 3
    assert m["splits"]["test"]["authors"] == 1 and m["splits"]["test"]["documents_per_author"]["min"] == 3


def test_overwrite_never_replaces_the_data_or_the_folder_it_runs_in(corpus, capsys, monkeypatch):
    """The build replaces its output folder whole: output=data root with overwrite=true deleted the
    sources."""
    import yaml

    path = corpus / "ok.yaml"
    path.write_text(yaml.safe_dump(config_dict(corpus, corpus / "unused"), sort_keys=False))
    before = sorted(p.name for p in corpus.iterdir())
    for target in (corpus, corpus.parent):
        assert main(["data", "build", str(path), f"output={target}", "overwrite=true", "--quiet"]) == 2
        err = capsys.readouterr().err
        assert f"output: {target} holds" in err and "choose a folder of its own" in err, err
    monkeypatch.chdir(corpus / "..")
    assert main(["data", "build", str(path), "output=.", "overwrite=true", "--quiet"]) == 2
    assert "output: . holds" in capsys.readouterr().err
    assert sorted(p.name for p in corpus.iterdir()) == before
