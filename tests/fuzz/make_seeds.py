#!/usr/bin/env python3
"""Writes the fuzz targets' seed inputs (tests/fuzz/corpus/<target>/seed-*) from the project's own
files and from the formats' layouts: a seed is a valid input the parser accepts, which libFuzzer
then mutates. Run from the repository root with Debian's python3; the output is committed.
Parts of a multi-file input are joined by the separator line "\\n--\\n" (fuzz_target.h)."""
import glob
import json
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
SEP = b"\n--\n"


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


def safetensors(tensors, metadata=None):
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def msgpack(v):
    """The subset of msgpack nlohmann::json::to_msgpack writes for RPC headers."""
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        return b"\xcf" + struct.pack(">Q", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        return (bytes([0xA0 | len(b)]) if len(b) < 32 else b"\xd9" + bytes([len(b)])) + b
    if isinstance(v, list):
        return bytes([0x90 | len(v)]) + b"".join(msgpack(x) for x in v)
    if isinstance(v, dict):
        return bytes([0x80 | len(v)]) + b"".join(msgpack(k) + msgpack(x) for k, x in v.items())
    raise TypeError(v)


def batch_header(batch_size, tensors, columns, meta):
    """core/batch_io.h layout; dtype codes are batch_io.cpp's own (Long 5, Float 8)."""
    out = b"RLBATCH\0" + struct.pack("<I", 1) + struct.pack("<q", batch_size) + struct.pack("<I", len(tensors))
    for name, dtype, dims, nbytes in tensors:
        out += struct.pack("<I", len(name)) + name.encode() + bytes([dtype, len(dims)])
        out += b"".join(struct.pack("<q", d) for d in dims) + struct.pack("<Q", nbytes)
    blob = msgpack({"columns": columns, "meta": meta})
    return out + struct.pack("<Q", len(blob)) + blob


def main():
    f32 = lambda *xs: struct.pack("<%df" % len(xs), *xs)
    # safetensors_file
    write("safetensors_file", "f32_bf16_i64", safetensors({
        "w": ("F32", [2, 3], f32(0, 1, 2, 3, 4, 5)),
        "h": ("BF16", [2], b"\x80\x3f\x00\x40"),
        "ids": ("I64", [2], struct.pack("<2q", 7, -1)),
        "s": ("F32", [], f32(1.5))}, {"format": "pt"}))
    write("safetensors_file", "empty_tensor", safetensors({"e": ("F16", [0, 4], b"")}))
    # safetensors_index (the shard beside it holds w and b)
    write("safetensors_index", "index", json.dumps({
        "metadata": {"total_size": 36},
        "weight_map": {"w": "model-00001-of-00001.safetensors", "b": "model-00001-of-00001.safetensors"}}))
    # hf_config: config.json, then generation_config.json
    qwen = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512,
            "max_position_embeddings": 512, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6,
            "tie_word_embeddings": True, "torch_dtype": "bfloat16", "hidden_act": "silu"}
    gen = {"bos_token_id": 1, "eos_token_id": [2, 3], "pad_token_id": 0, "temperature": 0.7, "top_p": 0.8,
           "top_k": 20, "repetition_penalty": 1.05, "do_sample": True}
    write("hf_config", "qwen2", json.dumps(qwen).encode() + SEP + json.dumps(gen).encode())
    qwen3 = dict(qwen, architectures=["Qwen3ForCausalLM"], model_type="qwen3", head_dim=32, tie_word_embeddings=False)
    write("hf_config", "qwen3", json.dumps(qwen3).encode() + SEP + b"{}")
    # tokenizer: a byte-level BPE as Qwen's tokenizer.json lays it out, then its tokenizer_config.json, then text
    byte_chars = [c for c in range(ord("!"), ord("~") + 1)] + [c for c in range(0xA1, 0xAD)] + [c for c in range(0xAE, 0x100)]
    table, n = {}, 0
    for b in range(256):
        if b in byte_chars:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + n)
            n += 1
    vocab = {table[b]: b for b in range(256)}
    vocab.update({"he": 256, "ll": 257, "hell": 258, "hello": 259, "\u0120w": 260})
    pattern = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
               "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
    tok = {"version": "1.0",
           "added_tokens": [{"id": 300, "content": "<|im_end|>", "special": True, "normalized": False, "lstrip": False,
                             "rstrip": False, "single_word": False}],
           "normalizer": {"type": "NFC"},
           "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
               {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
               {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
           "post_processor": {"type": "ByteLevel"}, "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "vocab": vocab, "merges": ["h e", "l l", "he ll", "hell o"]}}
    config = json.loads(read("third_party/assets/qwen3/tokenizer_config.json"))
    config["added_tokens_decoder"] = {"300": {"content": "<|im_end|>", "special": True}}
    config["eos_token"] = "<|im_end|>"
    config["pad_token"] = "<|im_end|>"
    write("tokenizer", "byte_bpe", json.dumps(tok).encode() + SEP + json.dumps(config).encode() + SEP +
          "hello world, héllo 12345<|im_end|>\n".encode())
    # chat_template: the Qwen3 template, and a few of the model templates llama.cpp's tests carry
    write("chat_template", "qwen3", json.loads(read("third_party/assets/qwen3/tokenizer_config.json"))["chat_template"])
    for name in ["Mistral-Small-3.2-24B-Instruct-2506.jinja", "meta-llama-Llama-3.3-70B-Instruct.jinja",
                 "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "GLM-4.6.jinja"]:
        path = "third_party/assets/llama.cpp/templates/" + name
        if os.path.exists(os.path.join(ROOT, path)):
            write("chat_template", name.replace(".jinja", ""), read(path))
    # yaml_config: the CPU examples, and one with a defaults include (part 2 is base.yaml)
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "cpu", "*.yaml"))):
        text = read(path)
        if b"../config/traj_envs@_here_" in text:  # its include becomes part 2
            text = text.replace(b"../config/traj_envs@_here_", b"base@_here_") + SEP + read("examples/config/traj_envs.yaml")
        write("yaml_config", os.path.basename(path).replace(".yaml", ""), text)
    write("yaml_config", "defaults", read("examples/cpu/rlvr_arithmetic.yaml").replace(b"seed: 42\n", b"defaults:\n  - base\n  - _self_\n")
          + SEP + b"seed: 7\nsystem_envs:\n  ROLL_X: ${exp_name}\n")
    # math_answer: a response (part 1) and its prompt (part 2)
    cases = [json.loads(line) for line in read("tests/data/math_cases.jsonl").splitlines() if line.strip()]
    for i, case in enumerate(cases[::9]):
        response = "<think>Let me compute.</think> The answer is $\\boxed{%s}$." % case["answer"]
        write("math_answer", "case%02d" % i, response.encode() + SEP + b"Solve it. Put the answer in \\boxed{}.")
    # prompt_data: JSONL and JSON array rows as ROLL's data files hold them
    rows = [{"id": "1", "source": "math", "messages": [{"role": "user", "content": "1+1?"}], "ground_truth": "2",
             "tag": "arith"}, {"prompt": "2+2?", "ground_truth": "4", "domain": "math_rule"}]
    write("prompt_data", "jsonl", "".join(json.dumps(r) + "\n" for r in rows) + "\n{broken\n")
    write("prompt_data", "array", json.dumps(rows, indent=1))
    # checkpoint_state: worker_state_pipeline.json, then a cluster checkpoint's manifest.json
    state = {"step": 3, "exp_name": "rlvr-arithmetic-cpu", "log_history": [{"step": 3, "critic/score/mean": 0.5}],
             "kv": {"dataset_epoch": 0, "dataset_position": 24}}
    manifest = {"format": "rollcpp-checkpoint-1", "step": 3, "world_size": 1, "files": {"model.safetensors": 10}}
    write("checkpoint_state", "step3", json.dumps(state).encode() + SEP + json.dumps(manifest).encode())
    # rpc_message: frames (msgpack header, batch header, tensor bytes)
    call = msgpack({"id": 7, "kind": "call", "method": "generate", "args": {"temperature": 0.5}, "has_batch": False})
    write("rpc_message", "call", call)
    err = msgpack({"id": 8, "kind": "error", "method": "train_step", "args": {}, "has_batch": False,
                   "error": "actor_train-0: out of memory"})
    write("rpc_message", "error", err)
    ok = msgpack({"id": 9, "kind": "ok", "method": "compute_log_probs", "args": {}, "has_batch": True})
    ids = struct.pack("<4q", 1, 2, 3, 4)
    logp = f32(-0.5, -1.0, -0.25, -2.0)
    header = batch_header(2, [("input_ids", 5, [2, 2], 32), ("old_log_probs", 8, [2, 2], 16)],
                          [["domain", ["math", "code"]]], {"global_step": 3})
    write("rpc_message", "batch", ok + SEP + header + SEP + ids + SEP + logp)
    # node_protocol: node info, spawn request, daemon record, host:port
    info = {"rank": 1, "world_size": 2, "address": "10.0.0.2", "worker_id": "w1", "hostname": "n1", "devices": 8,
            "cores": 64, "device_key": "NPU"}
    spawn = {"name": "actor_train-3", "settings": {"ROLL_ROLE": "actor_train", "ROLL_RANK": "3"}}
    daemon = {"role": "head", "pid": 1234, "address": "10.0.0.1:6379", "log_file": "/tmp/rollcpp/head.log",
              "dashboard_port": 8265}
    write("node_protocol", "cluster", json.dumps(info).encode() + SEP + json.dumps(spawn).encode() + SEP +
          json.dumps(daemon).encode() + SEP + b"10.0.0.1:6379")
    # math_verifier_wire: two requests, then a response
    def request(op, form, gold, answer):
        return struct.pack("<IBBII", 0x3151564D, ord(op), form, len(gold), len(answer)) + gold + answer
    write("math_verifier_wire", "requests", request("V", 0, b"\\frac{1}{2}", b"0.5") + request("P", 0, b"", b""))
    write("math_verifier_wire", "response", struct.pack("<IBI", 0x3152564D, 1, 4) + b"pong")


if __name__ == "__main__":
    main()
