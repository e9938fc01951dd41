"""OneStopEnglish: 189 news articles rewritten at three reading levels (Vajjala & Lucic, BEA 2018).

Source: github.com/nishkalavallabhi/OneStopEnglishCorpus (commit 37f8db3,
``Texts-SeparatedByReadingLevel/`` and ``Sentence-Aligned/``), staged as
``onestopenglish/onestop_articles_by_level.tsv`` (header ``article level complexity_rank text
source_file``; 567 rows = 189 articles x adv/int/ele) and
``onestopenglish/onestop_sentence_pairs.tsv`` (header ``pair_file first_level second_level
first_text second_text``; 5,994 aligned pairs from ADV-ELE, ADV-INT, ELE-INT).
Licence: CC BY-SA 4.0.

Units (STEB App. C.3 "OneStopEnglish", order alignment over 3 graded levels); every list is
ordered from the most to the least complex level, ``[adv, int, ele]``:

- ``order_list`` subset ``articles``: each article at its three levels (long texts: the encoder
  chunks and pools).
- ``order_list`` subset ``sentences``: sentence triples chained from the aligned pairs through
  an identical intermediate sentence (ADV-INT x ELE-INT); triples with a repeated text are
  dropped and no sentence is used in two triples.
- ``probing`` subset ``sentences``: the sentences of those triples.

A list sharing a text with an earlier list is dropped (the staged release has one: the ele texts
of "Royal Baby" and "Skydiver" are identical, so 188 article lists remain). ``quick`` samples
``N_ARTICLES`` / ``N_SENTENCE_TRIPLES`` lists (seeded), ``full`` all articles and 300 triples
(all pairs of lists become task instances, so the count grows quadratically).

The task pairs every list with every other list; its distractor variant is built from the lists
themselves (``tasks.order_alignment``), so ``distractors`` is ``None``.
"""

from __future__ import annotations

from pathlib import Path

from stylebench_jax.data.readers import dataset_dir, read_table, require_file
from stylebench_jax.data.records import OneStopArticle, OneStopSentencePair
from stylebench_jax.data.sampling import disjoint_lists, sample, unit_rng
from stylebench_jax.data.units import DatasetSpec, EvalUnit, OrderedLists, Texts, check_size
from stylebench_jax.errors import located

NAME = "onestopenglish"
ARTICLES = "onestop_articles_by_level.tsv"
PAIRS = "onestop_sentence_pairs.tsv"
SOURCE = "github.com/nishkalavallabhi/OneStopEnglishCorpus (commit 37f8db3)"
LICENCE = "CC BY-SA 4.0"
LEVELS = ("adv", "int", "ele")  # most to least complex
RANK = {"adv": 2, "int": 1, "ele": 0}
PAIR_LEVELS = {"ADV-ELE": ("adv", "ele"), "ADV-INT": ("adv", "int"), "ELE-INT": ("ele", "int")}
N_ARTICLES = {"quick": 10, "full": None}
N_SENTENCE_TRIPLES = {"quick": 80, "full": 300}


def _folder(data_root: str | Path) -> Path:
    return dataset_dir(data_root, NAME, expected=f"{ARTICLES} and {PAIRS}", source=SOURCE)


def load_articles(data_root: str | Path) -> list[OneStopArticle]:
    """All article rows (567), validated: known level, matching rank, every article at all 3 levels."""
    path = require_file(_folder(data_root), ARTICLES, source=SOURCE)
    articles, first_line = [], {}
    for row in read_table(path, columns=("article", "level", "complexity_rank", "text"),
                          multiline=True):
        level = row.choice("level", LEVELS)
        rank = row.integer("complexity_rank")
        if rank != RANK[level]:
            raise row.error("complexity_rank", f"expected {RANK[level]} for level {level!r}, found {rank}")
        article = OneStopArticle(row.text("article"), level, rank, row.text("text"))
        key = (article.article, level)
        if key in first_line:
            raise located(path, f"duplicate article/level {key} (first on line {first_line[key]})",
                          line=row.line, column=1)
        first_line[key] = row.line
        articles.append(article)
    for name in dict.fromkeys(a.article for a in articles):
        missing = [level for level in LEVELS if (name, level) not in first_line]
        if missing:
            line = min(first_line[(name, level)] for level in LEVELS if (name, level) in first_line)
            raise located(path, f"article {name!r} lacks level(s) {', '.join(missing)}; expected adv, "
                                "int and ele", line=line, column=1)
    return articles


def load_sentence_pairs(data_root: str | Path) -> list[OneStopSentencePair]:
    """All aligned sentence pairs (5,994), validated: levels agree with the pair file."""
    path = require_file(_folder(data_root), PAIRS, source=SOURCE)
    pairs = []
    for row in read_table(path, columns=("pair_file", "first_level", "second_level", "first_text",
                                         "second_text")):
        pair_file = row.choice("pair_file", tuple(PAIR_LEVELS))
        first, second = PAIR_LEVELS[pair_file]
        pairs.append(OneStopSentencePair(
            pair_file, row.choice("first_level", (first,)), row.choice("second_level", (second,)),
            row.text("first_text"), row.text("second_text")))
    return pairs


def article_lists(articles: list[OneStopArticle]) -> list[list[str]]:
    """``[adv, int, ele]`` texts per article, in file order of the articles."""
    by_key = {(a.article, a.level): a.text for a in articles}
    names = list(dict.fromkeys(a.article for a in articles))
    return [[by_key[(name, level)] for level in LEVELS] for name in names]


def sentence_triples(pairs: list[OneStopSentencePair]) -> list[list[str]]:
    """``[adv, int, ele]`` sentence triples joined on an identical int sentence (see module doc)."""
    adv_of, ele_of = {}, {}
    for pair in pairs:
        if pair.pair_file == "ADV-INT":
            adv_of.setdefault(pair.second_text, []).append(pair.first_text)
        elif pair.pair_file == "ELE-INT":
            ele_of.setdefault(pair.second_text, []).append(pair.first_text)
    triples, used = [], set()
    for intermediate, advanced in adv_of.items():
        for adv in advanced:
            for ele in ele_of.get(intermediate, []):
                triple = [adv, intermediate, ele]
                if len(set(triple)) == 3 and not used.intersection(triple):
                    used.update(triple)
                    triples.append(triple)
    return triples


def build_units(data_root: str | Path, *, size: str = "quick", seed: int = 0) -> list[EvalUnit]:
    """Order-alignment units for articles and sentence triples, and sentence probing."""
    check_size(size)
    articles = disjoint_lists(article_lists(load_articles(data_root)))
    articles = sample(articles, N_ARTICLES[size], unit_rng(seed, NAME, "articles"))
    triples = disjoint_lists(sentence_triples(load_sentence_pairs(data_root)))
    triples = sample(triples, N_SENTENCE_TRIPLES[size], unit_rng(seed, NAME, "sentences"))
    return [
        EvalUnit(NAME, "articles", "order_list", OrderedLists(articles)),
        EvalUnit(NAME, "sentences", "order_list", OrderedLists(triples)),
        EvalUnit(NAME, "sentences", "probing", Texts([text for triple in triples for text in triple])),
    ]


SPEC = DatasetSpec(
    name=NAME, tasks=("order_list", "probing"),
    description="news articles at 3 reading levels (adv > int > ele), articles and aligned sentences",
    source=SOURCE, licence=LICENCE, load=build_units)
