#!/usr/bin/env python3
"""The NVIDIA code objects' machine code, kernel by kernel, read with cuobjdump: what a change to
the kernels did to them without a GPU, and whether a kernel is the one an earlier build ran.

    tools/sass_compare.py summary CO [--only REGEX]
        per kernel: SASS instructions, registers, where its first global load, first
        asynchronous copy (LDGSTS) and first matrix instruction (HMMA/HGMMA) come, and its
        local-memory (spill) instructions;
    tools/sass_compare.py same NEW OLD [--rename NEW_PART=OLD_PART ...]
        whether each kernel of NEW has, instruction for instruction, the SASS of the kernel of
        OLD of that name (after the renames: "keys_fold=keys" compares the folded twins with the
        keys kernels of OLD); exit 1 when one differs or has no counterpart.

cuobjdump comes with the CUDA toolkit, or from PyPI (`pip install nvidia-cuda-cuobjdump`: it lands
in site-packages/nvidia/cu13/bin); $CUOBJDUMP names it when it is not on PATH."""
import argparse
import glob
import os
import re
import shutil
import site
import subprocess
import sys

INSTRUCTION = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
FUNCTION = re.compile(r"^\s+Function : (\S+)")


def cuobjdump():
    """The cuobjdump to run, or None."""
    found = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if found:
        return found
    for root in [site.getusersitepackages()] + site.getsitepackages() + ["/usr/local/cuda"]:
        for path in glob.glob(os.path.join(root, "nvidia", "cu*", "bin", "cuobjdump")) + [os.path.join(root, "bin", "cuobjdump")]:
            if os.access(path, os.X_OK):
                return path
    return None


def parse_sass(text):
    """cuobjdump -sass output -> {kernel: [instruction, ...]}, each instruction without its
    address and encoding (so that two builds compare by what they execute)."""
    kernels, current = {}, None
    for line in text.splitlines():
        m = FUNCTION.match(line)
        if m:
            current = kernels.setdefault(m.group(1), [])
            continue
        m = INSTRUCTION.match(line)
        if m and current is not None:
            current.append(m.group(1))
    return kernels


def parse_registers(text):
    """cuobjdump -res-usage output -> {kernel: registers}."""
    regs, current = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*Function (\S+):", line)
        if m:
            current = m.group(1)
        m = re.search(r"REG:(\d+)", line)
        if m and current:
            regs[current] = int(m.group(1))
    return regs


def first(instructions, pattern):
    rx = re.compile(pattern)
    return next((i for i, x in enumerate(instructions) if rx.search(x)), -1)


def summary(instructions):
    """What a kernel's SASS says about its path: counts and the first positions of its loads."""
    return {
        "instructions": len(instructions),
        "first_global_load": first(instructions, r"(^|\s)LDG\."),
        "first_async_copy": first(instructions, r"LDGSTS"),
        "first_matrix": first(instructions, r"\b(HMMA|HGMMA)\b"),
        "local_memory": sum(1 for x in instructions if re.search(r"\b(LDL|STL)\b", x)),
    }


def read(tool, path):
    sass = subprocess.run([tool, "-sass", path], capture_output=True, text=True, check=True).stdout
    res = subprocess.run([tool, "-res-usage", path], capture_output=True, text=True, check=True).stdout
    return parse_sass(sass), parse_registers(res)


def rename(name, pairs):
    for new, old in pairs:
        name = name.replace(new, old)
    return name


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summary")
    s.add_argument("co")
    s.add_argument("--only", default="")
    c = sub.add_parser("same")
    c.add_argument("new")
    c.add_argument("old")
    c.add_argument("--rename", action="append", default=[], help="NEW_PART=OLD_PART")
    args = ap.parse_args(argv)
    tool = cuobjdump()
    if not tool:
        print("sass_compare: no cuobjdump (CUDA toolkit, or `pip install nvidia-cuda-cuobjdump`; $CUOBJDUMP names it)",
              file=sys.stderr)
        return 2
    if args.cmd == "summary":
        kernels, regs = read(tool, args.co)
        for name in sorted(kernels):
            if args.only and not re.search(args.only, name):
                continue
            k = summary(kernels[name])
            print(f"{name}: {k['instructions']} instructions, {regs.get(name, '?')} registers, first global load at "
                  f"{k['first_global_load']}, first async copy at {k['first_async_copy']}, first matrix instruction at "
                  f"{k['first_matrix']}, {k['local_memory']} local-memory instructions")
        return 0
    pairs = [tuple(p.split("=", 1)) for p in args.rename]
    new, _ = read(tool, args.new)
    old, _ = read(tool, args.old)
    differ = 0
    for name in sorted(new):
        counterpart = rename(name, pairs)
        if counterpart not in old:
            print(f"{name}: no {counterpart} in {args.old}")
            differ += 1
        elif new[name] != old[counterpart]:
            print(f"{name}: differs from {counterpart} ({len(new[name])} against {len(old[counterpart])} instructions)")
            differ += 1
    print(f"{len(new) - differ} of {len(new)} kernels instruction for instruction the same as in {args.old}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
