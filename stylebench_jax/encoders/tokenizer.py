"""Tokenisation from local files: fast WordPiece/BPE through Hugging Face ``tokenizers`` (Rust), or
SentencePiece models (``encoders.sentencepiece_tokenizer``); ``load_tokenizer`` picks from the files.

Order of preference: ``tokenizer.json`` (fast, what transformers' ``AutoTokenizer`` uses when present),
then ``sentencepiece.bpe.model`` (XLM-R) or ``tokenizer.model`` (Llama-style), then ``vocab.txt``
(BERT WordPiece).

We take only the content token ids from the tokenizer (no special tokens, no truncation, no
padding) and add the model's special tokens ourselves, so truncation, chunking and padding are
under our control and identical for every model family.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

from stylebench_jax.encoders.sentencepiece_tokenizer import LLAMA_FILE, XLMR_FILE, SentencePieceTokenizer
from stylebench_jax.errors import UserInputError
from stylebench_jax.fileio import read_json_file, write_text_atomic

TOKENIZER_FILES = ("tokenizer.json", XLMR_FILE, LLAMA_FILE, "vocab.txt")


def read_tokenizer_config(model_dir: Path) -> dict:
    """``tokenizer_config.json`` of ``model_dir`` (``{}`` when absent); ``UserInputError`` naming the
    file when it is not a JSON object."""
    path = Path(model_dir) / "tokenizer_config.json"
    config = read_json_file(path, {})
    if not isinstance(config, dict):
        raise UserInputError(f"{path}: expected a JSON object, found {type(config).__name__}")
    return config


def load_tokenizer(model_dir: Path) -> TextTokenizer | SentencePieceTokenizer:
    """The tokenizer of ``model_dir``, chosen from its files (see the module docstring for the order)."""
    model_dir = Path(model_dir)
    if (model_dir / "tokenizer.json").exists():
        return TextTokenizer.from_dir(model_dir)
    for name in (XLMR_FILE, LLAMA_FILE):
        if (model_dir / name).exists():
            return SentencePieceTokenizer.from_file(model_dir / name, read_tokenizer_config(model_dir))
    if (model_dir / "vocab.txt").exists():
        return TextTokenizer.from_dir(model_dir)
    raise UserInputError(f"{model_dir}: no tokenizer (expected one of {', '.join(TOKENIZER_FILES)})")


class TextTokenizer:
    """Wraps a ``tokenizers.Tokenizer``; knows the special-token prefix/suffix and the pad id."""

    def __init__(self, tokenizer: Tokenizer, digest: str, pad_id: int, model_max_length: int | None = None):
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self.digest = digest
        self.pad_id = pad_id
        # ``model_max_length`` of tokenizer_config.json (None when absent): the length Hugging Face
        # tokenizers truncate to, which STEB's generic loader uses as the model's context.
        self.model_max_length = model_max_length
        probe_with = tokenizer.encode("a", add_special_tokens=True).ids
        probe_without = tokenizer.encode("a", add_special_tokens=False).ids
        start = next((i for i in range(len(probe_with) - len(probe_without) + 1)
                      if probe_with[i:i + len(probe_without)] == probe_without), None)
        if start is None:
            raise ValueError("cannot locate content tokens inside the special-token template")
        self.prefix = tuple(probe_with[:start])
        self.suffix = tuple(probe_with[start + len(probe_without):])

    @property
    def n_special(self) -> int:
        return len(self.prefix) + len(self.suffix)

    def content_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text without special tokens (batched, multi-threaded in Rust)."""
        return [encoding.ids for encoding in
                self._tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def content_tokens(self, texts: Sequence[str]) -> list[tuple[list[str], list[int | None]]]:
        """Per text: the content tokens (no special tokens) as the substrings of the text they cover
        (so ``[UNK]`` shows what it stands for) and, for each, the index of the pre-tokeniser word it
        belongs to (WordPiece continuations share their word's index)."""
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [([text[a:b] for a, b in encoding.offsets], encoding.word_ids)
                for text, encoding in zip(texts, encodings)]

    def wrap(self, content: Sequence[int]) -> list[int]:
        """Add the model's special tokens around ``content`` (e.g. ``[CLS] ... [SEP]``)."""
        return [*self.prefix, *content, *self.suffix]

    def lowercased(self) -> TextTokenizer:
        """The same tokenizer lowercasing every text first (sentence-transformers' ``do_lower_case``):
        a Lowercase normaliser ahead of the pipeline's own, so a saved copy does it too; the digest
        changes with it."""
        tokenizer = Tokenizer.from_str(self._tokenizer.to_str())
        first = normalizers.Lowercase()
        tokenizer.normalizer = first if tokenizer.normalizer is None else normalizers.Sequence(
            [first, tokenizer.normalizer])
        digest = hashlib.sha256(f"{self.digest}/lowercase".encode()).hexdigest()[:16]
        return TextTokenizer(tokenizer, digest, self.pad_id, self.model_max_length)

    def save(self, directory: Path) -> None:
        """Write ``tokenizer.json`` (the whole pipeline, special-token template included) and
        ``tokenizer_config.json`` (pad token) into ``directory``: what :meth:`from_dir` reads back."""
        directory = Path(directory)
        write_text_atomic(directory / "tokenizer.json", self._tokenizer.to_str(pretty=False))
        pad_token = self._tokenizer.id_to_token(self.pad_id)
        write_text_atomic(directory / "tokenizer_config.json",
                          json.dumps({"pad_token": pad_token}, indent=2, sort_keys=True) + "\n")

    @classmethod
    def from_dir(cls, model_dir: Path) -> TextTokenizer:
        """Load ``tokenizer.json`` (preferred) or ``vocab.txt`` (BERT WordPiece) from ``model_dir``."""
        tokenizer_json = model_dir / "tokenizer.json"
        vocab_txt = model_dir / "vocab.txt"
        tok_config = read_tokenizer_config(model_dir)
        if tokenizer_json.exists():
            raw = tokenizer_json.read_bytes()
            try:
                tokenizer = Tokenizer.from_str(raw.decode("utf-8"))
            except Exception as error:
                raise UserInputError(f"{tokenizer_json}: not a valid tokenizers file ({error})") from None
            settings = _bert_settings_override(tokenizer, tok_config)
            if settings is not None:
                raw += json.dumps(settings, sort_keys=True).encode()
        elif vocab_txt.exists():
            raw = vocab_txt.read_bytes()
            settings = _bert_settings(tok_config)
            tokenizer = _wordpiece_from_vocab(vocab_txt, **settings)
            raw += json.dumps(settings, sort_keys=True).encode()
        else:
            raise UserInputError(f"{model_dir}: no tokenizer.json or vocab.txt")
        pad_token = tok_config.get("pad_token", "[PAD]")
        if isinstance(pad_token, dict):
            pad_token = pad_token.get("content", "[PAD]")
        # Decoders often have no pad token (null): any id works, padding is masked out.
        pad_id = tokenizer.token_to_id(pad_token) if isinstance(pad_token, str) else None
        if pad_id is None:
            pad_id = 0
        model_max_length = tok_config.get("model_max_length")
        if not isinstance(model_max_length, int) or isinstance(model_max_length, bool):
            model_max_length = None
        return cls(tokenizer, hashlib.sha256(raw).hexdigest()[:16], pad_id, model_max_length)


def _bert_settings(tok_config: dict) -> dict:
    """``BertTokenizer(Fast)``'s normaliser settings from ``tokenizer_config.json``, with
    transformers' defaults (lowercase, Chinese characters split, accents stripped when lowercasing)."""
    strip = tok_config.get("strip_accents")
    return {"lowercase": bool(tok_config.get("do_lower_case", True)),
            "strip_accents": None if strip is None else bool(strip),
            "handle_chinese_chars": bool(tok_config.get("tokenize_chinese_chars", True))}


def _bert_settings_override(tokenizer: Tokenizer, tok_config: dict) -> dict | None:
    """transformers 4's ``BertTokenizerFast`` rebuilds a ``tokenizer.json``'s BertNormalizer from
    ``tokenizer_config.json`` when the two disagree (``do_lower_case``, ``strip_accents``,
    ``tokenize_chinese_chars``); the same here, for a config naming a BERT tokenizer. Returns the
    settings applied, or None when nothing changed."""
    if tok_config.get("tokenizer_class") not in ("BertTokenizer", "BertTokenizerFast") \
            or tokenizer.normalizer is None:
        return None
    state = json.loads(tokenizer.normalizer.__getstate__())
    if state.get("type") != "BertNormalizer":
        return None
    settings = _bert_settings(tok_config)
    if all(state.get(key, value) == value for key, value in settings.items()):
        return None
    tokenizer.normalizer = normalizers.BertNormalizer(clean_text=state.get("clean_text", True), **settings)
    return settings


def _wordpiece_from_vocab(vocab_txt: Path, lowercase: bool, strip_accents: bool | None = None,
                          handle_chinese_chars: bool = True) -> Tokenizer:
    """BERT's WordPiece pipeline (normaliser, pre-tokeniser, [CLS] ... [SEP]) from a ``vocab.txt``;
    the special tokens present in the vocabulary are matched whole in a text, as transformers does."""
    vocab = models.WordPiece.read_file(str(vocab_txt))
    for token in ("[UNK]", "[CLS]", "[SEP]"):
        if token not in vocab:
            raise UserInputError(f"{vocab_txt}: vocabulary lacks the special token {token}")
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase, clean_text=True,
                                                      handle_chinese_chars=handle_chinese_chars,
                                                      strip_accents=strip_accents)
    tokenizer.add_special_tokens([t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if t in vocab])
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
    return tokenizer
