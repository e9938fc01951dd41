"""Function-word frequencies (STEB section 4.1 "Function word frequencies", after Aggazzotti & Smith 2025).

Each text becomes the vector of relative frequencies ``count(entry) / number of tokens`` of the English
function words and multi-word function phrases listed in ``stylebench_jax/resources/function_words.txt``
(390 words and 69 phrases from STEB's ``steb/resources/function_words_phrases.json``; provenance in
the file). Tokens are ``(?u)\\b\\w+\\b`` matches of the lowercased text (so "a" and "i" count), a phrase
is counted as a run of consecutive tokens, and overlapping entries are all counted ("a little bit of"
also counts "a little" and "of"), as in STEB's implementation.

One deliberate difference: STEB looks entries up verbatim, so entries that its own tokenizer can never
produce ("i.e.", "and/or", "tho'", "'til", "etc.") are dead dimensions there. We tokenize every entry
with the same tokenizer ("i.e." -> "i e", "and/or" -> "and or", "tho'" -> "tho") and merge duplicates
("I"/"i", "ie"/"i.e"/"i.e."), leaving ``dim`` live dimensions.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from importlib import resources

import numpy as np

TOKEN_PATTERN = r"(?u)\b\w+\b"
_TOKEN = re.compile(TOKEN_PATTERN)


def load_function_words() -> list[str]:
    """Entries of the shipped list, in file order (comment and blank lines skipped)."""
    text = resources.files("stylebench_jax.resources").joinpath("function_words.txt").read_text("utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def normalize_entries(entries: Sequence[str]) -> list[str]:
    """Entries as lowercased, space-joined token sequences; duplicates (after normalising) dropped."""
    normalized = (" ".join(_TOKEN.findall(entry.lower())) for entry in entries)
    return [entry for entry in dict.fromkeys(normalized) if entry]


class FunctionWordEmbedder:
    """``embed(texts) -> [N, dim]`` float32 relative frequencies of function words and phrases."""

    def __init__(self, entries: Sequence[str] | None = None):
        from sklearn.feature_extraction.text import CountVectorizer

        self.entries = normalize_entries(load_function_words() if entries is None else entries)
        if not self.entries:
            raise ValueError("function-word list is empty")
        longest = max(len(entry.split()) for entry in self.entries)
        self._vectorizer = CountVectorizer(
            lowercase=True, token_pattern=TOKEN_PATTERN, ngram_range=(1, longest),
            vocabulary={entry: i for i, entry in enumerate(self.entries)}, dtype=np.float32)
        digest = hashlib.sha256("\n".join(self.entries).encode("utf-8")).hexdigest()[:16]
        self._identity = f"function_words:v1:tokens={TOKEN_PATTERN}:list={digest}"

    @property
    def name(self) -> str:
        return "baseline:function_words"

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def dim(self) -> int:
        return len(self.entries)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``[len(texts), dim]`` float32; a text without tokens gives a zero row."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        counts = self._vectorizer.transform(texts).toarray()
        lengths = np.fromiter((len(_TOKEN.findall(text.lower())) for text in texts), dtype=np.float32,
                              count=len(texts))
        return (counts / np.maximum(lengths, 1.0)[:, None]).astype(np.float32)
