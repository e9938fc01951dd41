"""The Federalist Papers, 85 essays with Mosteller & Wallace authorship labels.

Source: github.com/ariddell/corpora-mosteller-wallace-federalist (commit e5fa0fb,
``originals/federalist.csv``, originally from Robert Stine's Wharton course page), staged as
``federalist_papers/federalist.csv`` (UTF-8 CSV, header ``number author text``). Licence: CC0 1.0;
the essays (1787-88) are public domain.

The release encodes punctuation as tags; they are mapped back before use (the README's reading,
applied identically to every essay): ``<c>`` comma, ``<p>`` period, ``<S>`` semicolon, ``<l>``
colon, ``<d> <d>`` a dash written ``--`` and a single ``<d>`` a hyphen. ``<Q>`` is "question mark
or quote": right after another tag it is a quotation mark (``, <Q> and``, ``<p> <Q> But``: a
question mark cannot follow a comma or a period; 271 of the 830), elsewhere a question mark. The
footnote markers ``FNA1 <d> @1`` (only in Hamilton's papers 22, 24, 27, 28 and 36, an editor's
artefact that names one author) are removed; the footnotes' text is kept.

Units (authorship of the undisputed papers; HAMILTON 51, MADISON 14, JAY 5):

- ``retrieval`` (subset ``undisputed``): each author's papers are split at random (seeded) into
  query and target halves (queries get the smaller half); relevant = same author.
- ``pair_predefined`` (subset ``undisputed``): balanced same-author / different-author pairs of
  undisputed papers (seeded).
- ``retrieval`` (subset ``disputed``): the 12 disputed papers as queries against all undisputed
  papers, labelled MADISON - Mosteller & Wallace's attribution, the standard reproduction target
  (a scholarly consensus, not ground truth).

Joint papers (HAMILTON AND MADISON: 18-20) are left out. ``quick`` uses one excerpt of
``QUICK_EXCERPT_WORDS`` words per essay (the essays average ~2,500 tokens); ``full`` whole essays.
"""

from __future__ import annotations

import re
from pathlib import Path

from stylebench_jax.data.readers import dataset_dir, read_table, require_file
from stylebench_jax.data.records import FederalistPaper
from stylebench_jax.data.sampling import balanced_pairs, excerpt, unit_rng
from stylebench_jax.data.units import DatasetSpec, EvalUnit, RetrievalSet, TextPairs, check_size
from stylebench_jax.errors import located

NAME = "federalist_papers"
FILE = "federalist.csv"
SOURCE = "github.com/ariddell/corpora-mosteller-wallace-federalist (commit e5fa0fb, originals/federalist.csv)"
LICENCE = "CC0 1.0 (essays public domain)"
AUTHORS = ("HAMILTON", "MADISON", "JAY", "HAMILTON AND MADISON", "HAMILTON OR MADISON")
UNDISPUTED = ("HAMILTON", "MADISON", "JAY")
DISPUTED = "HAMILTON OR MADISON"
REFERENCE_ATTRIBUTION = "MADISON"  # Mosteller & Wallace (1964) for all 12 disputed papers
QUICK_EXCERPT_WORDS = 250
N_PAIRS = {"quick": 100, "full": 500}

_TAGS = ((r"\s*FNA\d+\s*<d>\s*@\d+", ""), (r"(?<=<[cpSlQd]>)\s*<Q>(?:\s+(?!\s|<Q>))?", ' "'),
         (r"\s*<d>\s*<d>\s*", " -- "), (r"\s*<d>\s*", "-"), (r"\s*<c>", ","), (r"\s*<p>", "."),
         (r"\s*<S>", ";"), (r"\s*<Q>", "?"), (r"\s*<l>", ":"))


def untag(text: str) -> str:
    """Map the release's punctuation tags back to characters (module docstring) and strip."""
    for pattern, replacement in _TAGS:
        text = re.sub(pattern, replacement, text)
    return text.strip()


def load_federalist(data_root: str | Path) -> list[FederalistPaper]:
    """All 85 essays, validated (numbers unique, authors from the five known labels), untagged."""
    folder = dataset_dir(data_root, NAME, expected=FILE, source=SOURCE)
    path = require_file(folder, FILE, source=SOURCE)
    papers, seen = [], {}
    for row in read_table(path, delimiter=",", columns=("number", "author", "text")):
        paper = FederalistPaper(row.integer("number", minimum=1), row.choice("author", AUTHORS),
                                untag(row.text("text")))
        if paper.number in seen:
            raise located(path, f"duplicate paper number {paper.number} (first on line {seen[paper.number]})",
                          line=row.line, column=1, field="number")
        seen[paper.number] = row.line
        papers.append(paper)
    return papers


def build_units(data_root: str | Path, *, size: str = "quick", seed: int = 0) -> list[EvalUnit]:
    """Undisputed retrieval and pairs, plus the disputed-papers attribution retrieval."""
    check_size(size)
    papers = load_federalist(data_root)
    rng = unit_rng(seed, NAME, "undisputed")
    if size == "quick":
        text = {p.number: excerpt(p.text, QUICK_EXCERPT_WORDS, rng) for p in papers}
    else:
        text = {p.number: p.text for p in papers}
    queries, targets = [], []
    for author in UNDISPUTED:
        own = [p for p in papers if p.author == author]
        order = rng.permutation(len(own))
        n_queries = len(own) // 2
        queries += [own[i] for i in sorted(order[:n_queries])]
        targets += [own[i] for i in sorted(order[n_queries:])]
    undisputed = [p for p in papers if p.author in UNDISPUTED]
    first, second, same = balanced_pairs([p.author for p in undisputed], N_PAIRS[size], rng)
    disputed = [p for p in papers if p.author == DISPUTED]
    return [
        EvalUnit(NAME, "undisputed", "retrieval", RetrievalSet(
            query_texts=[text[p.number] for p in queries], query_labels=[p.author for p in queries],
            target_texts=[text[p.number] for p in targets], target_labels=[p.author for p in targets])),
        EvalUnit(NAME, "undisputed", "pair_predefined", TextPairs(
            a=[text[undisputed[i].number] for i in first],
            b=[text[undisputed[j].number] for j in second],
            labels=same)),
        EvalUnit(NAME, "disputed", "retrieval", RetrievalSet(
            query_texts=[text[p.number] for p in disputed],
            query_labels=[REFERENCE_ATTRIBUTION] * len(disputed),
            target_texts=[text[p.number] for p in undisputed],
            target_labels=[p.author for p in undisputed])),
    ]


SPEC = DatasetSpec(
    name=NAME, tasks=("retrieval", "pair_predefined"),
    description="85 Federalist essays (Hamilton, Madison, Jay; 12 disputed attributed to Madison)",
    source=SOURCE, licence=LICENCE, load=build_units)
