"""Typed records: one frozen dataclass per row kind of the shared datasets.

Loaders (``stylebench_jax.data.<source>``) read and validate files into these records; the
registry turns records into evaluation units. Texts are ``str`` exactly as stored in the files
(no normalisation) unless a loader's docstring says otherwise. STEL quadruples have their own
record in ``stylebench_jax.data.stel``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

BIBLE_VERSIONS = ("KJV", "ASV", "DARBY", "DRA", "YLT", "WEB", "BBE", "LEB")


@dataclasses.dataclass(frozen=True)
class BibleVerse:
    """One verse id with its text in each version that has it (absent versions are left out)."""

    book: str
    chapter: int
    verse: int
    texts: Mapping[str, str]  # version (one of BIBLE_VERSIONS) -> verse text

    @property
    def verse_id(self) -> str:
        return f"{self.book} {self.chapter}:{self.verse}"


@dataclasses.dataclass(frozen=True)
class CdsSentence:
    """One Corpus-of-Diverse-Styles sample sentence; ``style`` is the class label."""

    style: str
    index: int
    text: str


@dataclasses.dataclass(frozen=True)
class OneStopArticle:
    """One OneStopEnglish article at one reading level (adv=2, int=1, ele=0)."""

    article: str
    level: str
    complexity_rank: int
    text: str


@dataclasses.dataclass(frozen=True)
class OneStopSentencePair:
    """Two aligned sentences of the same content at two reading levels."""

    pair_file: str
    first_level: str
    second_level: str
    first_text: str
    second_text: str


@dataclasses.dataclass(frozen=True)
class AssetItem:
    """One ASSET source sentence with its ten reference simplifications."""

    split: str  # "valid" | "test"
    index: int  # 0-based line index in the split's files
    original: str
    simplifications: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class ShakespearePair:
    """A Shakespeare line and its modern paraphrase."""

    source: str  # "sparknotes" | "enotes"
    play: str
    line_idx: int
    original: str
    modern: str


@dataclasses.dataclass(frozen=True)
class StylePTBPair:
    """A StylePTB compositional transfer: ``target`` is ``source`` after the listed operations."""

    dataset: str
    split: str
    tense_op: str  # keep | to_future | to_past | to_present
    voice_op: str  # keep | active_to_passive | passive_to_active
    pp_op: str  # keep | pp_removal
    source: str
    target: str

    @property
    def transfer(self) -> str:
        """The applied operations joined by '+', e.g. 'to_future+pp_removal'; '' when none."""
        return "+".join(op for op in (self.tense_op, self.voice_op, self.pp_op) if op != "keep")


PASTEL_ATTRIBUTES = ("country", "politics", "tod", "age", "education", "ethnic", "gender")


@dataclasses.dataclass(frozen=True)
class PastelSentence:
    """One PASTEL v1 sentence written by a crowd worker with the given persona."""

    split: str
    id: str
    persona: Mapping[str, str | None]  # attribute (PASTEL_ATTRIBUTES) -> value, None if unknown
    input_sentence: str
    output_sentence: str


@dataclasses.dataclass(frozen=True)
class PolitenessRequest:
    """One Stanford Politeness request with its five ratings and normalised (z-scored) score."""

    community: str  # "Wikipedia" | "Stack Exchange"
    id: str
    text: str
    scores: tuple[int, ...]
    normalized_score: float


@dataclasses.dataclass(frozen=True)
class M4Pair:
    """A human text and a Llama-2 text written for the same prompt."""

    domain: str
    model: str
    source: str
    source_id: str | None
    prompt: str
    human_text: str
    machine_text: str


@dataclasses.dataclass(frozen=True)
class ReutersArticle:
    """One Reuters C50 news article."""

    split: str  # "train" | "test"
    author: str
    file: str
    text: str


@dataclasses.dataclass(frozen=True)
class Novel:
    """One book (or one volume of a multi-volume work) of a novel corpus.

    ``work`` groups the volumes of one work so that cross-book splits never pair two volumes of
    the same work; ``text`` has the corpus-specific boilerplate removed (see ``data.novels``).
    """

    corpus: str
    author: str
    work: str
    title: str
    file: str
    text: str


@dataclasses.dataclass(frozen=True)
class FederalistPaper:
    """One Federalist essay; ``text`` has the release's punctuation tags mapped back."""

    number: int
    author: str  # HAMILTON | MADISON | JAY | HAMILTON AND MADISON | HAMILTON OR MADISON
    text: str
