#!/usr/bin/python3
"""Opens a run dashboard (src/roll/monitor/dashboard_page.html as served by the driver) in headless
Chromium and prints one JSON object describing what the page shows after its scripts ran:

  {"step_text": "step 2 / 3", "step": 2, "max_steps": 3, "workers": [...], "charts": [{"metric", "points"}],
   "stalls": N, "hung_envs": N, "log_workers": [...], "console_errors": [...], "page_error": "...",
   "console": [every console message], "page_status": HTTP status the page was served with (null: --no-hook)}

Usage: dashboard_check.py URL [--wait-ms N] [--screenshot PATH] [--no-hook]

Exit 0 whenever Chromium ran and its DOM was parsed (the caller asserts on the JSON); 1 otherwise.

Console errors. Chromium 156 writes every console message to stderr as "INFO:CONSOLE:<line>" whatever
its level, so stderr tells uncaught exceptions and rejections apart (their text starts "Uncaught") but
not console.error from console.log. So the page is opened through a small proxy in this process: it
forwards every request to URL's server unchanged, except that into HTML answers it puts, first in
<head>, a script that records console.error calls and resources that failed to load in an attribute
of <html> (data-check-errors), which the dumped DOM carries back. --no-hook opens URL directly
(uncaught errors only).
"""
import argparse
import html.parser
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOOK = b"""<script>/* dashboard_check.py */ (function () {
  var errs = [];
  function note(s) {
    errs.push(String(s).slice(0, 500));
    document.documentElement.setAttribute("data-check-errors", JSON.stringify(errs));
  }
  var ce = console.error;
  console.error = function () {
    note("console.error: " + Array.prototype.map.call(arguments, String).join(" "));
    return ce.apply(console, arguments);
  };
  window.addEventListener("error", function (e) {  /* capture: resource errors do not bubble */
    var t = e.target;
    if (t && t !== window && (t.src || t.href)) note("failed to load " + (t.src || t.href));
  }, true);
})();</script>"""
# One line, so that the line numbers Chromium gives for the page's own errors stay those of its file.
HOOK = b" ".join(line.strip() for line in HOOK.splitlines())

CONSOLE_RE = re.compile(r":CONSOLE\(|:CONSOLE:|Uncaught")
# [pid:tid:date/time.us:INFO:CONSOLE:12] "message", source: http://... (12)
CONSOLE_MSG_RE = re.compile(r'^\[[^\]]*\] "(.*)", source: (.*)$')
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def start_proxy(target):
    """Serves target's origin on 127.0.0.1:<port> with HOOK put into HTML answers; returns (server, the page URL through it)."""
    parts = urllib.parse.urlsplit(target)
    origin = f"{parts.scheme}://{parts.netloc}"

    class Proxy(BaseHTTPRequestHandler):
        def do_GET(self):
            try:
                with urllib.request.urlopen(urllib.request.Request(origin + self.path), timeout=30) as r:
                    status, ctype, body = r.status, r.headers.get("Content-Type", ""), r.read()
            except urllib.error.HTTPError as e:  # 4xx/5xx: passed on as they are
                status, ctype, body = e.code, e.headers.get("Content-Type", ""), e.read()
            except Exception as e:  # noqa: BLE001 - unreachable server: the page sees a 502
                status, ctype, body = 502, "text/plain", f"dashboard_check proxy: {e}".encode()
            if self.path == self.server.page_path and self.server.page_status is None:
                self.server.page_status = status
            if ctype.startswith("text/html"):
                i = body.lower().find(b"<head>")
                body = body[:i + 6] + HOOK + body[i + 6:] if i >= 0 else HOOK + body
            self.send_response(status)
            if ctype:
                self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # Chromium hung up: its virtual time ran out

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            pass  # a connection Chromium dropped mid-request is no finding

    server = Server(("127.0.0.1", 0), Proxy)
    server.page_path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    server.page_status = None  # the HTTP status the page itself was served with
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}{server.page_path}"


def chromium(url, extra, wait_ms):
    """Runs headless Chromium on url; returns (stdout, stderr). Its whole process group goes on exit."""
    exe = shutil.which("chromium")
    if not exe:
        raise RuntimeError("chromium is not installed (scripts/setup installs Debian's chromium)")
    profile = tempfile.mkdtemp(prefix="dashboard-check-")
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--no-first-run", f"--user-data-dir={profile}",
           "--enable-logging=stderr", "--v=0", f"--virtual-time-budget={wait_ms}", *extra, url]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"chromium did not finish in 90 s: {' '.join(cmd)}") from None
    finally:
        try:  # renderers may outlive the browser process: end its whole group (its own session)
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        shutil.rmtree(profile, ignore_errors=True)
    return out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def walk(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.walk()

    def text(self):
        if self.tag in ("script", "style"):
            return ""
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def inside(self, tag, stop):
        n = self.parent
        while n is not None and n is not stop:
            if n.tag == tag:
                return True
            n = n.parent
        return False


class TreeBuilder(html.parser.HTMLParser):
    """Enough of a DOM for Chromium's serialisation (every element closed, void elements bare)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", [], None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        if tag not in VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def describe(dom):
    b = TreeBuilder()
    b.feed(dom)
    b.close()
    nodes = list(b.root.walk())
    by_id = {}
    for n in nodes:
        by_id.setdefault(n.attrs.get("id"), n)

    def under(node_id):
        n = by_id.get(node_id)
        return [m for m in n.walk() if m is not n] if n else []

    step_text = " ".join(by_id["step"].text().split()) if "step" in by_id else ""
    m = re.search(r"step\s+(\d+)\s*/\s*(\d+)?", step_text)
    charts = []
    for n in nodes:
        if n.tag == "canvas" and "data-metric" in n.attrs:
            try:
                points = int(n.attrs.get("data-points") or 0)
            except ValueError:
                points = None
            charts.append({"metric": n.attrs["data-metric"], "points": points})
    stalls_table = by_id.get("stalls")
    hung_table = by_id.get("hung-envs")
    hook = next((n.attrs.get("data-check-errors") for n in nodes if n.tag == "html"), None)
    return {
        "step_text": step_text,
        "step": int(m.group(1)) if m else None,
        "max_steps": int(m.group(2)) if m and m.group(2) else None,
        "workers": [n.attrs["data-worker"] for n in under("workers") if n.tag == "tr" and "data-worker" in n.attrs],
        "charts": charts,
        "stalls": sum(1 for n in under("stalls") if n.tag == "tr" and not n.inside("thead", stalls_table)),
        "hung_envs": sum(1 for n in under("hung-envs") if n.tag == "tr" and not n.inside("thead", hung_table)),
        "log_workers": [n.attrs["data-worker"] for n in under("logs") if "data-worker" in n.attrs],
        "page_error": " ".join(by_id["error"].text().split()) if "error" in by_id else "",
        "hook_errors": json.loads(hook) if hook else [],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url")
    ap.add_argument("--wait-ms", type=int, default=5000, help="virtual time the page runs before the DOM is read")
    ap.add_argument("--screenshot", metavar="PATH", help="also save a 1400x1000 PNG of the page")
    ap.add_argument("--no-hook", action="store_true", help="open URL directly (console.error is not seen)")
    a = ap.parse_args()
    # A SIGTERM (e.g. from `timeout`) unwinds through the finally blocks that end Chromium.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    proxy, url = None, a.url
    if not a.no_hook:
        proxy, url = start_proxy(a.url)
    try:
        dom, err = chromium(url, ["--dump-dom"], a.wait_ms)
        if a.screenshot:
            chromium(url, ["--window-size=1400,1000", f"--screenshot={os.path.abspath(a.screenshot)}"], a.wait_ms)
    except RuntimeError as e:
        print(f"dashboard_check: {e}", file=sys.stderr)
        return 1
    finally:
        if proxy:
            proxy.shutdown()
    if "<html" not in dom.lower():
        print(f"dashboard_check: chromium printed no DOM for {a.url}; its stderr ends:\n{err[-2000:]}", file=sys.stderr)
        return 1

    console, errors = [], []
    for line in err.splitlines():
        if not CONSOLE_RE.search(line):
            continue
        mm = CONSOLE_MSG_RE.match(line)
        msg = f"{mm.group(1)} ({mm.group(2)})" if mm else line.strip()
        console.append(msg)
        if "Uncaught" in line:
            errors.append(msg)
    out = describe(dom)
    out["console_errors"] = list(dict.fromkeys(errors + out.pop("hook_errors")))  # each message once, in order
    out["console"] = console
    out["page_status"] = proxy.page_status if proxy else None
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
