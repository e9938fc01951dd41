"""Originality checks of a generated story against its reference excerpt (seed 003 §7.1: "prevent
copying of specific phrases, entities, or plot points"; the prompt forbids copying "character
names, or distinctive phrases").

- ``longest_common_words``: the longest run of consecutive words shared by output and excerpt
  (words: lower-cased letter/apostrophe runs). Found by binary search on ``n``: a common ``n``-gram
  implies a common ``(n - 1)``-gram, so the largest ``n`` with a non-empty intersection of the two
  ``n``-gram sets is the answer; ``O((a + b) log min(a, b))``.
- ``reused_names``: capitalised words of the excerpt that are not sentence-initial (after ``. ! ?``,
  a colon, semicolon, dash or line break) and never appear in lower case in the excerpt (likely
  names: "Pip", "Gradgrind", "London"), minus honorifics, the pronoun "I" and a few words
  capitalised for other reasons, found again (case-sensitively) in the output.

A story is flagged ``copied_phrase`` at ``max_common_words`` (8) shared words in a row and
``reused_names`` when it repeats any such name. Flags are recorded in the trace, not used to drop
or rescore a story: a reader decides.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z']+")
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'\u2019-]*|[.!?:;\n\u2014]+")
NOT_NAMES = frozenset("""I Mr Mrs Miss Ms Dr Sir Madam Lady Lord Master Mistress Captain Colonel Major General
Doctor Professor Saint St Squire Monsieur Madame Mademoiselle Herr God Heaven Christian Christmas English
French Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July
August September October November December O Oh Ah""".split())
ABBREVIATIONS = frozenset({"Mr", "Mrs", "Ms", "Dr", "St", "Messrs", "Mme", "Mlle", "Capt", "Col", "Gen",
                           "Rev"})


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _ngrams(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def longest_common_words(a: str, b: str) -> int:
    """Length of the longest run of consecutive words that ``a`` and ``b`` share (module docstring)."""
    wa, wb = words(a), words(b)
    low, high = 0, min(len(wa), len(wb))
    while low < high:
        mid = (low + high + 1) // 2
        if _ngrams(wa, mid) & _ngrams(wb, mid):
            low = mid
        else:
            high = mid - 1
    return low


def _bare(token: str) -> str:
    """``token`` without a possessive ending: "Gradgrind's" and "Joe's" name Gradgrind and Joe."""
    for ending in ("'s", "\u2019s", "'", "\u2019"):
        if token.endswith(ending) and len(token) > len(ending):
            return token[: -len(ending)]
    return token


def capitalised_names(text: str) -> set[str]:
    """Capitalised words that do not open a sentence (module docstring), possessives bared."""
    names, initial = set(), True
    tokens = [_bare(t) for t in _TOKEN.findall(text)]
    lower = {t for t in tokens if t[0].islower()}
    for k, token in enumerate(tokens):
        if not token[0].isalpha():
            initial = initial or not (token == "." and k and tokens[k - 1] in ABBREVIATIONS)
            continue
        if not initial and token[0].isupper() and token not in NOT_NAMES and not token.isupper() \
                and token.lower() not in lower:
            names.add(token)
        initial = False
    return names


def originality(excerpt: str, output: str, max_common_words: int = 8) -> dict:
    """``{"longest_common_words", "reused_names", "flags"}`` of ``output`` against ``excerpt``."""
    longest = longest_common_words(excerpt, output)
    output_words = {_bare(w) for w in re.findall(r"[A-Za-z][A-Za-z'\u2019-]*", output)}
    reused = sorted(name for name in capitalised_names(excerpt) if name in output_words)
    flags = (["copied_phrase"] if longest >= max_common_words else []) + (["reused_names"] if reused else [])
    return {"longest_common_words": longest, "reused_names": reused, "flags": flags}
