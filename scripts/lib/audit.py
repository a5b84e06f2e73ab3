#!/usr/bin/env python3
"""scripts/setup --audit: every header and library the build uses must come from a Debian package
that scripts/setup installs.

What is collected from a configured (not necessarily built) Ninja build dir:
  headers   every header each translation unit of compile_commands.json includes: taken from
            ninja's dependency log (`ninja -t deps`) for objects already built, otherwise by running
            that unit's own compile command with -M (preprocessor only, nothing compiled)
  libraries every library on the link lines of build.ninja (absolute .so/.a paths, -l names found
            with the compiler's -print-file-name, -Wl, arguments), plus libstdc++/libm/libc/libgcc_s
            that g++ adds
  cmake     every FILEPATH entry of CMakeCache.txt (compiler, ccache, libraries found) and the
            package config file in each <Pkg>_DIR entry (e.g. TorchConfig.cmake)
  runtime   the shared libraries `ldd` resolves for executables/libraries already built (so
            alternatives such as libblas.so.3 -> openblas-openmp are checked too)
  tools     cmake, ninja, ld.lld (when -fuse-ld=lld is used)
Files inside the repository or the build dir are ours and skipped. Each remaining file (and its
realpath, and its /usr-merge twin) is mapped to its package with `dpkg -S`.

The rule: a package is covered when it is listed in scripts/apt-packages.txt or is in the
recursive Depends/Pre-Depends closure of a listed package (Recommends and Suggests excluded, as
setup installs with --no-install-recommends; every alternative of an `a | b` dependency and
every installed provider of a virtual package count). The closure is computed from dpkg's status
of installed packages. Rationale: `apt-get install --no-install-recommends <list>` on a fresh
Debian 12 installs exactly that closure, so a file from a covered package is present wherever
setup ran. libc6-dev, libstdc++-12-dev, libgcc-12-dev, linux-libc-dev come in through
build-essential this way. The audit fails on a file owned by no package (e.g. /usr/local) or by
an uncovered package. --strict also fails when a header comes from a package covered only
through dependencies (other than build-essential's: libc6-dev, libstdc++-12-dev, ...), since a
package whose headers we include should be on the list itself.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections import defaultdict, deque


def fail(msg):
    print(f"[setup --audit] error: {msg}", file=sys.stderr)
    sys.exit(2)


def log(msg):
    print(f"[setup --audit] {msg}", flush=True)


def run(cmd, cwd=None, check=True):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        fail(f"{' '.join(cmd[:4])}... failed ({p.returncode}): {p.stderr.strip()[:2000]}")
    return p


def inside(path, dirs):
    return any(path == d or path.startswith(d + os.sep) for d in dirs)


# ---------------------------------------------------------------- headers
def ninja_deps(bdir):
    """{object path as in build.ninja: (valid, [dep paths])} from ninja's deps log."""
    out = run(["ninja", "-C", bdir, "-t", "deps"]).stdout
    deps, cur = {}, None
    for line in out.splitlines():
        if not line.strip():
            cur = None
            continue
        if not line.startswith(" "):
            m = re.match(r"^(.*): #deps \d+, deps mtime \d+ \((\w+)\)$", line)
            if m:
                cur = m.group(1)
                deps[cur] = (m.group(2) == "VALID", [])
            continue
        if cur is not None:
            deps[cur][1].append(line.strip())
    return deps


DROP_WITH_ARG = {"-o", "-MT", "-MF", "-MQ"}
DROP = {"-c", "-MD", "-MMD"}


def preprocess_deps(entry):
    args = entry.get("arguments") or shlex.split(entry["command"])
    if os.path.basename(args[0]) == "ccache":
        args = args[1:]
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in DROP_WITH_ARG:
            skip = True
            continue
        if a in DROP or any(a.startswith(p) and len(a) > len(p) for p in DROP_WITH_ARG):
            continue
        out.append(a)
    with tempfile.NamedTemporaryFile("r", suffix=".d") as d:
        p = run(out + ["-M", "-MF", d.name], cwd=entry["directory"], check=False)
        if p.returncode != 0:
            return None, p.stderr.strip().splitlines()[:5]
        text = d.read()
    text = text.replace("\\\n", " ")
    paths = []
    for rule in text.split("\n"):
        if ":" not in rule:
            continue
        _, deps = rule.split(":", 1)
        paths += deps.replace("\\ ", "\0").split()
    return [p.replace("\0", " ") for p in paths], None


def collect_headers(bdir, root):
    cc_path = os.path.join(bdir, "compile_commands.json")
    with open(cc_path) as f:
        entries = json.load(f)
    deps = ninja_deps(bdir)
    # The deps log is keyed by object; its first dependency is the translation unit itself
    # (compile_commands.json of CMake 3.25 has no "output" field to name the object).
    by_source = {}
    for valid, paths in deps.values():
        if valid and paths:
            by_source[os.path.normpath(os.path.join(bdir, paths[0]))] = paths
    files, from_log, preprocessed, errors = set(), 0, 0, []
    for e in entries:
        src = os.path.normpath(os.path.join(e["directory"], e["file"]))
        if src in by_source:
            base, paths = bdir, by_source[src]
            from_log += 1
        else:
            base = e["directory"]
            paths, err = preprocess_deps(e)
            preprocessed += 1
            if paths is None:
                errors.append((e["file"], err))
                continue
        for p in paths:
            files.add(os.path.normpath(os.path.join(base, p)))
    log(f"headers: {len(entries)} translation units ({from_log} from ninja's deps log, "
        f"{preprocessed} preprocessed with -M)")
    for f_, err in errors:
        print(f"  warning: could not preprocess {f_}: {' | '.join(err)}", file=sys.stderr)
    return files, errors


# ---------------------------------------------------------------- libraries
LIB_RE = re.compile(r"\.(so(\.\d+)*|a)$")


def compiler_of(bdir):
    cache = read_cache(bdir)
    return cache.get("CMAKE_CXX_COMPILER", ("", "c++"))[1] or "c++"


def print_file_name(cxx, name):
    p = run([cxx, f"-print-file-name={name}"], check=False).stdout.strip()
    return p if os.path.isabs(p) and os.path.exists(p) else None


def collect_link(bdir):
    """Libraries on link lines, and the outputs of the link statements."""
    text = open(os.path.join(bdir, "build.ninja")).read().replace("$\n", " ")
    libs, lnames, outputs, uses_lld = set(), set(), set(), False
    current_outputs = []
    for line in text.splitlines():
        if line.startswith("build "):
            head = line[len("build "):].split(":", 1)[0]
            current_outputs = [t for t in head.replace("$ ", "\0").split() if t != "|"]
            continue
        m = re.match(r"^\s+(LINK_LIBRARIES|LINK_FLAGS|LINK_PATH|FLAGS)\s*=\s*(.*)$", line)
        if not m:
            continue
        var, value = m.groups()
        try:
            toks = shlex.split(value)
        except ValueError:
            toks = value.split()
        if "-fuse-ld=lld" in toks:
            uses_lld = True
        if var == "FLAGS":
            continue
        if var == "LINK_LIBRARIES":
            outputs.update(o.replace("\0", " ") for o in current_outputs)
        for t in toks:
            parts = t[len("-Wl,"):].split(",") if t.startswith("-Wl,") else [t]
            for part in parts:
                part = part.strip('"')
                if part.startswith("-l") and len(part) > 2 and not part.startswith("-l:"):
                    lnames.add(part[2:])
                elif os.path.isabs(part) and LIB_RE.search(part) and os.path.isfile(part):
                    libs.add(os.path.normpath(part))
    cxx = compiler_of(bdir)
    unresolved = []
    for n in sorted(lnames | {"stdc++", "m", "c", "gcc_s"}):
        hit = print_file_name(cxx, f"lib{n}.so") or print_file_name(cxx, f"lib{n}.a")
        if hit:
            libs.add(os.path.normpath(hit))
        elif n in lnames:
            unresolved.append(f"-l{n}")
    outs = {os.path.normpath(os.path.join(bdir, o)) for o in outputs}
    return libs, outs, uses_lld, unresolved


def collect_runtime(outputs):
    files, checked = set(), 0
    for o in sorted(outputs):
        if not os.path.isfile(o):
            continue
        with open(o, "rb") as f:
            if f.read(4) != b"\x7fELF":
                continue
        p = run(["ldd", o], check=False)
        checked += 1
        for line in p.stdout.splitlines():
            m = re.search(r"=>\s+(/\S+)", line) or re.match(r"^\s*(/\S+)\s+\(", line)
            if m:
                files.add(m.group(1))
    return files, checked


# ---------------------------------------------------------------- cmake cache
def read_cache(bdir):
    cache = {}
    path = os.path.join(bdir, "CMakeCache.txt")
    for line in open(path, errors="replace"):
        m = re.match(r"^([^#/][^:=]*):([A-Z]+)=(.*)$", line.rstrip("\n"))
        if m:
            cache[m.group(1)] = (m.group(2), m.group(3))
    return cache


def collect_cmake(bdir):
    files = set()
    for key, (typ, value) in read_cache(bdir).items():
        if not value or value.endswith("NOTFOUND"):
            continue
        if typ == "FILEPATH":
            for v in value.split(";"):
                if os.path.isabs(v) and os.path.isfile(v):
                    files.add(v)
        elif typ == "PATH" and key.endswith("_DIR") and os.path.isdir(value):
            for n in os.listdir(value):
                if n.endswith("Config.cmake") or n.endswith("-config.cmake"):
                    files.add(os.path.join(value, n))
    return files


# ---------------------------------------------------------------- dpkg
def usrmerge_twins(p):
    out = [p]
    for a, b in (("/usr/lib/", "/lib/"), ("/usr/bin/", "/bin/"), ("/usr/sbin/", "/sbin/"),
                 ("/usr/lib64/", "/lib64/")):
        if p.startswith(a):
            out.append(b + p[len(a):])
        elif p.startswith(b):
            out.append(a + p[len(b):])
    return out


def dpkg_owners(paths):
    """{path: set(packages)} for the paths dpkg knows (exact paths, no patterns)."""
    owners = defaultdict(set)
    paths = sorted(p for p in paths if not re.search(r"[*?\[\\]", p))
    for i in range(0, len(paths), 400):
        p = run(["dpkg", "-S"] + paths[i:i + 400], check=False)
        for line in p.stdout.splitlines():
            if line.startswith("diversion ") or ": " not in line:
                continue
            pkgs, path = line.split(": ", 1)
            owners[path].update(x.strip().split(":")[0] for x in pkgs.split(","))
    return owners


def map_packages(files):
    """{file: set(packages)} (empty set: no package owns it)."""
    cands = {}
    for f in files:
        c = []
        for base in (f, os.path.realpath(f)):
            c += [x for x in usrmerge_twins(base) if x not in c]
        cands[f] = c
    owners = dpkg_owners({c for cs in cands.values() for c in cs})
    result = {}
    for f, cs in cands.items():
        pk = set()
        for c in cs:
            if c in owners:
                pk = owners[c]
                break
        result[f] = pk
    return result


# ---------------------------------------------------------------- closure
def parse_deps_field(field):
    names = []
    for clause in field.split(","):
        for alt in clause.split("|"):
            alt = alt.strip()
            if alt:
                names.append(re.split(r"[\s(\[]", alt, 1)[0].split(":")[0])
    return names


def installed_graph():
    fmt = "${Package}\t${db:Status-Status}\t${Depends}\t${Pre-Depends}\t${Provides}\n"
    out = run(["dpkg-query", "-W", "-f", fmt]).stdout
    deps, providers, installed = {}, defaultdict(set), set()
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) < 5 or parts[1] != "installed":
            continue
        name = parts[0]
        installed.add(name)
        deps[name] = parse_deps_field(parts[2]) + parse_deps_field(parts[3])
        for v in parse_deps_field(parts[4]):
            providers[v].add(name)
    return deps, providers, installed


def closure_by_root(listed, deps, providers, installed):
    """{package: listed package that pulls it in} (listed packages map to themselves)."""
    via = {}
    for root in listed:
        if root not in installed:
            continue
        q = deque([root])
        seen = {root}
        while q:
            pkg = q.popleft()
            via.setdefault(pkg, root)
            for d in deps.get(pkg, []):
                for t in ({d} if d in installed else set()) | providers.get(d, set()):
                    if t not in seen:
                        seen.add(t)
                        q.append(t)
    return via


# ---------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(prog="scripts/setup --audit")
    ap.add_argument("--root", required=True)
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--packages", required=True)
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()

    root = os.path.realpath(a.root)
    bdir = os.path.realpath(os.path.join(root, a.build_dir))
    for need in ("build.ninja", "compile_commands.json", "CMakeCache.txt"):
        if not os.path.isfile(os.path.join(bdir, need)):
            fail(f"{bdir} has no {need}: configure it first (scripts/build, or "
                 f"cmake -S {root} -B {bdir} -G Ninja)")
    listed = []
    for line in open(a.packages):
        listed += line.split("#", 1)[0].split()

    log(f"build dir {bdir}")
    headers, pp_errors = collect_headers(bdir, root)
    libs, outputs, uses_lld, unresolved = collect_link(bdir)
    runtime, n_elf = collect_runtime(outputs)
    cmake_files = collect_cmake(bdir)
    tools = {run(["sh", "-c", f"command -v {t}"], check=False).stdout.strip()
             for t in ["cmake", "ninja"] + (["ld.lld"] if uses_lld else [])}
    tools.discard("")

    ours = [root, bdir]
    kinds = {}
    for kind, group in (("tool", tools), ("cmake", cmake_files), ("runtime", runtime),
                        ("library", libs), ("header", headers)):
        for f in group:
            f = os.path.normpath(f)
            if os.path.isabs(f) and not inside(f, ours) and not inside(os.path.realpath(f), ours):
                kinds[f] = kind
    log(f"files outside the project: {sum(k == 'header' for k in kinds.values())} headers, "
        f"{sum(k == 'library' for k in kinds.values())} link libraries, "
        f"{sum(k == 'runtime' for k in kinds.values())} runtime libraries of {n_elf} built binaries, "
        f"{sum(k == 'cmake' for k in kinds.values())} CMake-found files, "
        f"{sum(k == 'tool' for k in kinds.values())} tools")

    owners = map_packages(kinds)
    deps, providers, installed = installed_graph()
    via = closure_by_root(listed, deps, providers, installed)

    by_pkg = defaultdict(list)
    orphans = []
    for f, pk in sorted(owners.items()):
        if not pk:
            orphans.append(f)
        for p in pk:
            by_pkg[p].append(f)

    problems = 0
    rows = []
    for pkg in sorted(by_pkg):
        fs = by_pkg[pkg]
        kset = sorted({kinds[f] for f in fs})
        if pkg in listed:
            status = "listed"
        elif pkg in via:
            status = f"via {via[pkg]}"
        else:
            status = "NOT COVERED"
        rows.append((pkg, status, len(fs), ",".join(kset), fs[0]))
    w = max([len(r[0]) for r in rows] + [7])
    ws = max([len(r[1]) for r in rows] + [6])
    print(f"{'package':<{w}}  {'status':<{ws}}  {'files':>5}  kinds / example")
    hidden = 0
    for pkg, status, n, ks, ex in rows:
        if not a.verbose and status.startswith("via ") and ks == "runtime":
            hidden += 1
            continue
        print(f"{pkg:<{w}}  {status:<{ws}}  {n:>5}  {ks}  {ex}")
    if hidden:
        print(f"(+ {hidden} packages used only at run time and covered as dependencies; "
              f"--verbose lists them)")

    uncovered = [r for r in rows if r[1] == "NOT COVERED"]
    indirect = [r for r in rows if r[1].startswith("via ")]
    for pkg, _, n, _, _ in uncovered:
        problems += 1
        print(f"FAIL: package {pkg} is neither in scripts/apt-packages.txt nor a dependency of a "
              f"listed package; its files used by the build:", file=sys.stderr)
        for f in by_pkg[pkg][:10]:
            print(f"    {kinds[f]}: {f}", file=sys.stderr)
    if orphans:
        problems += 1
        print("FAIL: files used by the build that no Debian package owns:", file=sys.stderr)
        for f in orphans[:20]:
            print(f"    {kinds[f]}: {f}", file=sys.stderr)
        if len(orphans) > 20:
            print(f"    ... and {len(orphans) - 20} more", file=sys.stderr)
    if unresolved:
        print(f"  warning: link names the compiler cannot find: {' '.join(unresolved)}",
              file=sys.stderr)
    if pp_errors:
        problems += 1
        print(f"FAIL: {len(pp_errors)} translation unit(s) could not be preprocessed "
              f"(their headers are unchecked)", file=sys.stderr)
    strict_bad = [r[0] for r in indirect
                  if "header" in r[3].split(",") and r[1] != "via build-essential"]
    if a.strict and strict_bad:
        problems += 1
        print("FAIL (--strict): headers included from packages covered only as dependencies "
              "(list them in scripts/apt-packages.txt): " + " ".join(strict_bad), file=sys.stderr)
    missing_listed = [p for p in listed if p not in installed]
    if missing_listed:
        print(f"  note: listed but not installed here: {' '.join(missing_listed)} "
              f"(run scripts/setup)", file=sys.stderr)
    if problems:
        print(f"[setup --audit] FAILED: {len(uncovered)} uncovered package(s), {len(orphans)} "
              f"file(s) without a package"
              + (f", {len(strict_bad)} header package(s) only covered as dependencies"
                 if a.strict else ""), file=sys.stderr)
        return 1
    log(f"ok: {len(kinds)} files from {len(by_pkg)} packages, {sum(r[1] == 'listed' for r in rows)} "
        f"listed, {len(indirect)} through dependencies of listed packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
