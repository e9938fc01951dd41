"""Name and layout mapping from Hugging Face decoder checkpoints to ``CausalDecoder`` parameters.

Llama / Mistral / Qwen2 (``nn.Linear``, weight ``(out, in)``): ``q_proj.weight [N*D, H]`` becomes the
kernel ``[H, N, D]``, ``o_proj.weight [H, N*D]`` becomes ``[N, D, H]``, MLP weights are transposed.
GPT-2 (``Conv1D``, weight ``(in, out)``): the fused ``c_attn.weight [H, 3H]`` is cut into the query,
key and value thirds, each reshaped to ``[H, N, D]``; other Conv1D weights keep their layout.
The LM head (``lm_head.weight``, tied or not) and GPT-2's cached mask buffers are not read.
Checkpoints saved from the bare model (``embed_tokens.weight``), from ``*ForCausalLM``
(``model.embed_tokens.weight``, ``transformer.wte.weight``) or by sentence-transformers are accepted.
"""

from __future__ import annotations

from pathlib import Path

from stylebench_jax.encoders.checkpoint import TensorMap, linear_map, resolve_maps, vector_map
from stylebench_jax.encoders.decoder_config import DecoderConfig

PREFIXES = ("", "model.", "transformer.", "0.auto_model.", "auto_model.", "0.auto_model.model.")


def _llama_maps(cfg: DecoderConfig) -> dict:
    hidden, n, k, d = cfg.hidden_size, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    inner = cfg.intermediate_size
    maps = {("decoder", "embed_tokens", "embedding"): linear_map("embed_tokens.weight", (cfg.vocab_size,),
                                                              (hidden,), (0, 1)),
            ("decoder", "norm", "scale"): vector_map("norm.weight", (hidden,))}
    for i in range(cfg.num_layers):
        src, dst = f"layers.{i}.", ("decoder", f"layers_{i}")
        attn = (*dst, "self_attn")
        for proj, heads in (("q_proj", n), ("k_proj", k), ("v_proj", k)):
            # weight (heads*D, H) -> R = (heads, D, H) -> kernel (H, heads, D)
            maps[(*attn, proj, "kernel")] = linear_map(f"{src}self_attn.{proj}.weight", (heads, d), (hidden,),
                                                    (2, 0, 1))
            if cfg.qkv_bias:
                maps[(*attn, proj, "bias")] = vector_map(f"{src}self_attn.{proj}.bias", (heads, d))
        # weight (H, N*D) -> R = (H, N, D) -> kernel (N, D, H)
        maps[(*attn, "o_proj", "kernel")] = linear_map(f"{src}self_attn.o_proj.weight", (hidden,), (n, d),
                                                    (1, 2, 0))
        if cfg.o_bias:
            maps[(*attn, "o_proj", "bias")] = vector_map(f"{src}self_attn.o_proj.bias", (hidden,))
        if cfg.qk_norm:
            for norm in ("q_norm", "k_norm"):
                maps[(*attn, norm, "scale")] = vector_map(f"{src}self_attn.{norm}.weight", (d,))
        for proj, (out, into) in (("gate_proj", (inner, hidden)), ("up_proj", (inner, hidden)),
                                  ("down_proj", (hidden, inner))):
            maps[(*dst, "mlp", proj, "kernel")] = linear_map(f"{src}mlp.{proj}.weight", (out,), (into,),
                                                             (1, 0))
            if cfg.mlp_bias:
                maps[(*dst, "mlp", proj, "bias")] = vector_map(f"{src}mlp.{proj}.bias", (out,))
        for norm in ("input_layernorm", "post_attention_layernorm"):
            maps[(*dst, norm, "scale")] = vector_map(f"{src}{norm}.weight", (hidden,))
    return maps


def _gpt2_maps(cfg: DecoderConfig) -> dict:
    hidden, n, d, inner = cfg.hidden_size, cfg.num_heads, cfg.head_dim, cfg.intermediate_size
    maps = {("decoder", "embed_tokens", "embedding"): linear_map("wte.weight", (cfg.vocab_size,), (hidden,),
                                                              (0, 1)),
            ("decoder", "embed_positions", "embedding"): linear_map(
                "wpe.weight", (cfg.max_position_embeddings,), (hidden,), (0, 1)),
            ("decoder", "norm", "scale"): vector_map("ln_f.weight", (hidden,)),
            ("decoder", "norm", "bias"): vector_map("ln_f.bias", (hidden,))}
    for i in range(cfg.num_layers):
        src, dst = f"h.{i}.", ("decoder", f"layers_{i}")
        attn = (*dst, "self_attn")
        for third, proj in enumerate(("q_proj", "k_proj", "v_proj")):
            cols = (third * hidden, (third + 1) * hidden)
            # Conv1D weight (H, 3H): columns [third] -> R = (H, N, D), already the kernel layout
            maps[(*attn, proj, "kernel")] = TensorMap(f"{src}attn.c_attn.weight", (hidden, 3 * hidden),
                                                      ((hidden,), (n, d)), (0, 1, 2), (None, cols))
            maps[(*attn, proj, "bias")] = TensorMap(f"{src}attn.c_attn.bias", (3 * hidden,), ((n, d),),
                                                    (0, 1), (cols,))
        maps[(*attn, "o_proj", "kernel")] = TensorMap(f"{src}attn.c_proj.weight", (hidden, hidden),
                                                      ((n, d), (hidden,)), (0, 1, 2))
        maps[(*attn, "o_proj", "bias")] = vector_map(f"{src}attn.c_proj.bias", (hidden,))
        maps[(*dst, "mlp", "fc", "kernel")] = linear_map(f"{src}mlp.c_fc.weight", (hidden,), (inner,), (0, 1))
        maps[(*dst, "mlp", "fc", "bias")] = vector_map(f"{src}mlp.c_fc.bias", (inner,))
        maps[(*dst, "mlp", "down_proj", "kernel")] = linear_map(f"{src}mlp.c_proj.weight", (inner,),
                                                                (hidden,), (0, 1))
        maps[(*dst, "mlp", "down_proj", "bias")] = vector_map(f"{src}mlp.c_proj.bias", (hidden,))
        for src_norm, norm in (("ln_1", "input_layernorm"), ("ln_2", "post_attention_layernorm")):
            maps[(*dst, norm, "scale")] = vector_map(f"{src}{src_norm}.weight", (hidden,))
            maps[(*dst, norm, "bias")] = vector_map(f"{src}{src_norm}.bias", (hidden,))
    return maps


def decoder_tensor_maps(cfg: DecoderConfig, available: dict[str, Path], model_dir: Path) -> dict:
    """``{flax parameter path: TensorMap}`` with stored names resolved against ``available``
    (``checkpoint.resolve_maps``: ``UserInputError`` naming the directory and the first missing tensor)."""
    maps = _gpt2_maps(cfg) if cfg.family == "gpt2" else _llama_maps(cfg)
    return resolve_maps(maps, available, PREFIXES, model_dir,
                        f"a {cfg.num_layers}-layer {cfg.model_type} decoder")
