"""Write the PyTorch reference fixtures that the parity tests read, so the tests need no torch.

What it writes, for each model family in ``FAMILIES`` (one ``make_<family>`` function each):

    tests/fixtures/<family>/model/      a tiny random checkpoint exactly as transformers saves it:
                                        config.json, model.safetensors, the tokenizer's files
    tests/fixtures/<family>/reference/  transformers' outputs for the family's texts:
        meta.json                       texts, family, seed, library versions, what each array is
        input_ids.npy                   int32 [B, L]: the transformers tokenizer's ids (special tokens,
                                        right-padded with the pad id, 0 for decoders, to the longest text)
        attention_mask.npy              int32 [B, L]: 1 on real tokens, 0 on padding
      encoders (BERT, RoBERTa, XLM-R), from one right-padded batch:
        last_hidden_state.npy           float32 [B, L, H]: the model's last layer (padding rows included)
        mean.npy                        float32 [B, H]: mean over unmasked tokens, L2-normalised with
                                        torch.nn.functional.normalize (sentence-transformers' recipe)
        cls.npy                         float32 [B, H]: first token's hidden state, L2-normalised
      decoders (Llama, Mistral, Qwen2, Qwen3, GPT-2), one text at a time without padding (batch of 1,
      the padding-free ground truth):
        last.npy / mean.npy             float32 [B, H]: last-token and mean pooling, L2-normalised

For decoders the script also runs the batch left- and right-padded with explicit ``position_ids =
cumsum(mask) - 1`` and asserts transformers agrees with itself to 1e-5, so the fixture also pins down that
positions count real tokens only (a plain transformers forward on a left-padded batch without
``position_ids`` counts padding as positions and gives different vectors).

Families (2 layers each; model.safetensors of 50-380 KB):
  bert     hidden 32, 4 heads, MLP 64; hand-written WordPiece vocab.txt (no tokenizer.json)
  roberta  same sizes; hand-written byte-level BPE tokenizer.json (pad id 1, positions offset by 2)
  xlmr     XLM-RoBERTa with a SentencePiece sentencepiece.bpe.model and no tokenizer.json; the slow
           (sentencepiece) and fast (converted) transformers tokenizers are checked to agree
  llama    GQA 4 heads / 2 KV heads, llama3 RoPE scaling, untied LM head, SentencePiece tokenizer.model
  mistral  multi-query (1 KV head), explicit head_dim 16 (heads*head_dim != hidden), sliding window 4,
           tied embeddings, SentencePiece tokenizer.model (legacy=False)
  qwen2    QKV bias, 8 heads / 4 KV heads (KV heads shard over model=4), byte-level BPE tokenizer.json
  qwen3    q/k RMSNorm, attention_bias (q, k, v and o), head_dim 16 with hidden 32, layer 1 sliding
           (window 3) and layer 0 full, byte-level BPE tokenizer.json
  gpt2     learned positions, Conv1D layout, byte-level BPE tokenizer.json
BERT and RoBERTa read ``TEXTS`` (English: their vocabularies are hand-written); the others read
``MULTILINGUAL_TEXTS``, and their tokenizers are trained on ``CORPUS`` so that SentencePiece and
byte-level BPE must agree with transformers on CJK, Hangul, Devanagari, Arabic and Cyrillic too.
Weights are not transformers' initialisation (std 0.02 would make attention almost uniform and hide bugs
in it) but drawn from ``np.random.default_rng(seed)``: matrices N(0, 0.3^2), biases N(0, 0.1^2), norm
scales 1 + N(0, 0.1^2).

How to run (from the repository root, with the torch extra, which the test suite itself never needs):

    pip install -e ".[torch]"          # torch 2.13.0 (CPU) + transformers<5 (+ sentencepiece, installed)
    python scripts/make_torch_fixtures.py            # every family
    python scripts/make_torch_fixtures.py --only bert,qwen2

Determinism: re-running with the same torch/transformers versions on the same machine rewrites identical
bytes (checked with sha256sum on torch 2.13.0+cpu, transformers 4.57.6, tokenizers 0.22, sentencepiece
0.2). The weights do not depend on torch at all (NumPy generator); the tokenizers' trainers are run
single-threaded; the reference outputs are torch's float32 CPU arithmetic, so another version or CPU may
change their last bits (~1e-7), far inside the tests' 2e-5 tolerance. Each family is built in a temporary
directory and swapped in whole.

To add a family: write ``make_<family>(folder, seed)`` that saves a tiny checkpoint and its tokenizer into
``folder`` and returns the model in eval mode, and register it in ``FAMILIES`` with its seed, texts and
kind (``encoder``: one padded batch; ``decoder``: per text).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUT_DIR = REPO / "tests" / "fixtures"

# Texts chosen to exercise the tokenizers and the padding: lowercasing, word pieces, punctuation, an
# accent (stripped by BERT's lowercasing normaliser, bytes for byte-level BPE), an out-of-vocabulary word,
# a one-word text and the empty text (only special tokens), all padded to the longest text.
TEXTS = [
    "The cat sat on the mat.",
    "a dog ran",
    "The dogs ran fast, fast, fast and slow!",
    "cat",
    "Café zebra?",
    "",
]

# Multilingual on purpose: the SentencePiece and byte-level tokenizers must agree with transformers on
# CJK, Hangul, Devanagari, Arabic, Cyrillic and accented Latin, not only on ASCII.
MULTILINGUAL_TEXTS = [
    "The cat sat on the mat.",
    "a dog ran",
    "Le chat est assis sur le tapis, très content!",
    "我喜欢猫。他喜欢狗。",
    "私は猫が好きです。",
    "나는 고양이를 좋아한다.",
    "मुझे बिल्लियाँ पसंद हैं।",
    "أحب القطط كثيرا.",
    "Кошка сидит на ковре.",
    "cat",
]
# Training text for the tiny tokenizers (the texts themselves plus a little more of each script).
CORPUS = MULTILINGUAL_TEXTS + [
    "The dogs ran fast, fast, fast and slow! Der Hund läuft schnell über die Straße.",
    "猫は窓の外を見ている。犬は庭で遊んでいる。今日はいい天気ですね。",
    "我们今天去公园散步。天气很好，猫在睡觉。",
    "오늘은 날씨가 좋다. 고양이는 잠을 잔다. 개는 공원에서 논다.",
    "वह रोज़ सुबह पार्क में टहलता है। आज मौसम अच्छा है।",
    "يذهب الكلب إلى الحديقة كل صباح. الطقس جميل اليوم.",
    "Собака бежит в парк каждое утро. Сегодня хорошая погода.",
    "Les chiens courent vite dans le parc; le temps est beau aujourd'hui.",
]
# hidden 32 / 4 heads / MLP 64: divisible by the `model=2` mesh axis the tests shard over.
COMMON = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
              hidden_act="gelu")

BERT_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "sat", "on", "mat", "dog",
              "ran", "fast", "slow", "and", "cafe", "##s", "##ed", ".", ",", "!", "?", "c", "##a", "##f",
              "##e", "z", "##b"]
ROBERTA_WORDS = ["the", "Ġthe", "The", "Ġcat", "cat", "Ġsat", "Ġon", "Ġmat", "Ġdog", "Ġran", "Ġfast",
                 "Ġand", "Ġslow", "Ġa", "a"]


def _randomise(model, seed: int) -> None:
    """Overwrite every parameter from ``np.random.default_rng(seed)`` (``named_parameters`` order)."""
    import torch

    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            shape = tuple(param.shape)
            if "norm" in name.lower() or ".ln_" in name or name.startswith("ln_"):
                values = (1.0 + 0.1 * rng.standard_normal(shape)) if name.endswith("weight") else (
                    0.1 * rng.standard_normal(shape))
            elif name.endswith("bias"):
                values = 0.1 * rng.standard_normal(shape)
            else:
                values = 0.3 * rng.standard_normal(shape)
            param.copy_(torch.from_numpy(values.astype(np.float32)))


def make_bert(folder: Path, seed: int):
    """BERT with a WordPiece ``vocab.txt`` (no tokenizer.json: covers our vocab.txt loading path)."""
    import transformers

    folder.mkdir(parents=True)
    (folder / "vocab.txt").write_text("\n".join(BERT_VOCAB) + "\n", encoding="utf-8")
    tokenizer = transformers.BertTokenizer(str(folder / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(folder)  # slow tokenizer: vocab.txt, tokenizer_config.json, special tokens
    config = transformers.BertConfig(vocab_size=len(BERT_VOCAB), max_position_embeddings=40,
                                     pad_token_id=0, **COMMON)
    model = transformers.BertModel(config, add_pooling_layer=False).eval()
    _randomise(model, seed)
    model.save_pretrained(folder, safe_serialization=True)
    return model


def _handwritten_byte_level_bpe(words: list[str]) -> tuple[dict[str, int], list[str]]:
    """RoBERTa-style vocabulary (specials, the 256 byte symbols, one token per merge) and merges that
    build each of ``words`` left to right: hand-written, so no trainer's tie-breaking is involved."""
    from transformers.models.gpt2.tokenization_gpt2 import bytes_to_unicode

    vocab = {token: i for i, token in enumerate(["<s>", "<pad>", "</s>", "<unk>"])}
    for symbol in bytes_to_unicode().values():
        vocab.setdefault(symbol, len(vocab))
    merges = []
    for word in words:
        for end in range(2, len(word) + 1):
            left, right = word[:end - 1], word[end - 1]
            if word[:end] not in vocab:
                merges.append(f"{left} {right}")
                vocab[word[:end]] = len(vocab)
    vocab["<mask>"] = len(vocab)
    return vocab, merges


def make_roberta(folder: Path, seed: int):
    """RoBERTa with a byte-level BPE ``tokenizer.json`` (pad id 1, positions offset by 2)."""
    import transformers

    folder.mkdir(parents=True)
    vocab, merges = _handwritten_byte_level_bpe(ROBERTA_WORDS)
    source = folder / "source"
    source.mkdir()
    (source / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (source / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    tokenizer = transformers.RobertaTokenizerFast(str(source / "vocab.json"), str(source / "merges.txt"))
    shutil.rmtree(source)
    tokenizer.save_pretrained(folder)  # tokenizer.json, vocab.json, merges.txt, tokenizer_config.json
    config = transformers.RobertaConfig(vocab_size=len(vocab), max_position_embeddings=42, type_vocab_size=1,
                                        pad_token_id=1, bos_token_id=0, eos_token_id=2, **COMMON)
    model = transformers.RobertaModel(config, add_pooling_layer=False).eval()
    _randomise(model, seed)
    model.save_pretrained(folder, safe_serialization=True)
    return model


def _train_sentencepiece(path: Path, model_type: str, vocab_size: int, coverage: float, **options) -> None:
    import sentencepiece as spm

    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS), model_writer=buffer, vocab_size=vocab_size, model_type=model_type,
        character_coverage=coverage, num_threads=1, hard_vocab_limit=False, minloglevel=2, **options)
    path.write_bytes(buffer.getvalue())


def _trained_byte_level_bpe(folder: Path, specials: list[str], vocab_size: int) -> tuple[Path, Path]:
    """vocab.json + merges.txt of a byte-level BPE trained on ``CORPUS`` (deterministic trainer)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(CORPUS, trainer)
    source = folder / "source"
    source.mkdir()
    vocab, merges = tokenizer.model.save(str(source))
    return Path(vocab), Path(merges)


def make_llama(folder: Path, seed: int):
    import transformers

    folder.mkdir(parents=True)
    _train_sentencepiece(folder / "tokenizer.model", "bpe", 600, 0.98, byte_fallback=True, unk_id=0, bos_id=1,
                         eos_id=2, pad_id=-1)
    tokenizer = transformers.LlamaTokenizer(str(folder / "tokenizer.model"), legacy=True)
    tokenizer.save_pretrained(folder)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, rope_theta=500000.0,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 256},
        tie_word_embeddings=False, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)
    return _save(transformers.LlamaForCausalLM(config), folder, seed)


def make_mistral(folder: Path, seed: int):
    import transformers

    folder.mkdir(parents=True)
    _train_sentencepiece(folder / "tokenizer.model", "bpe", 600, 0.98, byte_fallback=True, unk_id=0, bos_id=1,
                         eos_id=2, pad_id=-1)
    tokenizer = transformers.LlamaTokenizer(str(folder / "tokenizer.model"), legacy=False)
    tokenizer.save_pretrained(folder)
    config = transformers.MistralConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, head_dim=16, max_position_embeddings=128,
        sliding_window=4, rope_theta=10000.0, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
    return _save(transformers.MistralForCausalLM(config), folder, seed)


def make_qwen2(folder: Path, seed: int):
    import transformers

    folder.mkdir(parents=True)
    vocab, merges = _trained_byte_level_bpe(folder, ["<|endoftext|>"], 500)
    tokenizer = transformers.Qwen2TokenizerFast(vocab_file=str(vocab), merges_file=str(merges))
    shutil.rmtree(vocab.parent)
    tokenizer.save_pretrained(folder)
    config = transformers.Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=128, rope_theta=1000000.0,
        tie_word_embeddings=True, use_sliding_window=False)
    return _save(transformers.Qwen2ForCausalLM(config), folder, seed)


def make_qwen3(folder: Path, seed: int):
    import transformers

    folder.mkdir(parents=True)
    vocab, merges = _trained_byte_level_bpe(folder, ["<|endoftext|>"], 500)
    tokenizer = transformers.Qwen2TokenizerFast(vocab_file=str(vocab), merges_file=str(merges))
    shutil.rmtree(vocab.parent)
    tokenizer.save_pretrained(folder)
    config = transformers.Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=128,
        rope_theta=1000000.0, attention_bias=True, use_sliding_window=True, sliding_window=3,
        max_window_layers=1, tie_word_embeddings=True)
    assert config.layer_types == ["full_attention", "sliding_attention"]
    return _save(transformers.Qwen3ForCausalLM(config), folder, seed)


def make_gpt2(folder: Path, seed: int):
    import transformers

    folder.mkdir(parents=True)
    vocab, merges = _trained_byte_level_bpe(folder, ["<|endoftext|>"], 500)
    tokenizer = transformers.GPT2TokenizerFast(vocab_file=str(vocab), merges_file=str(merges))
    shutil.rmtree(vocab.parent)
    tokenizer.save_pretrained(folder)
    config = transformers.GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=4,
                                     n_positions=64, bos_token_id=0, eos_token_id=0)
    return _save(transformers.GPT2Model(config), folder, seed)


def make_xlmr(folder: Path, seed: int):
    import transformers

    folder.mkdir(parents=True)
    _train_sentencepiece(folder / "sentencepiece.bpe.model", "unigram", 600, 1.0)
    tokenizer = transformers.XLMRobertaTokenizer(str(folder / "sentencepiece.bpe.model"))
    tokenizer.save_pretrained(folder)  # slow tokenizer only: no tokenizer.json
    fast = transformers.XLMRobertaTokenizerFast.from_pretrained(folder, from_slow=True)
    slow_ids = [tokenizer(text)["input_ids"] for text in MULTILINGUAL_TEXTS]
    assert [fast(text)["input_ids"] for text in MULTILINGUAL_TEXTS] == slow_ids, \
        "slow and fast XLM-R tokenizers disagree on the fixture texts"
    config = transformers.XLMRobertaConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=66, type_vocab_size=1, pad_token_id=1,
        bos_token_id=0, eos_token_id=2)
    model = transformers.XLMRobertaModel(config, add_pooling_layer=False)
    return _save(model, folder, seed)


def _save(model, folder: Path, seed: int):
    model = model.eval()
    _randomise(model, seed)
    model.save_pretrained(folder, safe_serialization=True)
    return model


@dataclasses.dataclass(frozen=True)
class Family:
    """How to build one fixture: ``make(folder, seed)`` saves the checkpoint and returns the model;
    ``kind`` picks the reference (``encoder``: one right-padded batch; ``decoder``: per text);
    ``fast_tokenizer``: which transformers tokenizer gives the reference ids (the slow SentencePiece
    ones for XLM-R, Llama and Mistral, whose files carry no tokenizer.json)."""

    make: Callable
    seed: int
    texts: list[str]
    kind: str
    fast_tokenizer: bool = True


FAMILIES = {
    "bert": Family(make_bert, 0, TEXTS, "encoder"),
    "roberta": Family(make_roberta, 1, TEXTS, "encoder"),
    "xlmr": Family(make_xlmr, 14, MULTILINGUAL_TEXTS, "encoder", fast_tokenizer=False),
    "llama": Family(make_llama, 10, MULTILINGUAL_TEXTS, "decoder", fast_tokenizer=False),
    "mistral": Family(make_mistral, 11, MULTILINGUAL_TEXTS, "decoder", fast_tokenizer=False),
    "qwen2": Family(make_qwen2, 12, MULTILINGUAL_TEXTS, "decoder"),
    "qwen3": Family(make_qwen3, 15, MULTILINGUAL_TEXTS, "decoder"),
    "gpt2": Family(make_gpt2, 13, MULTILINGUAL_TEXTS, "decoder"),
}
POOLINGS = {"encoder": ("cls", "mean"), "decoder": ("last", "mean")}
REFERENCE = {"encoder": "one right-padded batch", "decoder": "per text, no padding"}


def _hidden(model, ids, mask, positions=None):
    import torch

    kwargs = {} if positions is None else {"position_ids": positions}
    with torch.inference_mode():
        return model(input_ids=ids, attention_mask=mask, **kwargs).last_hidden_state


def _encoder_reference(model, tokenizer, texts) -> dict:
    """One right-padded batch through ``model``: ids, mask, last hidden states, mean and CLS pooling."""
    import torch

    batch = tokenizer(texts, padding=True, return_tensors="pt")
    hidden = _hidden(model, batch["input_ids"], batch["attention_mask"])
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    normalize = torch.nn.functional.normalize
    return {"input_ids": batch["input_ids"].to(torch.int32), "attention_mask": batch["attention_mask"].to(
        torch.int32), "last_hidden_state": hidden, "mean": normalize(mean, dim=-1),
        "cls": normalize(hidden[:, 0], dim=-1)}


def _decoder_reference(model, tokenizer, texts) -> dict:
    """Per-text, padding-free last hidden states pooled; checks padded batches (explicit positions) agree."""
    import torch

    base = getattr(model, "model", model)  # *ForCausalLM -> its decoder stack
    encoded = [tokenizer(text)["input_ids"] for text in texts]
    last, mean = [], []
    for ids in encoded:
        ids = torch.tensor([ids])
        hidden = _hidden(base, ids, torch.ones_like(ids))[0]
        last.append(hidden[-1])
        mean.append(hidden.mean(0))
    length = max(map(len, encoded))
    for side in ("left", "right"):
        ids = torch.zeros((len(encoded), length), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, seq in enumerate(encoded):
            cols = slice(length - len(seq), length) if side == "left" else slice(0, len(seq))
            ids[row, cols] = torch.tensor(seq)
            mask[row, cols] = 1
        positions = (mask.cumsum(1) - 1).clamp(min=0)
        hidden = _hidden(base, ids, mask, positions)
        for row, seq in enumerate(encoded):
            cols = slice(length - len(seq), length) if side == "left" else slice(0, len(seq))
            assert torch.allclose(hidden[row, cols][-1], last[row], atol=1e-5), (side, row)
            assert torch.allclose(hidden[row, cols].mean(0), mean[row], atol=1e-5), (side, row)
    ids = np.zeros((len(encoded), length), np.int32)
    mask = np.zeros_like(ids)
    for row, seq in enumerate(encoded):
        ids[row, :len(seq)] = seq
        mask[row, :len(seq)] = 1
    normalize = torch.nn.functional.normalize
    return {"input_ids": ids, "attention_mask": mask, "last": normalize(torch.stack(last), dim=-1),
            "mean": normalize(torch.stack(mean), dim=-1)}


def write_reference(model_dir: Path, out: Path, model, name: str) -> None:
    """Run the family's texts through transformers' own tokenizer (from ``model_dir``) and ``model``."""
    import torch
    import transformers

    family = FAMILIES[name]
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir, use_fast=family.fast_tokenizer)
    reference = _encoder_reference if family.kind == "encoder" else _decoder_reference
    arrays = {key: np.asarray(value) for key, value in reference(model, tokenizer, family.texts).items()}
    out.mkdir(parents=True)
    for key, array in arrays.items():
        np.save(out / f"{key}.npy", array)
    meta = {
        "family": name, "seed": family.seed, "texts": family.texts, "poolings": sorted(POOLINGS[family.kind]),
        "tokenizer": type(tokenizer).__name__, "model": type(model).__name__,
        "torch": torch.__version__, "transformers": transformers.__version__,
        "written_by": "scripts/make_torch_fixtures.py", "reference": REFERENCE[family.kind],
        "arrays": {key: f"{array.dtype.name} {list(array.shape)}" for key, array in arrays.items()},
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def make_family(name: str, out_dir: Path) -> Path:
    """Build ``out_dir/<name>`` in a temporary sibling, then replace the old one whole."""
    import torch

    torch.use_deterministic_algorithms(True)
    final = out_dir / name
    staging = out_dir / f".{name}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        model = FAMILIES[name].make(staging / "model", FAMILIES[name].seed)
        write_reference(staging / "model", staging / "reference", model, name)
        shutil.rmtree(final, ignore_errors=True)
        staging.rename(final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=",".join(FAMILIES),
                        help=f"comma-separated families (default: all of {', '.join(FAMILIES)})")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="fixture root (default: tests/fixtures)")
    args = parser.parse_args(argv)
    families = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        parser.error(f"--only: unknown families {unknown}; known: {', '.join(FAMILIES)}")
    try:
        import sentencepiece  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as error:
        print(f"error: {error.name} is not installed; run `pip install -e \".[torch]\"` first",
              file=sys.stderr)
        return 2
    for name in families:
        folder = make_family(name, args.out)
        size = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
        print(f"wrote {folder} ({size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
