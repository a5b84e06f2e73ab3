"""Chaos test of `roll rlvr` and `roll agentic`: runs short pipelines many times, SIGKILLs one process
of the run at a random moment, and checks what a user relies on after a crash:

  * the run ends within DETECT_S seconds of the kill, and its log names the worker that died
    (or the run recovers and finishes: a killed math verifier or sandbox is replaced);
  * no process of the run is left (processes are found by a variable only this run's tree has);
  * no checkpoint-N directory is half-written (pipeline state present and readable, every cluster
    checkpoint of that step with a manifest whose files all have their listed sizes);
  * resuming from the newest complete checkpoint finishes, and every step it runs has the metrics
    of an uninterrupted run of the same config (same_step_metrics.py: 1e-6);
  * a recovered run's metrics equal the uninterrupted run's at every step.

Also, with --stop, a SIGSTOPped worker: the hang watchdog names it, and after SIGCONT the run
finishes with the uninterrupted metrics; with --full-disk (root), output_dir on a small tmpfs: the
run fails naming the file it could not write, leaves no half checkpoint, and resumes elsewhere.

    chaos.py ROLL WORKDIR [--kills N] [--seed S] [--scenarios rlvr,agentic] [--kinds K,...]
             [--max-steps N] [--window LO,HI] [--stop] [--full-disk]

Prints one JSON line per trial and a summary; exit status 1 when any check fails.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = "/usr/bin/python3"
DETECT_S = 20.0  # a worker's death ends the run within this
ORPHAN_GRACE_S = 10.0  # after the driver ends, its processes are gone within this

SCENARIOS = {
    # RLVR on the math + code CPU config, train and infer on separate slots, with a reference
    # (KL loss): driver, actor_train, actor_infer, reference, both reward workers, the math
    # verifier helper, the code sandbox.
    "rlvr": {
        "command": "rlvr",
        "args": ["--config_path", os.path.join(ROOT, "examples", "cpu"), "--config_name", "rlvr_math_code",
                 "--quiet-workers", "pretrain=output/models/tiny", "generate_opt_level=0", "save_steps=1",
                 "rollout_batch_size=4", "num_return_sequences_in_group=4",
                 "eval_steps=0", "use_kl_loss=true", "kl_loss_coef=0.01", "reference.device_mapping=list(range(0,1))", "reference.model_args.dtype=auto",
                 "actor_train.device_mapping=list(range(0,1))", "actor_infer.device_mapping=list(range(1,2))",
                 "actor_train.training_args.learning_rate=0.01"],
        "kinds": ["driver", "actor_train", "actor_infer", "reference", "reward-math_rule", "reward-code_sandbox",
                  "math_verifier", "sandbox"],
    },
    # Agentic FrozenLake: the env workers.
    "agentic": {
        "command": "agentic",
        "args": ["--config_path", os.path.join(ROOT, "examples", "cpu"), "--config_name", "agentic_frozen_lake",
                 "--quiet-workers", "pretrain=output/models/tiny", "generate_opt_level=0",
                 "save_steps=1", "eval_steps=0"],
        "kinds": ["driver", "actor_train", "actor_infer", "train_env", "val_env"],
    },
}
# Processes whose death the run survives by replacing them.
REPLACEABLE = {"math_verifier", "sandbox"}


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


def prepare(roll):
    os.makedirs("data", exist_ok=True)
    run([roll, "data", "arithmetic", "--seed", "3", "--n", "300", "--split", "train", "--out", "data/arith_train.jsonl"])
    run([roll, "data", "code", "--seed", "3", "--n", "100", "--split", "train", "--out", "data/code_train.jsonl"])
    run([roll, "data", "arithmetic", "--seed", "3", "--n", "8", "--split", "test", "--out", "data/arith_test.jsonl"])
    run([roll, "model", "init", "--preset", "tiny", "--seed", "5", "--out", "output/models/tiny"])


def processes_of(tag):
    """{pid: kind} of the live processes of a run: those carrying ROLL_CHAOS_TAG=tag in their
    environment, and their descendants (the code sandbox starts bwrap with an environment of its own)."""
    needle = ("ROLL_CHAOS_TAG=" + tag).encode()
    info = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            if fields[0] in (b"Z", b"X"):
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        info[pid] = (int(fields[1]), needle in env, argv, env)
    found = {}

    def of_run(pid, depth=0):
        if pid not in info or depth > 64:
            return False
        ppid, tagged, _, _ = info[pid]
        return tagged or of_run(ppid, depth + 1)

    for pid, (_, _, argv, env) in info.items():
        if of_run(pid):
            found[pid] = classify(argv, env)
    # What runs inside a jail (setpriv, prlimit, python3) belongs to the sandbox.
    for pid, kind in list(found.items()):
        up = info[pid][0]
        while kind.startswith("other:") and up in found:
            if found[up] == "sandbox":
                found[pid] = "sandbox"
                break
            up = info[up][0]
    return found


def classify(argv, env):
    exe = os.path.basename(argv[0].decode(errors="replace")) if argv and argv[0] else ""
    if exe == "roll-math-verifier":
        return "math_verifier"
    if exe == "bwrap":
        return "sandbox"
    for item in env:
        if item.startswith(b"CLUSTER_NAME="):
            return item.split(b"=", 1)[1].decode()
    if len(argv) > 1 and argv[1].decode(errors="replace") in ("rlvr", "agentic"):
        return "driver"
    return "other:" + exe


def metrics_file(logging_dir):
    for base, _, files in os.walk(logging_dir):
        if "metrics.jsonl" in files:
            return os.path.join(base, "metrics.jsonl")
    return None


def steps_of(path):
    if not path or not os.path.exists(path):
        return []
    return sorted(json.loads(line)["step"] for line in open(path) if line.strip())


def same_metrics(reference, other, steps, ignore=()):
    for s in steps:
        r = subprocess.run([PY, os.path.join(ROOT, "tests", "e2e", "same_step_metrics.py"), reference, other, str(s),
                            *("--ignore=" + i for i in ignore)], capture_output=True, text=True)
        if r.returncode != 0:
            return f"step {s}: {(r.stdout + r.stderr).strip()[:400]}"
    return ""


def checkpoint_problems(output_dir):
    """Every checkpoint-N directory must be complete (the write renames a finished .partial)."""
    problems = []
    if not os.path.isdir(output_dir):
        return problems
    pipeline_steps = []
    for cluster in sorted(os.listdir(output_dir)):
        cdir = os.path.join(output_dir, cluster)
        if not os.path.isdir(cdir):
            continue
        for name in sorted(os.listdir(cdir)):
            if not name.startswith("checkpoint-") or not name[len("checkpoint-"):].isdigit():
                continue
            d = os.path.join(cdir, name)
            if cluster == "pipeline":
                state = os.path.join(d, "pipeline", "worker_state_pipeline.json")
                try:
                    json.load(open(state))
                    pipeline_steps.append(int(name[len("checkpoint-"):]))
                except (OSError, ValueError) as e:
                    problems.append(f"{d}: pipeline state unreadable ({e})")
                continue
            manifest = os.path.join(d, "manifest.json")
            try:
                m = json.load(open(manifest))
            except (OSError, ValueError) as e:
                problems.append(f"{d}: manifest unreadable ({e})")
                continue
            for rel, size in m.get("files", {}).items():
                p = os.path.join(d, rel)
                if not os.path.exists(p) or os.path.getsize(p) != size:
                    problems.append(f"{d}: {rel} missing or not {size} bytes")
    # A pipeline checkpoint is complete only with every training cluster's checkpoint of its step.
    for step in pipeline_steps:
        for cluster in ("actor_train", "critic"):
            cdir = os.path.join(output_dir, cluster)
            if os.path.isdir(cdir) and not os.path.isdir(os.path.join(cdir, f"checkpoint-{step}")):
                problems.append(f"pipeline checkpoint-{step} without {cluster}/checkpoint-{step}")
    return problems


def newest_complete_checkpoint(output_dir):
    d = os.path.join(output_dir, "pipeline")
    if not os.path.isdir(d):
        return None
    steps = [int(n[len("checkpoint-"):]) for n in os.listdir(d)
             if n.startswith("checkpoint-") and n[len("checkpoint-"):].isdigit()
             and os.path.exists(os.path.join(d, n, "pipeline", "worker_state_pipeline.json"))]
    return max(steps) if steps else None


class Trial:
    counter = 0
    max_steps = 3  # of every run (--max-steps)

    def __init__(self, roll, scenario, name, extra_args=(), extra_env=None, output_dir=None):
        Trial.counter += 1
        self.tag = f"chaos-{os.getpid()}-{Trial.counter}"
        self.name = name
        self.output_dir = output_dir or f"./out_{name}"
        self.logging_dir = f"./logs_{name}"  # the tracker's metrics.jsonl goes under it
        self.log = f"{name}.log"
        sc = SCENARIOS[scenario]
        self.cmd = [roll, sc["command"], *sc["args"], f"output_dir={self.output_dir}",
                    f"logging_dir={self.logging_dir}", f"++tracker_kwargs.log_dir={self.logging_dir}",
                    f"exp_name=chaos_{scenario}", f"max_steps={Trial.max_steps}", *extra_args]
        self.env = dict(os.environ, ROLL_CHAOS_TAG=self.tag, **(extra_env or {}))

    def start(self):
        self.started = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, stdout=open(self.log, "w"), stderr=subprocess.STDOUT, env=self.env)
        return self.proc

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def orphans(self):
        deadline = time.monotonic() + ORPHAN_GRACE_S
        while time.monotonic() < deadline:
            left = processes_of(self.tag)
            if not left:
                return {}
            time.sleep(0.2)
        left = processes_of(self.tag)
        for pid in left:  # leave nothing behind for the next trial
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return left

    def tail(self, n=30):
        try:
            return open(self.log, errors="replace").read().splitlines()[-n:]
        except OSError:
            return []


def reference_run(roll, scenario):
    t = Trial(roll, scenario, f"ref_{scenario}")
    t.start()
    rc = t.wait(900)
    if rc != 0:
        sys.exit(f"the uninterrupted {scenario} run failed (rc {rc}):\n" + "\n".join(t.tail()))
    duration = time.monotonic() - t.started
    if t.orphans():
        sys.exit(f"the uninterrupted {scenario} run left processes behind")
    return metrics_file(t.logging_dir), duration


def resume_and_compare(roll, scenario, trial, reference_metrics, max_steps):
    """Resumes trial's output_dir from its newest complete checkpoint; '' when the steps it ran match."""
    ckpt = newest_complete_checkpoint(trial.output_dir)
    trial.resumed_from = ckpt
    resumed = Trial(roll, scenario, trial.name + "_resumed", ["resume_from_checkpoint=true"],
                    output_dir=trial.output_dir)
    resumed.start()
    rc = resumed.wait(900)
    if rc != 0:
        return f"resume from checkpoint-{ckpt} failed (rc {rc}): " + " | ".join(resumed.tail(8))
    if resumed.orphans():
        return "the resumed run left processes behind"
    first = 0 if ckpt is None else ckpt + 1
    metrics = metrics_file(resumed.logging_dir)
    # The tracker also gets the checkpoint's history of earlier steps; the steps run are the rest.
    ran = [s for s in steps_of(metrics) if s >= first]
    if ran != list(range(first, max_steps)):
        return f"resumed from checkpoint-{ckpt}, it logged steps {steps_of(metrics)}, not {first}..{max_steps - 1}"
    if "continuing at step" not in open(resumed.log, errors="replace").read() and ckpt is not None:
        return f"the resumed run does not say it continues after checkpoint-{ckpt}"
    return same_metrics(reference_metrics, metrics, ran)


def kill_trial(roll, scenario, index, kind, rng, duration, reference_metrics, max_steps, window=(0.05, 0.9)):
    t = Trial(roll, scenario, f"{scenario}_{index:03d}_{kind}")
    t.start()
    # A moment in the run, then the first process of the kind alive from then on.
    at = t.started + rng.uniform(*window) * duration
    victim = None
    while t.proc.poll() is None:
        if time.monotonic() >= at:
            # Workers the driver is already stopping end either way: a kill then tests nothing.
            if any("stopping the workers" in line for line in t.tail(1000)):
                break
            live = processes_of(t.tag)
            if kind == "driver":
                victim = t.proc.pid if t.proc.pid in live else None
            else:
                matching = sorted(p for p, k in live.items() if k == kind)
                victim = rng.choice(matching) if matching else None
            if victim is not None:
                try:
                    os.kill(victim, signal.SIGKILL)
                except OSError:
                    victim = None
                if victim is not None:
                    break
        time.sleep(0.02)
    result = {"trial": t.name, "scenario": scenario, "kind": kind, "killed": victim is not None}
    if victim is None:
        t.wait(900)
        t.orphans()
        result["note"] = "no such process alive after the chosen moment, or the run was already stopping its workers; not counted"
        return result
    killed_at = time.monotonic()
    result["at_s"] = round(killed_at - t.started, 2)
    limit = DETECT_S if kind not in REPLACEABLE else 900
    rc = t.wait(limit)
    problems = []
    if rc is None:
        problems.append(f"still running {limit:.0f} s after {kind} was killed (a silent hang)")
        t.proc.kill()
        t.wait(30)
    result["exit"] = rc
    result["ended_after_s"] = round(time.monotonic() - killed_at, 2)
    orphans = t.orphans()
    if orphans:
        problems.append(f"processes left: {sorted(set(orphans.values()))}")
    problems += checkpoint_problems(t.output_dir)
    if rc == 0:
        result["outcome"] = "recovered"
        if kind not in REPLACEABLE:
            problems.append(f"the run finished although {kind} was killed")
        metrics = metrics_file(t.logging_dir)
        if steps_of(metrics) != list(range(max_steps)):
            problems.append(f"recovered run has steps {steps_of(metrics)}")
        else:
            # The replaced helper is counted (math_verify/restarts); nothing else may differ.
            mismatch = same_metrics(reference_metrics, metrics, range(max_steps), ignore=("/restarts",))
            if mismatch:
                problems.append("recovered run's metrics differ: " + mismatch)
    elif rc is not None:
        result["outcome"] = "failed"
        log = "\n".join(t.tail(60))
        if kind != "driver" and kind not in log:
            problems.append(f"the log does not name {kind}: " + " | ".join(t.tail(5)))
        mismatch = resume_and_compare(roll, scenario, t, reference_metrics, max_steps)
        if mismatch:
            problems.append(mismatch)
        result["resumed_from"] = t.resumed_from
    result["problems"] = problems
    return result


def stop_trial(roll, scenario, reference_metrics, max_steps, kind="actor_infer"):
    """SIGSTOP a worker mid-run: the watchdog must name it; after SIGCONT the run finishes unchanged."""
    t = Trial(roll, scenario, f"{scenario}_stop_{kind}", ["--watchdog-min-s", "3", "--watchdog-factor", "2"])
    t.start()
    problems, victim = [], None
    while t.proc.poll() is None and victim is None:
        if "pipeline step 1 start" in open(t.log, errors="replace").read():
            matching = sorted(p for p, k in processes_of(t.tag).items() if k == kind)
            victim = matching[0] if matching else None
        time.sleep(0.05)
    result = {"trial": t.name, "scenario": scenario, "kind": kind, "signal": "SIGSTOP", "stopped": victim is not None}
    if victim is None:
        problems.append(f"no {kind} process to stop during step 1")
    else:
        os.kill(victim, signal.SIGSTOP)
        stopped_at = time.monotonic()
        named = False
        while time.monotonic() - stopped_at < 60 and t.proc.poll() is None:
            text = open(t.log, errors="replace").read()
            if "watchdog" in text.lower() and kind in text and "stopped" in text.lower():
                named = True
                break
            time.sleep(0.2)
        result["named_after_s"] = round(time.monotonic() - stopped_at, 2)
        if not named:
            problems.append(f"the watchdog did not name the stopped {kind} within 60 s")
        os.kill(victim, signal.SIGCONT)
    rc = t.wait(900)
    result["exit"] = rc
    if rc != 0:
        problems.append(f"the run did not finish after SIGCONT (rc {rc}): " + " | ".join(t.tail(5)))
    else:
        mismatch = same_metrics(reference_metrics, metrics_file(t.logging_dir), range(max_steps))
        if mismatch:
            problems.append("metrics differ after a stop: " + mismatch)
    if t.orphans():
        problems.append("processes left")
    result["problems"] = problems
    return result


def full_disk_trial(roll, scenario, reference_metrics, max_steps):
    """output_dir on a tmpfs too small for the second checkpoint."""
    mount = os.path.abspath("small_disk")
    os.makedirs(mount, exist_ok=True)
    result = {"trial": f"{scenario}_full_disk", "scenario": scenario, "kind": "full disk"}
    if os.geteuid() != 0:
        result["note"] = "skipped: mounting a tmpfs needs root"
        result["problems"] = []
        return result
    # A checkpoint of the tiny model (weights and optimizer state) takes ~124 MB: the first fits.
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160m", "tmpfs", mount], check=True)
    problems = []
    try:
        t = Trial(roll, scenario, f"{scenario}_full_disk", output_dir=os.path.join(mount, "out"))
        t.start()
        rc = t.wait(900)
        result["exit"] = rc
        log = "\n".join(t.tail(60))
        if rc == 0:
            problems.append("the run finished on a full disk")
        elif "No space left on device" not in log and "no space" not in log.lower():
            problems.append("the error does not say the disk is full: " + " | ".join(t.tail(5)))
        if t.orphans():
            problems.append("processes left")
        problems += checkpoint_problems(t.output_dir)
        ckpt = newest_complete_checkpoint(t.output_dir)
        result["newest_checkpoint"] = ckpt
        if ckpt is not None:
            # Resume into a directory with room, reading the checkpoint where it is.
            resumed = Trial(roll, scenario, f"{scenario}_full_disk_resumed",
                            [f"resume_from_checkpoint={t.output_dir}/pipeline/checkpoint-{ckpt}"])
            resumed.start()
            rc2 = resumed.wait(900)
            if rc2 != 0:
                problems.append(f"resume after a full disk failed: " + " | ".join(resumed.tail(5)))
            else:
                metrics = metrics_file(resumed.logging_dir)
                mismatch = same_metrics(reference_metrics, metrics, steps_of(metrics))
                if mismatch:
                    problems.append(mismatch)
    finally:
        subprocess.run(["umount", "-l", mount])
    result["problems"] = problems
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("roll")
    ap.add_argument("workdir")
    ap.add_argument("--kills", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scenarios", default="rlvr")
    ap.add_argument("--kinds", default="", help="comma-separated process kinds to kill, in turn (default: every kind "
                                                 "of the scenario)")
    ap.add_argument("--max-steps", type=int, default=3, help="steps of every run")
    ap.add_argument("--window", default="0.05,0.9", help="the kill moment is drawn from this share of the "
                                                        "uninterrupted run's duration (late: the resume starts from a checkpoint)")
    ap.add_argument("--stop", action="store_true")
    ap.add_argument("--full-disk", action="store_true")
    a = ap.parse_args()
    window = tuple(float(x) for x in a.window.split(","))
    if len(window) != 2 or not 0 <= window[0] < window[1] <= 1:
        sys.exit(f"--window: two shares 0 <= lo < hi <= 1, got {a.window}")
    roll = os.path.abspath(a.roll)
    os.chdir(a.workdir)
    prepare(roll)
    rng = random.Random(a.seed)
    scenarios = a.scenarios.split(",")
    max_steps = Trial.max_steps = a.max_steps
    results = []
    for scenario in scenarios:
        reference, duration = reference_run(roll, scenario)
        print(json.dumps({"reference": scenario, "seconds": round(duration, 1)}), flush=True)
        kinds = [k for k in a.kinds.split(",") if k in SCENARIOS[scenario]["kinds"]] if a.kinds else \
            list(SCENARIOS[scenario]["kinds"])
        share = a.kills // len(scenarios) + (1 if scenarios.index(scenario) < a.kills % len(scenarios) else 0)
        done = attempts = 0
        while done < share and attempts < share * 3:
            kind = kinds[attempts % len(kinds)]
            attempts += 1
            r = kill_trial(roll, scenario, attempts, kind, rng, duration, reference, max_steps, window)
            print(json.dumps(r), flush=True)
            results.append(r)
            if not r.get("problems"):  # checkpoints take ~124 MB a step: keep only what failed
                shutil.rmtree(f"./out_{r['trial']}", ignore_errors=True)
            done += r["killed"]
        if a.stop:
            r = stop_trial(roll, scenario, reference, max_steps)
            print(json.dumps(r), flush=True)
            results.append(r)
        if a.full_disk:
            r = full_disk_trial(roll, scenario, reference, max_steps)
            print(json.dumps(r), flush=True)
            results.append(r)
    kills = [r for r in results if r.get("killed")]
    failed = [r for r in results if r.get("problems")]
    by_kind = {}
    for r in kills:
        by_kind[r["kind"]] = by_kind.get(r["kind"], 0) + 1
    print(json.dumps({"kills": len(kills), "by_kind": by_kind,
                      "recovered": sum(r.get("outcome") == "recovered" for r in kills),
                      "resumed": sum("resumed_from" in r for r in kills),
                      "trials_with_problems": len(failed)}), flush=True)
    if failed:
        for r in failed:
            print(f"FAILED {r['trial']}: " + "; ".join(r["problems"]), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
