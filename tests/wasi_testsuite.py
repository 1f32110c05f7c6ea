#!/usr/bin/env python3
"""Runs the WASI conformance testsuite (github.com/WebAssembly/wasi-testsuite)
against wzvm: ctest's `wasi-testsuite` entry.

Usage: wasi_testsuite.py WZVM [--suite DIR] [--filter SUBSTRING] [-v]

Every wasm32-wasip1 test of the suite runs the way the suite's
doc/specification.md says (and its Python runner does):
  - each `NAME.wasm` in a folder holding a manifest.json is a test; `NAME.json`
    beside it, when present, is its specification (legacy keys args, env,
    root, exit_code, stdout, stderr; or `operations` run/read/wait);
  - `env` is the guest's whole environment (wzvm gives none unless told);
  - `root` is preopened as the guest's `/`, from a fresh copy of the fixture
    directory per test (the official runner works in place and deletes
    `*.cleanup` files afterwards; a copy keeps the suite read-only and lets
    tests never see each other's leftovers);
  - `args` follow the module path;
  - the exit code must be the expected one and each `read` of stdout or stderr
    must equal its payload.
Tests that need a WASI proposal (`proposals`: sockets, http) or another world
than the command world are skipped and named: wzvm implements preview1 only.

The suite is found at --suite, $WZVM_WASI_TESTSUITE, ../shared/wasi-testsuite
beside the repository, or the git submodule third_party/wasi-testsuite. With
none, the runner says how to get it and exits 77 (ctest: skipped).

Prints one `N passed, M failed, K skipped` line; exits 1 on any failure.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SKIP = 77
# Upstream commit of the suite this runner was written against (its prebuilt
# binaries live on that branch): the submodule is pinned to it.
PINNED = "9f80ca35444cfd9e63100725615140a346652e6c"
TIMEOUT_S = 120
WASI_VERSION = "wasm32-wasip1"
SUPPORTED_PROPOSALS = set()  # preview1 itself; no sockets or http proposal
COMMAND_WORLD = "wasi:cli/command"

REPO = Path(__file__).resolve().parent.parent


def find_suite(explicit):
    candidates = []
    if explicit:
        candidates.append(("--suite", Path(explicit)))
    elif os.environ.get("WZVM_WASI_TESTSUITE"):
        candidates.append(("WZVM_WASI_TESTSUITE", Path(os.environ["WZVM_WASI_TESTSUITE"])))
    else:
        candidates.append(("shared copy", REPO.parent / "shared" / "wasi-testsuite"))
        candidates.append(("submodule", REPO / "third_party" / "wasi-testsuite"))
    for origin, path in candidates:
        if (path / "tests").is_dir():
            return path
        if origin in ("--suite", "WZVM_WASI_TESTSUITE"):
            print(f"wasi-testsuite: {origin} names {path}, which has no tests/ folder", file=sys.stderr)
            sys.exit(2)
    print(
        "wasi-testsuite: the WASI testsuite was not found (skipped). Get it with\n"
        "    git submodule update --init third_party/wasi-testsuite\n"
        "or point WZVM_WASI_TESTSUITE at a checkout of\n"
        "https://github.com/WebAssembly/wasi-testsuite, branch prod/testsuite-base,\n"
        f"commit {PINNED}.",
        file=sys.stderr,
    )
    sys.exit(SKIP)


def suite_dirs(suite):
    """Folders of wasm32-wasip1 tests: those with a manifest naming that version."""
    dirs = []
    for manifest in sorted(suite.glob("tests/**/manifest.json")):
        with open(manifest, encoding="utf-8") as f:
            version = json.load(f).get("version", manifest.parent.name)
        if version == WASI_VERSION:
            dirs.append(manifest.parent)
    return dirs


class Spec:
    """One test's specification, legacy keys turned into operations as the
    suite's runner does."""

    def __init__(self, raw):
        self.proposals = raw.get("proposals") or []
        self.world = raw.get("world", COMMAND_WORLD)
        if "operations" in raw:
            self.ops = raw["operations"]
        else:
            run = {"type": "run", "args": raw.get("args", []), "env": raw.get("env", {}),
                   "root": raw.get("root")}
            self.ops = [run]
            for stream in ("stdout", "stderr"):
                if raw.get(stream) is not None:
                    self.ops.append({"type": "read", "id": stream, "payload": raw[stream]})
            self.ops.append({"type": "wait", "exit_code": raw.get("exit_code", 0)})

    def skip_reason(self):
        missing = [p for p in self.proposals if p not in SUPPORTED_PROPOSALS]
        if missing:
            return "needs the WASI proposal(s) " + ", ".join(missing)
        if self.world != COMMAND_WORLD:
            return f"targets the world {self.world}"
        kinds = {op.get("type") for op in self.ops}
        unsupported = kinds - {"run", "read", "wait"}
        if unsupported:
            return "uses operations " + ", ".join(sorted(unsupported))
        return None


def ignore_cleanup(_dir, names):
    return [n for n in names if n.endswith(".cleanup")]


def run_test(wzvm, wasm, spec, verbose):
    """Returns a list of failure messages (empty: passed)."""
    failures = []
    with tempfile.TemporaryDirectory(prefix="wzvm-wasi-") as tmp:
        proc_out = None
        for op in spec.ops:
            kind = op["type"]
            if kind == "run":
                argv = [wzvm]
                for k, v in op.get("env", {}).items():
                    argv += ["--env", f"{k}={v}"]
                if op.get("root"):
                    root = Path(tmp) / "root"
                    shutil.copytree(wasm.parent / op["root"], root, symlinks=True, ignore=ignore_cleanup)
                    argv += ["--dir", f"{root}::/"]
                argv.append(str(wasm))
                argv += op.get("args", [])
                if verbose:
                    print("  $ " + " ".join(argv))
                try:
                    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                       timeout=TIMEOUT_S, cwd=tmp)
                    proc_out = {"stdout": p.stdout.decode("utf-8", "replace"),
                                "stderr": p.stderr.decode("utf-8", "replace"),
                                "code": p.returncode}
                except subprocess.TimeoutExpired:
                    failures.append(f"timed out after {TIMEOUT_S} s")
                    return failures
            elif kind == "read":
                stream = op.get("id", "stdout")
                want = op.get("payload", "")
                got = proc_out[stream]
                if got != want:
                    failures.append(f"{stream}: expected {want!r}, got {got!r}")
            elif kind == "wait":
                want = op.get("exit_code", 0)
                if proc_out["code"] != want:
                    failures.append(f"exit code: expected {want}, got {proc_out['code']}")
        if failures and proc_out is not None:
            for stream in ("stdout", "stderr"):
                text = proc_out[stream].strip()
                if text:
                    failures.append(f"{stream} was:\n" + "\n".join("      " + l for l in text.splitlines()[:8]))
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wzvm")
    ap.add_argument("--suite")
    ap.add_argument("--filter", help="run only tests whose name contains this")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()

    wzvm = str(Path(a.wzvm).resolve())
    if not os.access(wzvm, os.X_OK):
        print(f"wasi-testsuite: {a.wzvm} is not an executable", file=sys.stderr)
        return 2
    suite = find_suite(a.suite)
    dirs = suite_dirs(suite)
    if not dirs:
        print(f"wasi-testsuite: no {WASI_VERSION} test folders under {suite}/tests", file=sys.stderr)
        return 2
    print(f"wasi-testsuite: {suite}")

    passed, failed, skipped = [], [], []
    for d in dirs:
        group = d.relative_to(suite / "tests").parts[0]
        for wasm in sorted(d.glob("*.wasm")):
            name = f"{group}/{wasm.stem}"
            if a.filter and a.filter not in name:
                continue
            spec_file = wasm.with_suffix(".json")
            raw = {}
            if spec_file.exists():
                with open(spec_file, encoding="utf-8") as f:
                    raw = json.load(f)
            spec = Spec(raw)
            reason = spec.skip_reason()
            if reason:
                print(f"SKIP {name}: {reason}")
                skipped.append(name)
                continue
            problems = run_test(wzvm, wasm, spec, a.verbose)
            if problems:
                print(f"FAIL {name}")
                for p in problems:
                    print("    " + p)
                failed.append(name)
            else:
                if a.verbose:
                    print(f"ok   {name}")
                passed.append(name)

    print(f"{len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
