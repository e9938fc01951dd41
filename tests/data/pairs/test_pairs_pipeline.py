"""data/pairs/pipeline.py end to end on a tiny corpus: stage counts, pair invariants, splits,
negatives mix, determinism to the byte, atomic output."""

import collections
import json

import pytest
from pairs_corpus import BOILERPLATE, letter_embed, write_corpus

from stylebench_jax.config import config_from_dict, config_to_dict
from stylebench_jax.data.pairs import (
    PreparePairsConfig,
    load_chunks,
    load_pairs,
    prepare_pairs,
    write_prepared,
)


def make_config(tmp_path, **sections):
    data = {"seed": 0, "sources": [{"jsonl": str(tmp_path / "corpus.jsonl")}],
            "mining": {"model": "fake", "neighbour_books": 3},
            "output": {"dir": str(tmp_path / "out")}}
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return config_from_dict(PreparePairsConfig, data)


@pytest.fixture()
def corpus(tmp_path):
    write_corpus(tmp_path / "corpus.jsonl")
    return tmp_path


def run(config):
    return prepare_pairs(config, embed=letter_embed, embedder_name="letters")


def test_stage_counts(corpus):
    result = run(make_config(corpus))
    stages = result.stats["stages"]
    assert stages["books_loaded"] == 11 and stages["books_duplicate"] == 1
    assert result.stats["duplicate_books"] == [{"book": "corpus/copy", "duplicate_of": "corpus/g0",
                                                "sentence_overlap": 1.0}]
    assert stages["chunks_boilerplate"] == 3  # the block in 3 books (Writing7's rule)
    # the one in 2 books: kept it sat in two splits and could pair with itself as a negative
    assert stages["chunks_in_two_books"] == 2
    assert stages["windows_not_english"] >= 1
    assert BOILERPLATE not in result.chunks["text"]
    assert sum("tome" in t for t in result.chunks["text"]) == 0
    assert not any(t[:1].isdigit() for t in result.chunks["text"])
    # 10 books x 2 documents x 4 windows
    assert stages["books"] == 10 and stages["chunks"] == 80 == len(result.chunks["text"])
    dropped = ("windows_too_short", "windows_not_english", "chunks_boilerplate", "chunks_in_two_books",
               "chunks_over_cap", "chunks_of_dropped_books")
    assert stages["windows"] == stages["chunks"] + sum(stages[name] for name in dropped)
    kept = run(make_config(corpus, filters={"drop_shared_chunks": False}))  # Writing7 alone keeps it
    assert kept.stats["stages"]["chunks_in_two_books"] == 0
    assert sum("tome" in t for t in kept.chunks["text"]) == 2 and kept.stats["stages"]["chunks"] == 82


def test_pair_invariants(corpus):
    result = run(make_config(corpus))
    chunks, pairs = result.chunks, result.pairs
    split_of = dict(zip(chunks["book"], chunks["split"]))
    n = len(pairs["label"])
    books_per_split = collections.Counter(split_of.values())
    alone = sum(1 for count in books_per_split.values() if count == 1)  # no other book: no negative
    assert books_per_split == {"train": 7, "validation": 2, "test": 1}
    assert n == 10 * 60 - 40 * alone and result.stats["shortfalls"]["negative"] == 40 * alone
    for k in range(n):
        b1, b2, c1, c2 = pairs["book1"][k], pairs["book2"][k], pairs["chunk1"][k], pairs["chunk2"][k]
        assert split_of[b1] == split_of[b2] == pairs["split"][k]
        assert chunks["book"][c1] == b1 and chunks["book"][c2] == b2
        assert pairs["text1"][k] == chunks["text"][c1] and pairs["text2"][k] == chunks["text"][c2]
        assert (pairs["topic1"][k], pairs["topic2"][k]) == (chunks["topic"][c1], chunks["topic"][c2])
        assert pairs["same_topic"][k] == (pairs["topic1"][k] == pairs["topic2"][k])
        if pairs["label"][k]:
            assert b1 == b2 and pairs["pair_type"][k] == "positive" and pairs["negative_type"][k] == ""
            same_doc = chunks["document"][c1] == chunks["document"][c2]
            assert not (same_doc and chunks["start"][c1] < chunks["end"][c2]
                        and chunks["start"][c2] < chunks["end"][c1]), "positive chunks share a sentence"
        else:
            assert b1 != b2 and pairs["pair_type"][k] == "negative"
    positives = collections.Counter((pairs["book1"][k], pairs["chunk1"][k], pairs["chunk2"][k])
                                    for k in range(n) if pairs["label"][k])
    assert max(positives.values()) == 1


def test_negatives_are_36_neighbour_and_4_random_per_book(corpus):
    result = run(make_config(corpus, mining={"neighbour_books": 3}))
    pairs, stats = result.pairs, result.stats
    per_book = collections.defaultdict(collections.Counter)
    for book, kind in zip(pairs["book1"], pairs["negative_type"]):
        per_book[book][kind or "positive"] += 1
    split_of = dict(zip(result.chunks["book"], result.chunks["split"]))
    books_per_split = collections.Counter(split_of.values())
    mixes = collections.Counter()
    for book, kinds in per_book.items():
        assert kinds["positive"] == 20
        mix = (kinds["neighbour"], kinds["random"])
        # (0, 40): none of its 3 neighbours in its split; (0, 0): alone in its split
        assert mix in ((36, 4), (0, 40)) if books_per_split[split_of[book]] > 1 else mix == (0, 0)
        mixes[mix] += 1
    assert mixes[36, 4] >= 5
    assert stats["pair_types"]["positive"]["pairs"] == 200
    assert sum(s["negative_neighbour"] for s in stats["splits"].values()) == stats["pair_types"][
        "negative/neighbour"]["pairs"]


def test_author_split_keeps_authors_whole(corpus):
    aliases = {f"g{g}": f"author{g // 3}" for g in range(10)}  # 4 authors of 3, 3, 3, 1 books
    result = run(make_config(corpus, author_aliases=aliases, split={"by": "author"}))
    assert result.stats["authors_in_several_splits"] == []
    by_author = collections.defaultdict(set)
    for author, split in zip(result.chunks["author"], result.chunks["split"]):
        by_author[author].add(split)
    assert all(len(s) == 1 for s in by_author.values())
    assert {s for splits in by_author.values() for s in splits} == {"train", "validation", "test"}


def test_no_same_author_negatives_when_asked(corpus):
    aliases = {f"g{g}": f"author{g % 2}" for g in range(10)}
    allowed = run(make_config(corpus, author_aliases=aliases))
    assert sum(s["negative_same_author"] for s in allowed.stats["splits"].values()) > 0
    result = run(make_config(corpus, author_aliases=aliases, pairs={"same_author_negatives": False}))
    p = result.pairs
    assert not any(not lab and a1 == a2 for lab, a1, a2 in zip(p["label"], p["author1"], p["author2"]))


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_same_config_same_bytes(corpus, fmt):
    config = make_config(corpus, output={"format": fmt})
    outputs = []
    for name in ("a", "b"):
        result = run(config)
        out = write_prepared(corpus / name, chunks=result.chunks, pairs=result.pairs, stats=result.stats,
                             config=config_to_dict(config), run={}, fmt=fmt)
        outputs.append({f: (out / f).read_bytes() for f in (f"pairs.{fmt}", f"chunks.{fmt}", "stats.json")})
    assert outputs[0] == outputs[1]
    other = run(make_config(corpus, seed=1))
    assert other.pairs["text1"] != result.pairs["text1"]
    back = load_pairs(corpus / "a", split="validation")
    assert set(back["split"]) == {"validation"}
    assert len(back["label"]) == result.stats["splits"]["validation"]["pairs"]
    assert load_chunks(corpus / "a")["text"] == result.chunks["text"]
    assert json.loads((corpus / "a" / "stats.json").read_text())["stages"] == result.stats["stages"]


def test_output_directory_appears_whole_or_not_at_all(corpus):
    config = make_config(corpus)
    result = run(config)
    kwargs = dict(chunks=result.chunks, pairs=result.pairs, stats=result.stats, config={}, run={})
    write_prepared(corpus / "out", **kwargs)
    with pytest.raises(FileExistsError):
        write_prepared(corpus / "out", **kwargs)
    broken = dict(kwargs, pairs={**result.pairs, "label": result.pairs["label"][:-1]})
    with pytest.raises(ValueError, match="different lengths"):
        write_prepared(corpus / "out", overwrite=True, **broken)
    assert load_pairs(corpus / "out")["label"] == result.pairs["label"]  # the old result is intact
    with pytest.raises(ValueError, match="different lengths"):
        write_prepared(corpus / "new", **broken)
    assert not (corpus / "new").exists()
    assert not [p.name for p in corpus.iterdir() if p.name.startswith(".")]


def test_too_few_books_for_the_splits(tmp_path):
    write_corpus(tmp_path / "corpus.jsonl", n_groups=2)
    with pytest.raises(ValueError, match="split 'validation' got no books"):
        run(make_config(tmp_path))
