#!/usr/bin/python3
"""Scaled-down CPU runs of ROLL example configs that `roll validate` accepts (tests/e2e/corpus_sample_cli.sh).

    corpus_sample.py ROLL_BINARY CORPUS_DIR WORK_DIR CONFIG...

CONFIG: a path relative to CORPUS_DIR (without .yaml), optionally followed by `@KEY=VALUE` overrides
a user of the file would need on rollcpp (a refused fp16 dtype, say). For each, `roll validate
--platform cuda` must accept the file as it is, or with those overrides; the run is then the same file on CPU with overrides only: a tiny
random model of the file's architecture family, two-sample batches, one step, its roles' devices
packed onto a few CPU ranks (colocated roles stay colocated, a model-parallel train role keeps
tp x pp x cp x ulysses ranks), and data rows generated for each reward domain's tags. The run must
end with exit status 0 and a step-0 metrics line. Prints one JSON line per config.
"""
import json
import os
import subprocess
import sys
import time

import yaml

ROLL, CORPUS, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
CONFIGS = sys.argv[4:]


def run(cmd, log=None, timeout=600):
    with open(log, "w") if log else open(os.devnull, "w") as out:
        return subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, cwd=WORK).returncode


def resolved(config_dir, name, extra):
    p = subprocess.run([ROLL, "validate", "--config_path", config_dir, "--config_name", name, "--platform", "cuda"]
                       + extra,
                       capture_output=True, text=True, cwd=WORK)
    if p.returncode != 0:
        raise SystemExit(f"{name}: roll validate refused it: {p.stderr.strip().splitlines()[-1:]}")
    header, text = p.stdout.split("\n", 1)  # "# FILE (rlvr pipeline), resolved with defaults ..."
    kind = header.split(" pipeline)")[0].rsplit("(", 1)[1]
    return kind, yaml.safe_load(text.split("\n\nplacement:")[0])


def family(name):
    n = (name or "").lower()
    return "qwen3" if "qwen3" in n else "llama" if "llama" in n else "qwen2"


def fold(w):
    """Model-parallel ranks rollcpp keeps as data-parallel ranks for a train role."""
    sc = ((w.get("strategy_args") or {}).get("strategy_config") or {})
    f = 1
    if str((w.get("strategy_args") or {}).get("strategy_name", "")).startswith("megatron"):
        for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size"):
            f *= int(sc.get(k) or 1)
    return f * int(((w.get("model_args") or {}).get("ulysses_size")) or 1)


def device_overrides(c, roles):
    """Each distinct device list of the file becomes one block of CPU ranks, in order."""
    blocks, out = {}, []
    need = {}
    for role, w, trains in roles:
        key = tuple(w["device_mapping"])
        need[key] = max(need.get(key, 1), fold(w) if trains else 1)
    start = 0
    for key in sorted(need, key=lambda k: min(k)):
        blocks[key] = (start, start + need[key])
        start += need[key]
    for role, w, trains in roles:
        a, b = blocks[tuple(w["device_mapping"])]
        out.append(f"{role}.device_mapping=list(range({a},{b}))")
        if trains:
            # GA = the fold, one row per micro-batch: every rank gets one row per optimizer step.
            out += [f"{role}.training_args.per_device_train_batch_size=1",
                    f"{role}.training_args.gradient_accumulation_steps={fold(w)}"]
    out.append(f"num_gpus_per_node={start}")
    return out


def data_rows(c, column, domains):
    """Rows for each reward domain, in the format its reward worker reads."""
    rows = []
    for d, r in domains.items():
        tag = (r.get("tag_included") or [d])[0]
        cls = str(r.get("worker_cls") or "")
        for i in range(4):
            row = {"tag": tag}
            q = f"What is {i} + 2?"
            if "CodeSandbox" in cls:
                q = "Write a function add(a, b) returning a + b."
                row.update({"test_cases": json.dumps([{"input": "1 2\n", "output": "3\n"}]), "case_type": "input"})
                row["ground_truth"] = ""
            elif "GeneralRule" in cls:
                row["ground_truth"] = json.dumps({"func_name": "validate_lowercase"})
            elif "CrossThinkQA" in cls:
                q = "Which letter comes first? A) a B) b"
                row["ground_truth"] = "A"
            else:
                row["ground_truth"] = str(i + 2)
            row[column] = [{"role": "user", "content": q}] if column != "prompt" else q
            rows.append(row)
    return rows


def overrides_for(c, kind):
    tiny = os.path.join(WORK, "models", family(c.get("pretrain")))
    o = [f"pretrain={tiny}", f"reward_pretrain={tiny}", "max_steps=1", "save_steps=1000", "logging_steps=1",
         "eval_steps=0", "track_with=jsonl", "~tracker_kwargs", f"output_dir={WORK}/out",
         f"logging_dir={WORK}/logs", "~checkpoint_config", "rpc_timeout=600"]
    roles = []
    if kind == "sft":
        roles.append(("sft_train", c["sft_train"], True))
        o += [f"sft_train.data_args.file_name=[{WORK}/data/sft.jsonl]", "sequence_length=96"]
        if (c.get("validation") or {}).get("data_args"):
            o.append(f"validation.data_args.file_name=[{WORK}/data/sft.jsonl]")
    else:
        for role in ("actor_train", "actor_infer", "reference", "critic"):
            w = c.get(role) or {}
            if not w.get("device_mapping"):
                continue
            if role == "critic" and c.get("adv_estimator") != "gae":
                continue
            if role == "reference" and not (c.get("enable_reference") or (c.get("init_kl_coef") or 0) > 0
                                             or c.get("use_kl_loss")):
                continue
            roles.append((role, w, role in ("actor_train", "critic")))
        o += ["actor_infer.generating_args.max_new_tokens=16", "actor_infer.generating_args.num_return_sequences=2"]
    for d, r in (c.get("rewards") or {}).items():
        if (r.get("model_args") or {}).get("model_name_or_path"):
            o.append(f"rewards.{d}.model_args.model_name_or_path={tiny}")
        if r.get("device_mapping"):
            roles.append((f"rewards.{d}", r, False))
            o.append(f"rewards.{d}.generating_args.max_new_tokens=8")
        else:
            o.append(f"rewards.{d}.world_size=1")
    o += device_overrides(c, roles)
    if kind == "rlvr":
        o += ["rollout_batch_size=2", "num_return_sequences_in_group=2", "val_batch_size=2", "prompt_length=64",
              "response_length=16", "sequence_length=80", "val_prompt_length=64", "val_sequence_length=80",
              f"actor_train.data_args.file_name=[{WORK}/data/rlvr.jsonl]"]
        if c.get("validation"):
            o += [f"validation.data_args.file_name=[{WORK}/data/rlvr.jsonl]",
                  "validation.generating_args.max_new_tokens=16"]
    if kind == "agentic":
        o += ["sequence_length=512", "max_tokens_per_step=16"]
        for m in ("train_env_manager", "val_env_manager"):
            tags = c[m]["tags"]
            o += [f"{m}.num_env_groups={len(tags)}", f"{m}.group_size=2", f"{m}.max_env_num_per_worker=4",
                  f"{m}.num_groups_partition=[{','.join('1' for _ in tags)}]", f"{m}.generating_args.max_new_tokens=16"]
        o += [f"rollout_batch_size={2 * len(c['train_env_manager']['tags'])}",
              f"val_batch_size={2 * len(c['val_env_manager']['tags'])}", "max_actions_per_traj=2"]
    return o


def main():
    os.makedirs(os.path.join(WORK, "data"), exist_ok=True)
    for fam in ("qwen2", "qwen3", "llama"):
        run([ROLL, "model", "init", "--preset", "tiny", "--arch", fam, "--seed", "1", "--out",
             os.path.join(WORK, "models", fam)])
    failed = 0
    for entry in CONFIGS:
        rel, *extra = entry.split("@")
        config_dir, name = os.path.join(CORPUS, os.path.dirname(rel)), os.path.basename(rel)
        kind, c = resolved(config_dir, name, extra)
        if kind == "rlvr":
            column = (c["actor_train"].get("data_args") or {}).get("messages") or "messages"
            with open(os.path.join(WORK, "data", "rlvr.jsonl"), "w") as f:
                for row in data_rows(c, column, c.get("rewards") or {}):
                    f.write(json.dumps(row) + "\n")
        if kind == "sft":
            da = c["sft_train"].get("data_args") or {}
            with open(os.path.join(WORK, "data", "sft.jsonl"), "w") as f:
                for i in range(8):
                    f.write(json.dumps({c.get("prompt_key") or "instruction": f"Say {i}.",
                                        c.get("response_key") or "output": f"{i}"}) + "\n")
        o = extra + overrides_for(c, kind)
        log = os.path.join(WORK, name + ".log")
        t0 = time.time()
        rc = run([ROLL, kind, "--config_path", config_dir, "--config_name", name, "--platform", "cpu",
                  "--quiet-workers"] + o, log)
        metrics = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(WORK, "out")) for f in fs
                   if f == "metrics.jsonl"]
        stepped = any('"step":0' in open(m).read() for m in metrics)
        ok = rc == 0 and stepped
        failed += not ok
        print(json.dumps({"config": rel, "overrides": extra, "pipeline": kind, "ok": ok, "rc": rc, "step0": stepped,
                          "wall_s": round(time.time() - t0, 1)}), flush=True)
        if not ok:
            with open(log) as f:
                print("".join(f.readlines()[-25:]), file=sys.stderr)
        subprocess.run(["rm", "-rf", os.path.join(WORK, "out"), os.path.join(WORK, "logs")])
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
