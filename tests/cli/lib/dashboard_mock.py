#!/usr/bin/python3
"""A stand-in for the driver's dashboard server, for tests/cli/dashboard_page_cli.sh: serves the page at
/ and fixture JSON for /api/state, /api/metrics, /api/logs and /api/stacks, in the shapes the C++ server
returns. The first /api/state answer is 0.3 s late, so the page gets metrics before it knows the
pipeline. Each /api/state answer finishes one more step (up to MAX_STEPS), so a page that polls shows
progress. Binds port 0 and writes the port it got to PORT_FILE.

Usage: dashboard_mock.py PAGE PORT_FILE [--broken]
  --broken: /api/state answers HTTP 500 and /api/metrics answers JSON cut short (the page must say so in #error).

Strings a page must not interpret as HTML (exp_name, a log line, stacks) carry markup that would load
/injected.png if it did; that request is answered 404, which the checker reports as a failed load.
"""
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_STEPS = 40
START = 1764950000.0
INJECT = '<img src="injected.png">'
WORKERS = [
    # name, cluster, rank, node, devices, pid, alive
    ("actor_train-0", "actor_train", 0, 0, "cpu:0", 4242, True),
    ("actor_train-1", "actor_train", 1, 0, "cpu:1", 4243, True),
    ("actor_infer-0", "actor_infer", 0, 0, "cpu:2", 4250, True),
    ("reference-0", "reference", 0, 0, "cpu:3", 4260, False),
]

lock = threading.Lock()
state_requests = 0


def finished_steps():
    return min(MAX_STEPS, 1 + state_requests)


def metrics_row(s):
    return {"step": s, "metrics": {
        "env/FrozenLake/success": min(1.0, 0.1 + 0.05 * s), "val/env/FrozenLake/success": 0.2 + 0.01 * s,
        "critic/score/mean": 0.2 + 0.02 * s, "actor/pg_loss": 0.1 / (1 + s), "time/step_wall": 2.0 + 0.1 * (s % 3),
        "tokens/response_length/mean": 40 - 0.5 * s, "system/step": s, "note": "text is not charted",
        "flag": s % 2 == 0, "gone": None}}


def state():
    done = finished_steps()
    running = done < MAX_STEPS
    workers = []
    for name, cluster, rank, node, devices, pid, alive in WORKERS:
        busy = alive and cluster == "actor_train"
        workers.append({"name": name, "cluster": cluster, "rank": rank, "node": node, "devices": devices,
                        "pid": pid, "alive": alive, "call": "train_step" if busy else None,
                        "call_s": 3.2 + 70 * rank if busy else None,
                        "cpu_percent": 97.5 if alive else None, "rss_mb": 612.1 if alive else None})
    return {
        "run": {"pipeline": "agentic", "exp_name": "frozen_lake " + INJECT, "pid": 123, "started_unix": START,
                "state": "running" if running else "finished", "error": "", "step": done, "start_step": 0,
                "max_steps": MAX_STEPS, "current_step": done if running else None,
                "step_running_s": 1.2 if running else None, "eta_s": 80.0 * (MAX_STEPS - done) / MAX_STEPS,
                "last_step_wall_s": 2.3, "last_step_times": {"rollout": 0.5, "train": 1.2, "overhead": 0.1,
                                                            "model_update": 0.5},
                "hung_envs": [{"group_id": 1, "env_id": 5, "episode_id": 7, "seconds": 3712.4}]},
        "in_flight": [{"cluster": "actor_train", "method": "train_step", "ranks": [0, 1], "running_s": 3.2}]
        if running else [],
        "workers": workers,
        "checkpoints": [{"step": s, "path": f"./output/checkpoint-{s}", "unix": START + 100 * s}
                        for s in range(5, done + 1, 5)],
        "stalls": [{"worker": "actor_train-1 (cluster actor_train, rank 1, node 0, pid 4243)", "cluster": "actor_train",
                    "rank": 1, "pid": 4243, "method": "train_step", "running_s": 130.2, "bound_s": 120.0,
                    "answered": True, "process_state": "S (sleeping)",
                    "stacks": "thread 4243 roll\n  #0 futex_wait " + INJECT + "\n  #1 roll::train_step", "unix": START + 200}],
        "metric_names": sorted(metrics_row(0)["metrics"]),
    }


class Handler(BaseHTTPRequestHandler):
    broken = False
    page = b""

    def answer(self, status, body, ctype="application/json"):
        body = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        global state_requests
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        if url.path == "/":
            return self.answer(200, self.page, "text/html; charset=utf-8")
        if url.path == "/api/state":
            if self.broken:
                return self.answer(500, "internal error: the driver's state is unavailable", "text/plain")
            if state_requests == 0:
                time.sleep(0.3)  # the first metrics answer comes before the first state (the page must cope)
            with lock:
                body = json.dumps(state())
                state_requests += 1
            return self.answer(200, body)
        if url.path == "/api/metrics":
            if self.broken:
                return self.answer(200, '{"rows": [{"step": 0, "metrics": {')
            since = int(q.get("since", ["0"])[0])
            with lock:
                done = finished_steps()
            return self.answer(200, json.dumps({"rows": [metrics_row(s) for s in range(since, done)],
                                                "next": max(since, done)}))
        if url.path == "/api/logs":
            n = int(q.get("lines", ["15"])[0])
            lines = [f"I1205 19:00:{i:02d} step {i} done" for i in range(30)] + ["a line with " + INJECT]
            return self.answer(200, json.dumps({"workers": [
                {"worker": w[0], "path": f"./output/logs/{w[0]}.log", "lines": lines[-n:]} for w in WORKERS]}))
        if url.path == "/api/stacks":
            return self.answer(200, json.dumps({"workers": []}))
        return self.answer(404, "not found", "text/plain")

    def log_message(self, *args):
        pass


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    Handler.broken = "--broken" in sys.argv[1:]
    Handler.page = open(args[0], "rb").read()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(args[1] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(args[1] + ".tmp", args[1])  # the test never reads a half-written port
    server.serve_forever()


if __name__ == "__main__":
    main()
