#!/usr/bin/python3
"""Reference forward for rollcpp's model tests: a plain PyTorch Qwen2/Qwen3/Llama decoder written
from the Hugging Face definitions, run with Debian's python3-torch (not the pyenv python).

usage: model_forward.py MODEL_DIR INPUTS_JSON OUT_BIN [ADAPTER_DIR]
INPUTS_JSON: {"input_ids": [[...]], "attention_mask": [[...]], "position_ids": [[...]]}
OUT_BIN: raw little-endian float32 logits [B, T, vocab].
ADAPTER_DIR: a PEFT LoRA adapter (adapter_config.json, adapter_model.safetensors) merged into the
weights in float64 with numpy first, as PEFT's merge_and_unload defines it: W + (lora_alpha / r) B A;
the parameters of its modules_to_save replace the base's (a saved copy of one of two tied tensors
leaves the other as it was, since PEFT's copy is a module of its own).
"""
import json
import math
import os
import re
import struct
import sys

import numpy as np
import torch

DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def load_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        raw = data[b:end]
        if e["dtype"] == "BF16":
            u16 = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
            arr = u16.view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=DTYPES[e["dtype"]])
        out[name] = torch.from_numpy(arr.copy()).reshape(e["shape"]).to(torch.float64)
    return out


def load_weights(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        files = sorted(set(json.load(open(index))["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    w = {}
    for f in files:
        w.update(load_safetensors(os.path.join(model_dir, f)))
    return w


def apply_peft_adapter(w, adapter_dir):
    cfg = json.load(open(os.path.join(adapter_dir, "adapter_config.json")))
    assert cfg["peft_type"] == "LORA", cfg["peft_type"]
    assert not cfg.get("use_rslora") and not cfg.get("use_dora") and cfg.get("bias", "none") == "none"
    scale = cfg["lora_alpha"] / cfg["r"]
    targets = cfg["target_modules"]
    tensors = load_safetensors(os.path.join(adapter_dir, "adapter_model.safetensors"))
    prefix, tail_a, tail_b = "base_model.model.", ".lora_A.weight", ".lora_B.weight"
    saved = cfg.get("modules_to_save") or []
    if "lm_head.weight" not in w and any(
        not n.endswith(tail_a) and not n.endswith(tail_b) for n in tensors
    ):
        w["lm_head.weight"] = w["model.embed_tokens.weight"]  # untied before either is replaced
    merged = 0
    for name, t in tensors.items():
        assert name.startswith(prefix), name
        if name.endswith(tail_b):
            continue
        if not name.endswith(tail_a):
            param = name[len(prefix) :]
            module = param.rsplit(".", 1)[0]
            assert any(module == m or module.endswith("." + m) for m in saved), (saved, param)
            assert t.shape == w[param].shape, (param, t.shape, w[param].shape)
            w[param] = t
            continue
        a = t
        module = name[len(prefix) : -len(tail_a)]
        # PEFT's matching: a string is a regex over the whole module name, a list matches name tails.
        if isinstance(targets, str):
            assert re.fullmatch(targets, module), (targets, module)
        else:
            assert any(module == t or module.endswith("." + t) for t in targets), (targets, module)
        b = tensors[prefix + module + tail_b].numpy()
        weight = module + ".weight"
        assert b.shape[0] == w[weight].shape[0] and a.shape[1] == w[weight].shape[1], (module, a.shape, b.shape)
        w[weight] = torch.from_numpy(w[weight].numpy() + scale * (b @ a.numpy()))
        merged += 1
    assert merged > 0, "the adapter adapts nothing"
    return w


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rope(x, pos, theta):
    d = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    f = pos.to(torch.float64)[..., None] * inv  # [B, T, d/2]
    emb = torch.cat([f, f], -1)[:, None, :, :]  # [B, 1, T, d]
    cos, sin = emb.cos(), emb.sin()
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def forward(cfg, w, ids, mask, pos):
    B, T = ids.shape
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", H)
    D = cfg.get("head_dim", cfg["hidden_size"] // H)
    eps = cfg.get("rms_norm_eps", 1e-6)
    theta = cfg.get("rope_theta", 10000.0)
    qwen3 = cfg["model_type"] == "qwen3"
    x = w["model.embed_tokens.weight"][ids]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    allowed = causal[None, None] & mask.bool()[:, None, None, :]
    neg = torch.full((), -1e30, dtype=torch.float64)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."

        def lin(t, name):
            y = t @ w[p + name + ".weight"].T
            if p + name + ".bias" in w:
                y = y + w[p + name + ".bias"]
            return y

        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = lin(h, "self_attn.q_proj").view(B, T, H, D)
        k = lin(h, "self_attn.k_proj").view(B, T, KV, D)
        v = lin(h, "self_attn.v_proj").view(B, T, KV, D)
        if qwen3:
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        q, k = rope(q, pos, theta), rope(k, pos, theta)
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        s = torch.where(allowed, s, neg)
        a = torch.softmax(s, -1) @ v
        x = x + a.transpose(1, 2).reshape(B, T, H * D) @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = h @ w[p + "mlp.gate_proj.weight"].T
        u = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["lm_head.weight"] if "lm_head.weight" in w else w["model.embed_tokens.weight"]
    return x @ head.T


def main():
    model_dir, inputs, out = sys.argv[1:4]
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    w = load_weights(model_dir)
    if len(sys.argv) > 4:
        w = apply_peft_adapter(w, sys.argv[4])
    inp = json.load(open(inputs))
    ids = torch.tensor(inp["input_ids"], dtype=torch.long)
    mask = torch.tensor(inp["attention_mask"], dtype=torch.long)
    pos = torch.tensor(inp["position_ids"], dtype=torch.long)
    with torch.no_grad():
        logits = forward(cfg, w, ids, mask, pos).to(torch.float32).contiguous()
    with open(out, "wb") as f:
        f.write(logits.numpy().tobytes())


if __name__ == "__main__":
    main()
