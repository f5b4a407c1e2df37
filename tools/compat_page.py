#!/usr/bin/env python3
"""Writes docs/compatibility.md, the per-release compatibility page, from compat_matrix.yaml.

    tools/compat_page.py compat_matrix.yaml                                # the page on stdout
    tools/compat_page.py compat_matrix.yaml --write docs/compatibility.md  # (re)write the page
    tools/compat_page.py compat_matrix.yaml --check docs/compatibility.md  # exit 1 with a diff if stale

One table per entry point of the matrix (every op key any release holds, in the matrix's order),
one row per release line; consecutive releases whose rows are identical are joined. The last
column says what aiter-compat does with the calls: ROUTED below describes the fallback of each
entry point aiter-compat routes. When the built extension is importable its own set of routed
entry points (aiter_compat._aiter_compat._routed_entry_points()) must equal ROUTED's keys;
--check exits 3 with the difference, so a newly routed entry point has to be described here.

Version order is the probe's PEP 440 subset (probe/src/version.cpp): release numbers of any
length (missing parts are 0), aN/bN/rcN, .postN, .devN, a +local label that never orders, and
"main", newer than every release. Needs PyYAML only.
"""
import argparse
import difflib
import glob
import importlib.machinery
import importlib.util
import os
import re
import sys
from collections import namedtuple

import yaml

REGENERATE = "/usr/bin/python3 tools/compat_page.py compat_matrix.yaml --write docs/compatibility.md"

# What aiter-compat does with each entry point it routes. `target`: where a call AITer cannot
# serve correctly goes (a row's words); `detail`: the one line under the entry point's heading.
Route = namedtuple("Route", "target detail")
_VARLEN = Route("fallback", "the varlen/batch fallback kernels (GPU, or the CPU reference for CPU tensors)")
_PAGED = Route("fallback", "the paged fallback kernels (GPU, or the CPU reference for CPU tensors)")
_FP8 = Route("AiterCompatError",
             "none, AITer only: there is no fp8 varlen fallback, so a call AITer cannot serve correctly "
             "is refused with AiterCompatError")
ROUTED = {
    "flash_attn_varlen_func": _VARLEN,
    "flash_attn_func": _VARLEN,
    "triton_flash_attn_varlen_func": _VARLEN,
    "triton_flash_attn_func": _VARLEN,
    "unified_attention": _PAGED,
    "flash_attn_varlen_fp8_pertensor_func": _FP8,
    "flash_attn_fp8_pertensor_func": _FP8,
    "mha_batch_prefill_func": Route("fallback", "the paged fallback kernels over its page table "
                                                "(GPU, or the CPU reference for CPU tensors)"),
    "pa_decode_gluon": Route("fallback", "the generic paged fallback kernel over its 5-D caches "
                                         "(GPU, or the CPU reference for CPU tensors); per-token fp8 scales refused"),
    "pa_decode_bf16_asm": Route("fallback", "the generic paged fallback kernel over its 5-D caches and CSR page "
                                            "table, any head dim, group and mtp, 16-bit or fp8 (GPU, or the CPU "
                                            "reference for CPU tensors); the rows work_info splits written to "
                                            "split_o / split_lse for pa_reduce_v1"),
}

# Quirk effects under which the router refuses AITer for the calls the quirk's `when` describes
# (shim/src/router.cpp, refuses_route).
REFUSING_EFFECTS = ("sinks_ignored", "runtime_error", "assertion_error", "wrong_result")

# The names a sink parameter has across AITer's entry points, in the order they are looked for.
SINK_PARAMS = ("sink_ptr", "sinks", "sink")

NONE = "—"


# ---------------------------------------------------------------------------------------------
# Versions

_VERSION_RE = re.compile(
    r"""^v?(?P<release>\d+(?:\.\d+)*)
        (?:[-_.]?(?P<pre_l>a|b|rc)(?P<pre_n>\d+))?
        (?:[-_.]?post(?P<post>\d+))?
        (?:[-_.]?dev(?P<dev>\d+))?
        (?:\+(?P<local>[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)*))?$""",
    re.VERBOSE | re.IGNORECASE)
_PRE_ORDER = {"a": 0, "b": 1, "rc": 2}
_INF = float("inf")


class Version:
    """A release version of the forms the matrix uses, or "main". Ordering ignores the +local
    label (0.1.12+rocm7.2 orders as 0.1.12), as the probe does."""

    def __init__(self, text):
        self.text = str(text).strip()
        self.is_main = self.text == "main"
        if self.is_main:
            self.key = (1,)
            self.local = None
            return
        m = _VERSION_RE.match(self.text)
        if not m:
            raise ValueError(f"not a version of the forms the matrix uses: {text!r}")
        release = [int(p) for p in m.group("release").split(".")]
        while len(release) > 1 and release[-1] == 0:  # 1.0 == 1.0.0
            release.pop()
        pre = (_PRE_ORDER[m.group("pre_l").lower()], int(m.group("pre_n"))) if m.group("pre_l") else None
        post = int(m.group("post")) if m.group("post") is not None else None
        dev = int(m.group("dev")) if m.group("dev") is not None else None
        self.local = m.group("local")
        if pre is None and post is None and dev is not None:
            pre_key = (-_INF, 0)  # 1.0.dev1 < 1.0a1 < 1.0
        elif pre is None:
            pre_key = (_INF, 0)
        else:
            pre_key = pre
        self.key = (0, tuple(release), pre_key, -_INF if post is None else post, _INF if dev is None else dev)

    def _cmp_key(self):
        # main: (1,), every release: (0, ...); tuples of different first items never compare further.
        return self.key

    def __eq__(self, other):
        return self._cmp_key() == _as_version(other)._cmp_key()

    def __lt__(self, other):
        return self._cmp_key() < _as_version(other)._cmp_key()

    def __le__(self, other):
        return self._cmp_key() <= _as_version(other)._cmp_key()

    def __gt__(self, other):
        return self._cmp_key() > _as_version(other)._cmp_key()

    def __ge__(self, other):
        return self._cmp_key() >= _as_version(other)._cmp_key()

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        return f"Version({self.text!r})"


def _as_version(v):
    return v if isinstance(v, Version) else Version(v)


def compare_versions(a, b):
    """-1, 0 or 1 as a orders before, with or after b."""
    a, b = _as_version(a), _as_version(b)
    return (a > b) - (a < b)


_CLAUSE_RE = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*(\S+)\s*$")
_OPS = {">=": lambda c: c >= 0, "<=": lambda c: c <= 0, ">": lambda c: c > 0, "<": lambda c: c < 0,
        "==": lambda c: c == 0, "!=": lambda c: c != 0}


def parse_specifier(text):
    """">=0.1.10,<0.1.18" -> [(op, Version), ...]; an empty text matches everything."""
    clauses = []
    for part in str(text or "").split(","):
        if not part.strip():
            continue
        m = _CLAUSE_RE.match(part)
        if not m:
            raise ValueError(f"clause {part.strip()!r} of {text!r} has no operator (>=, >, <=, <, ==, !=)")
        clauses.append((m.group(1), Version(m.group(2))))
    return clauses


def version_in(version, specifier):
    """Whether version is in the specifier set (every clause holds)."""
    v = _as_version(version)
    return all(_OPS[op](compare_versions(v, bound)) for op, bound in parse_specifier(specifier))


# ---------------------------------------------------------------------------------------------
# The page

def load_matrix(path):
    with open(path, encoding="utf-8") as f:
        matrix = yaml.safe_load(f)
    if not isinstance(matrix, dict) or not isinstance(matrix.get("releases"), list):
        raise ValueError(f"{path}: no releases list")
    return matrix


def op_keys(matrix):
    """Every op key any release holds, in the order they first appear."""
    keys = []
    for release in matrix["releases"]:
        for op in release.get("ops") or {}:
            if op not in keys:
                keys.append(op)
    return keys


def _code(text):
    return f"`{text}`"


def _archs(quirk):
    archs = quirk.get("archs") or []
    if quirk.get("archs_not"):
        return "not " + "/".join(quirk["archs_not"])
    return "/".join(archs)


def applying_quirks(matrix, op, version, row):
    """The quirks that apply to op in this release: op in the quirk's ops, the release in its
    versions, the entry point present and, where the quirk names a requires_param, having it
    (as the probe matches them)."""
    if not row.get("present"):
        return []
    params = row.get("params") or []
    out = []
    for q in matrix.get("quirks") or []:
        if op not in (q.get("ops") or []):
            continue
        if not version_in(version, q.get("versions", "")):
            continue
        if q.get("requires_param") and q["requires_param"] not in params:
            continue
        out.append(q)
    return out


def _quirk_label(q):
    archs = _archs(q)
    return _code(q["id"]) + (f" ({archs})" if archs else "")


def _does(op, row, quirks, routed):
    """What aiter-compat does with this entry point's calls in one release."""
    route = routed.get(op)
    if route is None:
        return "reported by the probe; not routed"
    if not row.get("present"):
        return f"all calls: {route.target}"
    if row.get("sinks") == "supported":
        text = "AITer, sinks included"
    else:
        text = f"AITer; calls with sinks: {route.target}"
    refusing = [q for q in quirks if q.get("effect") in REFUSING_EFFECTS]
    if refusing:
        text += "; calls hit by " + ", ".join(_quirk_label(q) for q in refusing) + f": {route.target}"
    return text


def _cells(matrix, op, release, routed):
    row = (release.get("ops") or {}).get(op)
    if row is None:
        return ("not recorded", NONE, NONE, NONE, NONE, NONE, _does(op, {}, [], routed))
    quirks = applying_quirks(matrix, op, release["version"], row)
    if not row.get("present"):
        return ("no", NONE, NONE, NONE, NONE, NONE, _does(op, row, quirks, routed))
    module = _code(row.get("module", "?"))
    aliases = row.get("aliases") or []
    if aliases:
        module += " (also " + ", ".join(_code(a) for a in aliases) + ")"
    function = row.get("function")
    if function and function != op:
        module = _code(function) + " in " + module
    params = row.get("params") or []
    sink_param = next((_code(p) for p in SINK_PARAMS if p in params), NONE)
    arity = row.get("window_arity")
    return ("yes", module, str(row.get("sinks", "?")), sink_param,
            NONE if arity is None else str(arity),
            ", ".join(_quirk_label(q) for q in quirks) or NONE,
            _does(op, row, quirks, routed))


def collapse(rows):
    """[(version, cells)] -> [(label, cells)]: consecutive releases with identical cells joined
    as "first - last"."""
    out = []
    for version, cells in rows:
        if out and out[-1][2] == cells:
            out[-1][1] = version
        else:
            out.append([version, version, cells])
    return [(first if first == last else f"{first} - {last}", cells) for first, last, cells in out]


COLUMNS = ("release", "present", "module", "sinks", "sink param", "window", "quirks", "aiter-compat does")


def _escape(cell):
    return cell.replace("|", "\\|")


def _table(rows):
    lines = ["| " + " | ".join(COLUMNS) + " |", "| " + " | ".join("---" for _ in COLUMNS) + " |"]
    for label, cells in rows:
        lines.append("| " + " | ".join(_escape(c) for c in (label,) + tuple(cells)) + " |")
    return lines


def _flat(value):
    """A `when` value or a summary on one line, written as in the YAML (true, [bf16, 128])."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flat(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flat(v)}" for k, v in value.items()) + "}"
    return " ".join(str(value).split())


def render(matrix, routed=None):
    """The page's Markdown text."""
    routed = ROUTED if routed is None else routed
    releases = matrix["releases"]
    ops = op_keys(matrix)
    main = next((r for r in releases if str(r.get("version")) == "main"), None)
    lines = [
        "# AITer compatibility, release by release",
        "",
        f"<!-- Generated by tools/compat_page.py from compat_matrix.yaml; do not edit. Regenerate: {REGENERATE} -->",
        "",
        "Generated from [compat_matrix.yaml](../compat_matrix.yaml) ([schema](compat-matrix.md)) by",
        "`tools/compat_page.py`; do not edit it by hand. After changing the matrix (or what aiter-compat",
        "routes), regenerate it with",
        "",
        "```sh",
        REGENERATE,
        "```",
        "",
        "`tests/python/test_compat_page.py` fails while this page and the matrix disagree.",
        "",
        f"One table per entry point, one row per release line of the matrix's {len(releases)} entries",
        f"({releases[0]['version']} to {releases[-1]['version']}"
        + (f"; `main` is AITer's main at {main['tag']}, newer than every release" if main and main.get("tag") else "")
        + ").",
        "Consecutive releases whose rows are identical are joined as \"first - last\" (every entry",
        "between them in the matrix included). Columns:",
        "",
        "- **present**: whether the release has the entry point (`not recorded`: the matrix has no row).",
        "- **module**: where it is; `also`: other import paths that reach it. A Python name other than",
        "  the entry point's key comes before the module.",
        "- **sinks**: the matrix's `sinks` field: whether the parameter list takes learned sinks.",
        "- **sink param**: the sink parameter's name in that release ("
        + ", ".join(_code(p) for p in SINK_PARAMS) + ").",
        "- **window**: `window_size` arity: 2 is (left, right), 3 is (left, right, sink_size).",
        "- **quirks**: the known quirks that apply to the release (its ops and versions match, and the",
        "  entry point has the quirk's `requires_param`, as the probe matches them), with the GPU archs",
        "  they are limited to; [Quirks](#quirks) describes each.",
        "- **aiter-compat does**: where aiter-compat sends the calls under the default policy. AITer",
        "  gets a call by keyword, with only the parameters the release has; a call setting one the",
        "  release lacks goes where a call with sinks would. \"calls hit by\" a quirk: the calls its",
        "  `when` describes, on its archs, for the effects",
        "  " + ", ".join(_code(e) for e in REFUSING_EFFECTS) + ", never reach AITer.",
        "",
        "Entry points: " + ", ".join(f"[{_code(op)}](#{op})" for op in ops) + ".",
    ]
    for op in ops:
        lines += ["", f"## {_code(op)}", ""]
        functions = []
        for release in releases:
            row = (release.get("ops") or {}).get(op) or {}
            if row.get("present") and row.get("function") and row["function"] != op and row["function"] not in functions:
                functions.append(row["function"])
        if functions:
            lines.append("Python name: " + ", ".join(_code(f) for f in functions) + " (in the module column's module).")
            lines.append("")
        if op in routed:
            lines.append(f"Routed by aiter-compat. Fallback: {routed[op].detail}.")
        else:
            lines.append("Not routed by aiter-compat: the probe reports it.")
        lines.append("")
        rows = [(str(r["version"]), _cells(matrix, op, r, routed)) for r in releases]
        lines += _table(collapse(rows))
    lines += ["", "## Quirks", ""]
    quirks = matrix.get("quirks") or []
    if not quirks:
        lines.append("None recorded.")
    for q in quirks:
        lines += [
            f"### {_code(q['id'])}",
            "",
            f"- versions: `{q.get('versions', '') or 'any'}`",
            f"- archs: {', '.join(q.get('archs') or []) or ('every GPU but ' + ', '.join(q['archs_not']) if q.get('archs_not') else 'any GPU')}",
            f"- ops: {', '.join(_code(o) for o in q.get('ops') or [])}",
        ]
        if q.get("requires_param"):
            lines.append(f"- only where the entry point has: `{q['requires_param']}`")
        if q.get("when"):
            lines.append("- when: " + ", ".join(f"{k}: {_flat(v)}" for k, v in q["when"].items()))
        lines += [f"- effect: `{q.get('effect', '?')}`", f"- {_flat(q.get('summary', ''))}", ""]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The routed set of the built extension

def _repo_root():
    return os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def _package_dirs():
    """Folders that may hold the built aiter_compat package: where sys.path finds it, then
    AITER_COMPAT_PYTHONPATH or build/python (as the tests look)."""
    dirs = []
    try:
        spec = importlib.util.find_spec("aiter_compat")
    except (ImportError, ValueError):
        spec = None
    if spec and spec.submodule_search_locations:
        dirs += list(spec.submodule_search_locations)
    where = os.environ.get("AITER_COMPAT_PYTHONPATH", os.path.join(_repo_root(), "build", "python"))
    dirs.append(os.path.join(where, "aiter_compat"))
    return [d for i, d in enumerate(dirs) if d not in dirs[:i] and os.path.isdir(d)]


def extension_routed():
    """({op: (function, [modules])}, None) from the built extension, or (None, why) when it
    cannot be imported. The package's own import first; else the extension module file alone
    (so a package __init__ newer than the built .so still gives the .so's answer)."""
    try:
        from aiter_compat import _aiter_compat
        return dict(_aiter_compat._routed_entry_points()), None
    except Exception as e:  # noqa: BLE001 (any failure means: try the file, else not importable)
        why = [f"import aiter_compat._aiter_compat: {type(e).__name__}: {e}"]
    name = "aiter_compat._aiter_compat"
    for folder in _package_dirs():
        for path in sorted(glob.glob(os.path.join(folder, "_aiter_compat*" + ".so"))):
            had = name in sys.modules
            try:
                loader = importlib.machinery.ExtensionFileLoader(name, path)
                spec = importlib.util.spec_from_file_location(name, path, loader=loader)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return dict(module._routed_entry_points()), None
            except Exception as e:  # noqa: BLE001
                why.append(f"{path}: {type(e).__name__}: {e}")
            finally:
                if not had:
                    sys.modules.pop(name, None)
    return None, "; ".join(why)


def routed_mismatch(extension_ops, routed=None):
    """A message naming the differences between the extension's routed ops and ROUTED, or ""."""
    routed = ROUTED if routed is None else routed
    missing = sorted(set(extension_ops) - set(routed))
    extra = sorted(set(routed) - set(extension_ops))
    if not missing and not extra:
        return ""
    parts = ["tools/compat_page.py's ROUTED differs from the entry points the built extension routes "
             "(aiter_compat._aiter_compat._routed_entry_points()):"]
    if missing:
        parts.append("  routed but not described in ROUTED (add a description of its fallback): " + ", ".join(missing))
    if extra:
        parts.append("  in ROUTED but not routed by the extension (remove it, or rebuild the extension): " + ", ".join(extra))
    parts.append(f"then regenerate: {REGENERATE}")
    return "\n".join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="exit codes: 0 done, 1 --check found a difference, "
                                            "3 ROUTED differs from the built extension (--check)")
    parser.add_argument("matrix", help="compat_matrix.yaml")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", metavar="FILE", help="exit 1 with a unified diff unless FILE is the generated page")
    mode.add_argument("--write", metavar="FILE", help="write the page to FILE")
    args = parser.parse_args(argv)

    extension, why = extension_routed()
    if extension is None:
        print(f"compat_page: the aiter_compat extension is not importable ({why}); using ROUTED as it is",
              file=sys.stderr)
    else:
        problem = routed_mismatch(extension)
        if problem:
            if args.check:
                print(problem, file=sys.stderr)
                return 3
            print("compat_page: warning: " + problem + "\n(writing the page from ROUTED)", file=sys.stderr)

    text = render(load_matrix(args.matrix))
    if args.check:
        try:
            with open(args.check, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = ""
        if current == text:
            return 0
        sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), text.splitlines(True),
                                                   fromfile=args.check, tofile="generated from " + args.matrix))
        print(f"\n{args.check} is out of date; regenerate: {REGENERATE}", file=sys.stderr)
        return 1
    if args.write:
        with open(args.write, "w", encoding="utf-8") as f:
            f.write(text)
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
