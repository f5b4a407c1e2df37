#!/usr/bin/env python3
"""Reads entry points of every AITer release tree into compat_matrix.yaml rows.

    tools/read_release_trees.py AITER_GIT_DIR PROBE OPS [--wheel VERSION=PATH]... [--write MATRIX]

For each release in the matrix whose tag (or, for main, commit) exists in AITER_GIT_DIR (a clone
of ROCm/aiter, bare or not), the tree's aiter/ folder is unpacked to a temporary folder and the
static probe (`PROBE probe --json --aiter-root ... --no-dlopen`) reads it; nothing of AITer is
imported or built. OPS is a comma-separated list of op-table keys (triton_flash_attn_varlen_func,
pa_decode_gluon, ...). Each op becomes one row in the matrix's form; `required` (how many leading
parameters have no default) is read with Python's ast from the module the probe found. A release
that is a published wheel rather than a tag is read from the unpacked wheel given by --wheel.

Without --write the rows are printed; with it, each release's rows for OPS replace (or are added
to) that release's entry in MATRIX in place. Run it when an entry point is added to the op table
or a release to the matrix, then check with `aiter-compat probe --check-matrix` per tree.
"""
import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

import yaml


def tree_of(git_dir, ref, out):
    """Unpacks ref's aiter/ folder under out; False when the ref is not in the clone."""
    if subprocess.run(["git", "-C", git_dir, "rev-parse", "--verify", "-q", ref + "^{commit}"],
                      capture_output=True).returncode != 0:
        return False
    archive = subprocess.run(["git", "-C", git_dir, "archive", ref, "aiter"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", out], input=archive.stdout, check=True)
    return True


def required_count(root, module, function):
    path = os.path.join(root, *module.split(".")) + ".py"
    if not os.path.exists(path):
        path = os.path.join(root, *module.split("."), "__init__.py")
    with open(path, "rb") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            positional = node.args.posonlyargs + node.args.args
            return len(positional) - len(node.args.defaults)
    return 0


def row(name, op, root, function):
    if not op["present"]:
        return f"      {name}: {{present: false}}"
    fields = [f"present: true", f"module: {op['module']}"]
    if function != name:
        fields.append(f"function: {function}")
    fields.append(f"sinks: {op['sinks']}")
    aliases = sorted(p for p, s in op["import_paths"].items() if s.startswith("alias of "))
    if aliases:
        fields.append(f"aliases: [{', '.join(aliases)}]")
    if op.get("window_arity"):
        fields.append(f"window_arity: {op['window_arity']}")
    fields.append(f"required: {required_count(root, op['module'], function)}")
    return (f"      {name}: {{{', '.join(fields)},\n"
            f"        params: [{', '.join(op['params'])}]}}")


def read_release(probe, root, version, ops, functions):
    entry = [] if version is None else ["--matrix-entry", version]
    proc = subprocess.run([probe, "probe", "--json", "--aiter-root", root, "--no-dlopen", *entry],
                          capture_output=True, text=True)
    if proc.returncode not in (0, 3, 4):
        raise RuntimeError(f"probe failed on {root}: {proc.stderr[-400:]}")
    report = json.loads(proc.stdout)
    return [row(name, report["ops"][name], os.path.dirname(report["aiter"]["path"]) if report["aiter"]["path"] else root,
                functions.get(name, name)) for name in ops]


def write_rows(matrix_path, rows_by_version, ops):
    lines = open(matrix_path, encoding="utf-8").read().split("\n")
    out, i, version = [], 0, None
    pending = None
    while i < len(lines):
        line = lines[i]
        m = re.match(r'  - version: "(.*)"$', line)
        if m:
            version = m.group(1)
        if line == "    ops:" and version in rows_by_version:
            out.append(line)
            i += 1
            block = []
            while i < len(lines) and lines[i].startswith("      "):
                block.append(lines[i])
                i += 1
            kept, skip = [], False
            for b in block:  # drop the rows of OPS already there (a row and its continuation lines)
                key = re.match(r"      (\w+):", b)
                if key:
                    skip = key.group(1) in ops
                if not skip:
                    kept.append(b)
            out.extend(kept)
            out.extend(rows_by_version[version])
            continue
        out.append(line)
        i += 1
    with open(matrix_path, "w", encoding="utf-8") as f:
        f.write("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("git_dir")
    ap.add_argument("probe")
    ap.add_argument("ops")
    ap.add_argument("--matrix", default=os.path.join(os.path.dirname(__file__), "..", "compat_matrix.yaml"))
    ap.add_argument("--wheel", action="append", default=[], help="VERSION=PATH of a published wheel")
    ap.add_argument("--function", action="append", default=[], help="OP=FUNCTION where they differ")
    ap.add_argument("--write", action="store_true", help="write the rows into --matrix")
    args = ap.parse_args()
    ops = args.ops.split(",")
    functions = dict(f.split("=", 1) for f in args.function)
    wheels = dict(w.split("=", 1) for w in args.wheel)
    matrix = yaml.safe_load(open(args.matrix, encoding="utf-8"))
    rows = {}
    for rel in matrix["releases"]:
        version = str(rel["version"])
        with tempfile.TemporaryDirectory() as tmp:
            if version in wheels:
                with zipfile.ZipFile(wheels[version]) as z:
                    z.extractall(tmp)
                entry = version
            else:
                ref = str(rel["tag"]).split()[0]
                if not tree_of(args.git_dir, ref, tmp):
                    print(f"# {version}: {ref} not in {args.git_dir}; left as it is", file=sys.stderr)
                    continue
                entry = version
            rows[version] = read_release(args.probe, tmp, entry, ops, functions)
        if not args.write:
            print(f"# {version}\n" + "\n".join(rows[version]))
    if args.write:
        write_rows(args.matrix, rows, set(ops))
        print(f"wrote {len(ops)} ops for {len(rows)} releases into {args.matrix}")


if __name__ == "__main__":
    main()
