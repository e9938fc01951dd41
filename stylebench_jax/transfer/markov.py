"""A word-level Markov chain text generator (the ``markov`` backend of the transfer benchmark).

Tokens are whitespace-separated words with their punctuation attached ("said," "Mr." "end.'") and a
paragraph token between paragraphs, so the chain also learns where the author breaks paragraphs.
State = the last ``order`` tokens; the next token is drawn uniformly from every token that followed
that state in training (i.e. by its empirical frequency). Storage is NumPy: states are encoded as
base-V integers (V = vocabulary size; ``V^order`` must fit in int64) and sorted, so a state's
followers are one ``searchsorted`` range.

Generation starts at a random sentence start of the training text (a capitalised token after a
sentence end or paragraph break), restarts at another one when the chain reaches a state with no
follower (the end of a training book), and stops at the first sentence end once ``target_words``
words are written (at ``2 * target_words`` at the latest).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from stylebench_jax.text.normalize import paragraphs, standardize_text

PARAGRAPH = "\u00b6"
_SENTENCE_END = re.compile(r"[.!?][\"')\]\u2019\u201d]*$")


def tokenize(text: str) -> list[str]:
    out: list[str] = []
    for paragraph in paragraphs(standardize_text(text)):
        if out:
            out.append(PARAGRAPH)
        out.extend(paragraph.split())
    return out


def ends_sentence(token: str) -> bool:
    return bool(_SENTENCE_END.search(token))


class MarkovChain:
    def __init__(self, vocab: list[str], ids: np.ndarray, order: int):
        if order < 1:
            raise ValueError(f"order: expected >= 1, found {order}")
        if len(vocab) ** order >= 2 ** 62:
            raise ValueError(f"order {order} with {len(vocab)} word types does not fit int64 states")
        self.vocab, self.ids, self.order = vocab, ids, order
        self.n_words = int(ids.size)
        states = self._encode(np.lib.stride_tricks.sliding_window_view(ids[:-1], order)) \
            if ids.size > order else np.zeros(0, np.int64)
        followers = ids[order:]
        sort = np.argsort(states, kind="stable")
        self.states, self.followers = states[sort], followers[sort]
        para = vocab.index(PARAGRAPH) if PARAGRAPH in vocab else -1
        is_end = np.array([ends_sentence(w) for w in vocab]) if vocab else np.zeros(0, bool)
        capital = np.array([w[:1].isupper() for w in vocab]) if vocab else np.zeros(0, bool)
        previous_ends = np.concatenate([[True], is_end[ids[:-1]] | (ids[:-1] == para)])
        starts = np.flatnonzero(previous_ends & capital[ids])
        self.starts = starts[starts + order < ids.size]
        if self.starts.size == 0:
            raise ValueError("training text has no sentence start to begin from")

    def _encode(self, windows: np.ndarray) -> np.ndarray:
        code = np.zeros(windows.shape[0], np.int64)
        for k in range(windows.shape[1]):
            code = code * len(self.vocab) + windows[:, k]
        return code

    @classmethod
    def train(cls, texts: Sequence[str], order: int, max_words: int, rng: np.random.Generator) -> MarkovChain:
        """Train on ``texts`` (one per book), at most ``max_words`` tokens in all: each book gives an
        equal share, a contiguous span from a seeded random offset. Books are joined by a paragraph token."""
        share = max(max_words // max(len(texts), 1), order + 1)
        tokens: list[str] = []
        for text in texts:
            book = tokenize(text)
            if len(book) > share:
                offset = int(rng.integers(0, len(book) - share + 1))
                book = book[offset:offset + share]
            if tokens:
                tokens.append(PARAGRAPH)
            tokens.extend(book)
        vocab = sorted(set(tokens))
        index = {w: i for i, w in enumerate(vocab)}
        return cls(vocab, np.fromiter((index[t] for t in tokens), np.int64, len(tokens)), order)

    def generate(self, target_words: int, rng: np.random.Generator) -> str:
        out: list[int] = []
        words = 0
        para = self.vocab.index(PARAGRAPH) if PARAGRAPH in self.vocab else -1
        state: list[int] = []
        while True:
            if not state:
                start = int(self.starts[rng.integers(self.starts.size)])
                state = [int(t) for t in self.ids[start:start + self.order]]
                for t in state:
                    out.append(t)
                    words += t != para
            code = int(self._encode(np.asarray([state], np.int64))[0])
            lo, hi = np.searchsorted(self.states, code, "left"), np.searchsorted(self.states, code, "right")
            if lo == hi:  # no follower: begin a new sentence elsewhere
                state = []
                continue
            token = int(self.followers[rng.integers(lo, hi)])
            out.append(token)
            words += token != para
            state = state[1:] + [token]
            if words >= 2 * target_words or (words >= target_words and ends_sentence(self.vocab[token])):
                break
        return self._detokenize(out)

    def _detokenize(self, ids: list[int]) -> str:
        text = " ".join(self.vocab[i] for i in ids)
        text = re.sub(rf"\s*{PARAGRAPH}\s*", "\n\n", text)
        return text.strip()
