#!/usr/bin/python3
"""Writes the model directory `roll model init` wrote (Qwen2, safetensors) as a GGUF file for llama.cpp.

    write_gguf.py GGUF_PY_DIR MODEL_DIR OUT.gguf [--as f16|f32]

GGUF_PY_DIR: the gguf-py folder of the llama.cpp tree bench/llama_cpp/compare.sh builds (its writer
needs only numpy). Tensors are copied bit for bit (bf16 stays bf16, fp32 stays fp32), so both
engines run the same weights; the vocabulary is the model's tokenizer.json (byte-level BPE), padded
to the embedding's rows as llama.cpp's own converter pads it.

--as f16 writes the matrices as IEEE half instead (each value rounded to nearest), --as f32 widens
them to fp32 (exactly): on CPUs without bf16 instructions llama.cpp's fastest unquantised type may
be F16 (F16C converts it in one instruction) or, where products are compute-bound, F32, so the
comparison can run them beside BF16. f16 values differ from the bf16 model's by at most half a
unit of f16's last place.
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, sys.argv[1])
import gguf  # noqa: E402

MODEL, OUT = sys.argv[2], sys.argv[3]
AS = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--as" else None
if AS not in (None, "f16", "f32"):
    sys.exit(f"--as {AS}: expected f16 or f32")
cfg = json.load(open(os.path.join(MODEL, "config.json")))
if cfg.get("model_type") != "qwen2":
    sys.exit(f"{MODEL}: model_type {cfg.get('model_type')!r}; this writer handles qwen2 (the 0.5B shape)")


def safetensors(path):
    """name -> (numpy array of the raw elements, GGML type)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
    data = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        raw = data[base + a:base + b]
        if t["dtype"] == "BF16":
            out[name] = (raw.view(np.uint16).reshape(t["shape"]), gguf.GGMLQuantizationType.BF16)
        elif t["dtype"] == "F32":
            out[name] = (raw.view(np.float32).reshape(t["shape"]), gguf.GGMLQuantizationType.F32)
        else:
            sys.exit(f"{path}: tensor {name} has dtype {t['dtype']} (expected BF16 or F32)")
    return out


# HF name pieces -> llama.cpp's qwen2 tensor names.
LAYER = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
         "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
         "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}


def gguf_name(name):
    if name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if name == "model.norm.weight":
        return "output_norm.weight"
    if name == "lm_head.weight":
        return "output.weight"
    parts = name.split(".")  # model.layers.<i>.<module...>.<weight|bias>
    i, module, kind = parts[2], ".".join(parts[3:-1]), parts[-1]
    return f"blk.{i}.{LAYER[module]}.{kind}"


w = gguf.GGUFWriter(OUT, "qwen2")
w.add_name("rollcpp-" + os.path.basename(os.path.normpath(MODEL)))
w.add_context_length(cfg["max_position_embeddings"])
w.add_embedding_length(cfg["hidden_size"])
w.add_block_count(cfg["num_hidden_layers"])
w.add_feed_forward_length(cfg["intermediate_size"])
w.add_head_count(cfg["num_attention_heads"])
w.add_head_count_kv(cfg["num_key_value_heads"])
w.add_rope_freq_base(cfg["rope_theta"])
w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
tensors = safetensors(os.path.join(MODEL, "model.safetensors"))
if AS:
    for name, (array, kind) in list(tensors.items()):
        if array.ndim == 2:
            wide = (array.astype(np.uint32) << 16).view(np.float32) if kind == gguf.GGMLQuantizationType.BF16 else array
            tensors[name] = (wide.astype(np.float16), gguf.GGMLQuantizationType.F16) if AS == "f16" \
                else (wide, gguf.GGMLQuantizationType.F32)
    file_type = gguf.LlamaFileType.MOSTLY_F16 if AS == "f16" else gguf.LlamaFileType.ALL_F32
elif any(t == gguf.GGMLQuantizationType.BF16 for _, t in tensors.values()):
    file_type = gguf.LlamaFileType.MOSTLY_BF16
else:
    file_type = gguf.LlamaFileType.ALL_F32
w.add_file_type(file_type)

vocab = gguf.BpeVocab(gguf.Path(MODEL))
tokens, types = [], []
for text, _, kind in vocab.all_tokens():
    tokens.append(text)
    types.append(kind)
while len(tokens) < cfg["vocab_size"]:
    tokens.append(f"[PAD{len(tokens)}]")
    types.append(gguf.TokenType.UNUSED)
w.add_tokenizer_model("gpt2")
w.add_tokenizer_pre("qwen2")
w.add_token_list(tokens)
w.add_token_types(types)
gguf.SpecialVocab(gguf.Path(MODEL), load_merges=True, n_vocab=len(tokens)).add_to_gguf(w)

for name, (array, kind) in tensors.items():
    # Norm weights are read as fp32 by llama.cpp's CPU kernels; their bf16 values widen exactly.
    if kind == gguf.GGMLQuantizationType.BF16 and array.ndim == 1:
        array = (array.astype(np.uint32) << 16).view(np.float32)
        kind = gguf.GGMLQuantizationType.F32
    w.add_tensor(gguf_name(name), np.ascontiguousarray(array), raw_shape=array.shape, raw_dtype=kind)

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(f"wrote {OUT} ({len(tensors)} tensors, {len(tokens)} tokens)")
