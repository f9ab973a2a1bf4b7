#!/usr/bin/env python3
"""Runs the command blocks a doc marks runnable, so the docs cannot drift from the code.

A fenced block whose info string is `sh runnable` is a runnable block: a reader can paste it into
a shell at the top of a built checkout. This test runs each one of a page with bash -euo pipefail,
in order, in one scratch directory per page that mirrors the checkout (a link to each top-level
entry, so `build/bin/trainer` and `etc/trainer/...` resolve while outputs land in the scratch
directory), with build/bin first on PATH. A block that fails fails the test, naming the page and
line. It also checks that every relative link of the page leads to a file of the checkout.

  doc_blocks_test.py SOURCE_DIR BUILD_DIR PAGE.md [--list]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^(`{3,})(.*)$")
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")


def blocks(text):
    """(line number, info string, body) of each fenced block."""
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start, body = m.group(1), m.group(2).strip(), i + 1, []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            sys.exit(f"line {start}: a fenced block is never closed")
        out.append((start, info, "\n".join(body)))
        i += 1
    return out


def broken_links(page, text, source):
    bad = []
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
            continue
        path = os.path.normpath(os.path.join(os.path.dirname(page), target))
        if not os.path.exists(path) or not os.path.realpath(path).startswith(os.path.realpath(source)):
            bad.append(target)
    return bad


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    source, build, page = (os.path.abspath(a) for a in sys.argv[1:4])
    text = open(page, encoding="utf-8").read()
    name = os.path.relpath(page, source)
    runnable = [(n, body) for n, info, body in blocks(text) if info.split() == ["sh", "runnable"]]
    if "--list" in sys.argv:
        for n, body in runnable:
            print(f"{name}:{n}\n{body}\n")
        return 0
    failures = [f"{name}: broken link {t}" for t in broken_links(page, text, source)]
    scratch = tempfile.mkdtemp(prefix="doc-blocks-")
    try:
        for entry in os.listdir(source):
            if entry != "build":
                os.symlink(os.path.join(source, entry), os.path.join(scratch, entry))
        os.symlink(build, os.path.join(scratch, "build"))
        env = dict(os.environ, PATH=os.path.join(build, "bin") + os.pathsep + os.environ["PATH"],
                   HOME=scratch, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
        for n, body in runnable:
            print(f"--- {name}:{n}\n{body}", flush=True)
            r = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=scratch, env=env)
            if r.returncode != 0:
                failures.append(f"{name}:{n}: the runnable block exited with {r.returncode}")
                break  # later blocks of a page build on earlier ones
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for f in failures:
        print("FAIL " + f, file=sys.stderr)
    print(f"{name}: {len(runnable)} runnable blocks, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
