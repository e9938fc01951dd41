"""SentencePiece tokenisation (``sentencepiece``) with the id conventions of transformers' slow tokenizers.

Two conventions, chosen by the model file's name (and checked against ``tokenizer_config.json``'s
``tokenizer_class`` when present):

- ``sentencepiece.bpe.model`` -> ``XLMRobertaTokenizer`` (fairseq vocabulary): ``<s>=0 <pad>=1 </s>=2
  <unk>=3``, every other piece at its SentencePiece id + 1 (SentencePiece's ``<unk>``, id 0, becomes 3),
  ``<mask>`` after the last piece; sequences are ``<s> ... </s>``.
- ``tokenizer.model`` -> ``LlamaTokenizer`` (Llama / Mistral): SentencePiece ids unchanged, ``<s>``
  (bos) in front when ``add_bos_token`` (default true), ``</s>`` (eos) at the end when
  ``add_eos_token`` (default false).

Content ids are ``SentencePieceProcessor.encode(text)``. transformers' slow tokenizers first cut the
text at the literal strings of special tokens (``"<s>"`` typed inside a text becomes the bos id); we do
not (a text is text), the only known difference. The parity fixture checks our ids against
transformers' on multilingual texts, with ``legacy`` true (XLM-R, Llama) and false (Mistral).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from stylebench_jax.errors import UserInputError

XLMR_FILE = "sentencepiece.bpe.model"
LLAMA_FILE = "tokenizer.model"
_XLMR_CLASSES = ("XLMRobertaTokenizer", "XLMRobertaTokenizerFast")
_ID_KEYS = ("tokenizer_class", "add_bos_token", "add_eos_token", "bos_token", "eos_token", "pad_token")
_LLAMA_CLASSES = ("LlamaTokenizer", "LlamaTokenizerFast", "CodeLlamaTokenizer", "CodeLlamaTokenizerFast")


class SentencePieceTokenizer:
    """Same interface as ``tokenizer.TextTokenizer``: ``content_ids``, ``wrap``, ``prefix``/``suffix``,
    ``n_special``, ``pad_id``, ``digest``."""

    def __init__(self, processor, digest: str, *, offset: int, unk_id: int, prefix: tuple, suffix: tuple,
                 pad_id: int, kind: str, model_bytes: bytes = b"", file_name: str = LLAMA_FILE,
                 config: dict | None = None, model_max_length: int | None = None):
        self._processor = processor
        self._model_bytes, self._file_name, self._config = model_bytes, file_name, dict(config or {})
        self._offset = offset
        self._unk_id = unk_id
        self.prefix = prefix
        self.suffix = suffix
        self.pad_id = pad_id
        self.digest = digest
        self.kind = kind
        self.model_max_length = model_max_length  # as tokenizer.TextTokenizer (STEB's loader reads it)

    @property
    def n_special(self) -> int:
        return len(self.prefix) + len(self.suffix)

    def content_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text without special tokens."""
        encoded = self._processor.encode(list(texts))
        if not self._offset:
            return encoded
        unk, offset = self._unk_id, self._offset
        return [[i + offset if i else unk for i in ids] for ids in encoded]

    def wrap(self, content: Sequence[int]) -> list[int]:
        return [*self.prefix, *content, *self.suffix]

    def save(self, directory: Path) -> None:
        """Write the SentencePiece model and the ``tokenizer_config.json`` keys that decide its ids
        into ``directory``: what ``tokenizer.load_tokenizer`` reads back (same ids, same digest)."""
        from stylebench_jax.fileio import atomic_open, write_text_atomic

        directory = Path(directory)
        with atomic_open(directory / self._file_name, "wb") as handle:
            handle.write(self._model_bytes)
        write_text_atomic(directory / "tokenizer_config.json",
                          json.dumps(self._config, indent=2, sort_keys=True) + "\n")

    @classmethod
    def from_file(cls, model_file: Path, tok_config: dict) -> SentencePieceTokenizer:
        import sentencepiece

        raw = model_file.read_bytes()
        processor = sentencepiece.SentencePieceProcessor()
        try:
            processor.LoadFromSerializedProto(raw)
        except Exception as error:  # sentencepiece raises RuntimeError/OSError for a bad proto
            raise UserInputError(f"{model_file}: not a SentencePiece model ({error})") from None
        declared = tok_config.get("tokenizer_class")
        if model_file.name == XLMR_FILE:
            if declared not in (None, *_XLMR_CLASSES):
                raise UserInputError(f"{model_file}: {XLMR_FILE} with tokenizer_class {declared!r}; only the "
                                     "XLM-RoBERTa convention is supported for this file")
            size = processor.GetPieceSize()
            settings = dict(offset=1, unk_id=3, prefix=(0,), suffix=(2,), pad_id=1, kind="xlmr")
            digest_extra = f"xlmr/{size}"
        else:
            if declared not in (None, *_LLAMA_CLASSES):
                raise UserInputError(f"{model_file}: tokenizer_class {declared!r} is not a Llama-style "
                                     f"SentencePiece tokenizer (supported: {', '.join(_LLAMA_CLASSES)})")
            add_bos = bool(tok_config.get("add_bos_token", True))
            add_eos = bool(tok_config.get("add_eos_token", False))
            bos = _special_id(processor, tok_config, "bos_token", processor.bos_id(), model_file)
            eos = _special_id(processor, tok_config, "eos_token", processor.eos_id(), model_file)
            pad = _special_id(processor, tok_config, "pad_token", None, model_file)
            settings = dict(offset=0, unk_id=processor.unk_id(), prefix=(bos,) if add_bos else (),
                            suffix=(eos,) if add_eos else (), pad_id=0 if pad is None else pad, kind="llama")
            # the ids themselves, not only whether they are added: tokenizer_config.json may name
            # another piece as bos/eos (same model file, other vectors)
            digest_extra = f"llama/prefix={settings['prefix']}/suffix={settings['suffix']}"
        digest = hashlib.sha256(raw + digest_extra.encode()).hexdigest()[:16]
        kept = {key: tok_config[key] for key in _ID_KEYS if key in tok_config}
        limit = tok_config.get("model_max_length")
        limit = limit if isinstance(limit, int) and not isinstance(limit, bool) else None
        return cls(processor, digest, model_bytes=raw, file_name=model_file.name, config=kept,
                   model_max_length=limit, **settings)


def _special_id(processor, tok_config: dict, key: str, default, model_file: Path):
    token = tok_config.get(key)
    if isinstance(token, dict):
        token = token.get("content")
    if token is None:
        return default
    piece = processor.PieceToId(token)
    if piece == processor.unk_id() and token != processor.IdToPiece(processor.unk_id()):
        raise UserInputError(f"{model_file.parent / 'tokenizer_config.json'}: field {key!r}: token {token!r} "
                             f"is not in {model_file.name}")
    return piece

