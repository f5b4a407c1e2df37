# Reads what an AITer install offers, from Python's side. Embedded into libaiter_compat_pyprobe
# and run inside the embedded interpreter (CLI) or the host interpreter (Python module).
#
# It reports raw facts only (where things are, parameter lists, errors); deciding what those
# facts mean (sinks supported or not, window arity, quirks) is the C++ side's job, so there is
# one place that interprets them. Entry point: run(channel, root, specs) -> dict.
#
# The static channel never imports aiter: it locates the package with importlib's finders and
# reads sources with `ast`, so no torch import and no JIT build happen. The live channel imports
# aiter and reads inspect.signature, which follows functools.wraps' __wrapped__.
#
# Reading sources is static_reading.py's job; an entry point missing from its known modules is
# looked for by name across the package by name_search.py. Both are embedded beside this file.
#
# Start-up matters (a CI gate runs the probe often): the probe's modules import only os, sys,
# time and _ast at load (not ast, importlib.util or json: json only where an editable install is
# checked), and the result goes back as Python objects the C++ side converts, so a probe that
# finds no aiter pays for none of the rest.
import os
import sys
import time

import _ast

import _aiter_compat_name_search as name_search
import _aiter_compat_static_reading as reading

_DIST_NAMES = ("amd_aiter", "aiter")  # normalised distribution names of AMD's AITer


class _Phases:
    """Wall time of the channel's steps, returned as phases_ms for the C++ side's debug log."""

    def __init__(self):
        self.ms = {}
        self._last = time.perf_counter()

    def done(self, name):
        now = time.perf_counter()
        self.ms[name] = self.ms.get(name, 0.0) + (now - self._last) * 1000.0
        self._last = now


_error = reading.error_of


# ---------------------------------------------------------------- locating the package

def _package_dir_in(entry):
    cand = os.path.join(entry, "aiter")
    if os.path.isfile(os.path.join(cand, "__init__.py")):
        return cand
    return None


def _resolve_root(root):
    """Accepts site-packages, an unpacked wheel, a source checkout, or the aiter dir itself."""
    root = os.path.abspath(root)
    if os.path.basename(root) == "aiter" and os.path.isfile(os.path.join(root, "__init__.py")):
        return os.path.dirname(root), root
    return root, _package_dir_in(root)


def _copies_on_path():
    seen, copies = set(), []
    for entry in sys.path:
        pkg = _package_dir_in(entry or os.getcwd())
        if pkg:
            real = os.path.realpath(pkg)
            if real not in seen:
                seen.add(real)
                copies.append(pkg)
    return copies


def _find_spec(name):
    """importlib.util.find_spec for a top-level name, without importing importlib.util (which
    pulls in contextlib, functools, types...): the already imported module's spec, else the
    first finder on sys.meta_path that knows it (editable installs' finders included)."""
    if name in sys.modules:
        return getattr(sys.modules[name], "__spec__", None)
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is not None:
            spec = find(name, None, None)
            if spec is not None:
                return spec
    return None


def _locate(root):
    """Returns (search entry, package dir or None, copies found, errors)."""
    errors = []
    if root:
        if not os.path.isdir(root):
            errors.append({"where": "--aiter-root", "error": f"not a directory: {root}"})
            return root, None, [], errors
        entry, pkg = _resolve_root(root)
        return entry, pkg, [pkg] if pkg else [], errors
    copies = _copies_on_path()
    try:
        spec = _find_spec("aiter")
    except Exception as exc:  # a broken finder must not stop the probe
        errors.append(_error("importlib.util.find_spec('aiter')", exc))
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None, (copies[0] if copies else None), copies, errors
    pkg = list(spec.submodule_search_locations)[0]
    return os.path.dirname(pkg), pkg, copies, errors


# ---------------------------------------------------------------- identity of the install

def _read_metadata(path):
    fields = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break  # headers end at the first blank line
                key, sep, value = line.partition(":")
                if sep and key in ("Name", "Version"):
                    fields[key] = value.strip()
    except OSError:
        return None
    return fields


def _norm(name):
    return name.lower().replace("-", "_").replace(".", "_")


def _dist_owns_package(info_dir, pkg):
    """True when a dist-info/egg-info folder describes the package at pkg."""
    top = os.path.join(info_dir, "top_level.txt")
    if os.path.isfile(top):
        with open(top, encoding="utf-8", errors="replace") as f:
            if "aiter" in f.read().split():
                return True
    direct = os.path.join(info_dir, "direct_url.json")
    if os.path.isfile(direct):  # editable install: the package lives in a source checkout
        import json
        try:
            with open(direct, encoding="utf-8") as f:
                url = json.load(f).get("url", "")
            if url.startswith("file://") and os.path.realpath(pkg).startswith(
                    os.path.realpath(url[len("file://"):])):
                return True
        except (OSError, ValueError):
            pass
    return os.path.isfile(os.path.join(info_dir, "RECORD")) and _record_lists_aiter(info_dir)


def _record_lists_aiter(info_dir):
    with open(os.path.join(info_dir, "RECORD"), encoding="utf-8", errors="replace") as f:
        return any(line.startswith("aiter/__init__.py,") for line in f)


def _find_distributions(entries, pkg):
    found = []
    for entry in entries:
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for name in sorted(names):
            if not (name.endswith(".dist-info") or name.endswith(".egg-info")):
                continue
            if not _norm(name).startswith(_DIST_NAMES):
                continue
            info = os.path.join(entry, name)
            meta = _read_metadata(os.path.join(info, "METADATA" if name.endswith(".dist-info") else "PKG-INFO"))
            if not meta or "Name" not in meta or _norm(meta["Name"]) not in _DIST_NAMES:
                continue
            if os.path.isdir(info) and _dist_owns_package(info, pkg):
                found.append({"name": meta["Name"], "version": meta.get("Version", ""), "path": info})
    return found


def _version_file(pkg):
    path = os.path.join(pkg, "_version.py")
    if not os.path.isfile(path):
        return None, None
    import _ast
    try:
        with open(path, encoding="utf-8") as f:
            tree = reading.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError) as exc:
        return None, _error(path, exc)
    for node in tree.body:
        if isinstance(node, (_ast.Assign, _ast.AnnAssign)) and isinstance(node.value, _ast.Constant):
            targets = node.targets if isinstance(node, _ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, _ast.Name) and t.id in ("__version__", "version") and isinstance(node.value.value, str):
                    return node.value.value, None
    return None, None


def _install(root):
    entry, pkg, copies, errors = _locate(root)
    out = {"found": pkg is not None, "path": pkg, "copies": copies, "distribution": None,
           "distribution_path": None, "metadata_version": None, "file_version": None,
           "foreign": False, "layout": None, "errors": errors}
    if pkg is None:
        return out
    if entry and os.path.isfile(os.path.join(entry, "setup.py")):
        out["layout"] = "source checkout"
    # A distribution next to the package first; an editable install keeps its dist-info elsewhere.
    entries = [entry] if root else [entry] + [e for e in sys.path if e and e != entry]
    dists = _find_distributions(entries, pkg)
    if dists:
        out["distribution"] = dists[0]["name"]
        out["distribution_path"] = dists[0]["path"]
        out["metadata_version"] = dists[0]["version"]
        if out["layout"] is None:
            out["layout"] = "installed" if root is None else "site-packages or unpacked wheel"
        if len(dists) > 1:
            out["errors"].append({"where": entry, "error": "several distributions claim aiter: "
                                  + ", ".join(f"{d['name']} {d['version']}" for d in dists)})
    out["file_version"], err = _version_file(pkg)
    if err:
        out["errors"].append(err)
    # The PyPI project "aiter" (async iterators) installs a package of the same import name.
    out["foreign"] = not os.path.isdir(os.path.join(pkg, "ops"))
    return out


# ---------------------------------------------------------------- static reading

def _static_ops(sources, specs, phases):
    ops = {spec["name"]: reading.read_known_paths(sources, spec) for spec in specs}
    phases.done("known modules")
    # Searched only where every known module was read and none binds it: a known module that
    # fails to parse holds the entry point, broken; another function of that name elsewhere
    # (aiter.ops.triton's flash_attn_varlen_func, say) is not what `aiter.<name>` gives.
    missing = [spec for spec in specs if not ops[spec["name"]]["present"] and not ops[spec["name"]]["errors"]]
    if missing:
        hits = name_search.modules_naming(sources, [reading.function_of(spec) for spec in missing])
        phases.done("name search: text of every file")
        for spec in missing:
            name_search.search(sources, spec, ops[spec["name"]], hits[reading.function_of(spec)])
        phases.done("name search: parsing the files that name it")
    for spec in specs:
        op = ops[spec["name"]]
        reading.check_aliases(op)
        if op["located_by"] == "known path":
            op["exported"] = reading.exported(sources, op["module"], reading.function_of(spec))
    phases.done("exports")
    # An entry point is only as importable as the packages above its module: a syntax error in
    # aiter/__init__.py fails every `import aiter...`, and with it every entry point.
    for spec in specs:
        op = ops[spec["name"]]
        if op["present"]:
            err = sources.import_error(op["module"])
            if err:
                op["import_error"] = err
                op["errors"].append(err)
    phases.done("import paths")
    return ops


# Parameter names that carry a learned (or StreamingLLM) sink in AITer's entry points.
SINK_PARAMS = ("sink", "sinks", "sink_ptr", "attn_sink")


def _sink_functions(sources, specs, ops):
    """Every public top-level function of the package with a sink-like parameter that the op
    table does not describe: [{"module", "function", "param"}], so an entry point that gains sinks
    is seen the day it appears. Only files whose text says "sink" are read past their bytes, and
    of those only the signatures that say it are parsed (no symbol table: this is a listing, and
    the Python module's first call pays for it)."""
    known = {(m, reading.function_of(s)) for s in specs for m in s["modules"]}
    known |= {(op["module"], reading.function_of(s)) for s in specs
              for op in [ops.get(s["name"], {})] if op.get("module")}
    found = []
    for module, path in name_search.package_modules(sources.pkg):
        if any(part.startswith("_") for part in module.split(".")):
            continue  # a private module (aiter.ops.triton._triton_kernels): its kernels are not entry points
        data, _ = sources.text(module)
        if data is None or b"sink" not in data:
            continue
        code, statements = reading.top_level_statements(data)
        for begin, end, line in statements:
            if data.find(b"sink", begin, end) < 0:
                continue
            head = reading.without_body(data, code, begin, end)
            if not head.endswith(b": pass\n") or b"sink" not in head:
                continue  # not a function's signature (without_body keeps other statements whole), or no sink in it
            try:
                nodes = reading.parse(b"\n" * (line - 1) + head, path).body
            except (SyntaxError, ValueError):
                continue
            for node in nodes:
                if not isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef)) or node.name.startswith("_"):
                    continue
                a = node.args
                hits = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg in SINK_PARAMS]
                if hits and (module, node.name) not in known:
                    found.append({"module": module, "function": node.name, "param": hits[0]})
    return found


# ---------------------------------------------------------------- live reading

def _params_from_signature(sig):
    import inspect
    params = []
    for p in sig.parameters.values():
        params.append({"name": p.name, "kind": p.kind.name,
                       "default": None if p.default is inspect.Parameter.empty else repr(p.default)})
    return params


def _live_binding(op, name, module_name, fn):
    import inspect
    op["present"], op["module"] = True, module_name
    try:
        op["params"] = _params_from_signature(inspect.signature(fn))
    except (TypeError, ValueError) as exc:
        op["errors"].append(_error(f"inspect.signature({module_name}.{name})", exc))
    if hasattr(fn, "__wrapped__"):
        op["notes"].append("wrapped (functools.wraps): signature read through __wrapped__")


def _import(module):
    """(module object or None, import_paths state or None, error or None)."""
    import importlib
    try:
        return importlib.import_module(module), None, None
    except BaseException as exc:  # an import may raise anything, SystemExit included
        absent = isinstance(exc, ModuleNotFoundError) and exc.name == module
        return None, "absent" if absent else "error", None if absent else _error(f"import {module}", exc)


def _live_op(aiter, spec, sources):
    op = reading.empty_op()
    found = None
    for module in spec["modules"]:
        mod, state, err = _import(module)
        if mod is None:
            op["import_paths"][module] = state
            if err:
                op["errors"].append(err)
            continue
        fn = getattr(mod, reading.function_of(spec), None)
        if fn is None:
            op["import_paths"][module] = "module without it"
            continue
        real = getattr(mod, "__name__", module)
        op["import_paths"][module] = "defined" if real == module else f"alias of {real}"
        if op["present"]:
            continue
        op["located_by"] = "known path"
        _live_binding(op, reading.function_of(spec), real, fn)
        found = fn
    if not op["present"] and not op["errors"] and sources is not None:
        _live_search(aiter, spec, sources, op)
    name = reading.function_of(spec)
    if aiter is None:
        op["exported"] = False
    elif name != spec["name"]:  # another function of that name may be aiter.<name> (CK's, for Triton's)
        op["exported"] = found is not None and getattr(aiter, name, None) is found
    else:
        op["exported"] = hasattr(aiter, name)
    return op


def _live_search(aiter, spec, sources, op):
    """Not at its known modules: import what the static search found (best first), then try
    `aiter.<name>` itself (a binding no source shows, a native module's function...)."""
    name = reading.function_of(spec)
    hits = name_search.modules_naming(sources, [name])[name]
    candidates = name_search.search(sources, spec, reading.empty_op(), hits)
    for module in candidates:
        mod, _, _ = _import(module)
        fn = getattr(mod, name, None) if mod is not None else None
        if fn is None:
            continue
        defined_in = getattr(fn, "__module__", None)
        real = getattr(mod, "__name__", module)
        where = real if defined_in in (None, real) or not str(defined_in).startswith("aiter") else defined_in
        op["import_paths"][real] = "defined" if where == real else f"re-export of {where}"
        if not op["present"]:
            op["located_by"] = "name search"
            _live_binding(op, name, where, fn)
            op["notes"].append(f"not at its known module paths ({', '.join(spec['modules'])}); "
                               f"found by name search in {where}")
    fn = getattr(aiter, name, None) if aiter is not None and not spec.get("search_within") else None
    if not op["present"] and fn is not None:
        where = str(getattr(fn, "__module__", None) or "aiter")
        op["located_by"] = "name search"
        _live_binding(op, name, where, fn)
        op["notes"].append(f"not at its known module paths ({', '.join(spec['modules'])}) and in no source "
                           f"that names it; found as aiter.{name} (defined in {where})")


def _live(root, specs, phases):
    install = _install(root)
    result = {"install": install, "ops": {}, "import_error": None}
    if root:
        entry, _ = _resolve_root(root)
        if entry not in sys.path:
            sys.path.insert(0, entry)
    already = sys.modules.get("aiter")
    if already is not None and install["path"] and getattr(already, "__file__", None):
        loaded = os.path.dirname(os.path.realpath(already.__file__))
        if loaded != os.path.realpath(install["path"]):
            install["errors"].append({"where": "sys.modules['aiter']", "error":
                                      f"another aiter is already imported from {loaded}; the live channel reads that one"})
    phases.done("locate and identity")
    try:
        import aiter
    except BaseException as exc:
        result["import_error"] = _error("import aiter", exc)
        aiter = None
    phases.done("import aiter")
    if aiter is not None:
        loaded = getattr(aiter, "__file__", None)
        if loaded:
            install["live_path"] = os.path.dirname(os.path.abspath(loaded))
    pkg = install.get("live_path") or install["path"]
    sources = reading.Sources(pkg) if pkg else None  # for the name search
    for spec in specs:
        if aiter is None:
            op = reading.empty_op()
            op["notes"].append("not read: import aiter failed")
            result["ops"][spec["name"]] = op
        else:
            result["ops"][spec["name"]] = _live_op(aiter, spec, sources)
    phases.done("entry points")
    return result


# ---------------------------------------------------------------- entry point

def run(channel, root, specs):
    """The channel's report as Python objects: {install, ops, import_error, channel, python,
    phases_ms}. specs: [{"name": ..., "modules": [...]}, ...], the op table."""
    phases = _Phases()
    try:
        if channel == "live":
            result = _live(root or None, specs, phases)
        else:
            install = _install(root or None)
            phases.done("locate and identity")
            usable = install["path"] and not install["foreign"]
            sources = reading.Sources(install["path"]) if usable else None
            ops = _static_ops(sources, specs, phases) if usable else {}
            result = {"install": install, "ops": ops, "import_error": None}
            if usable:
                result["sink_functions"] = _sink_functions(sources, specs, ops)
                phases.done("other functions with a sink parameter")
    except BaseException as exc:  # report, never raise into C++
        result = {"install": {"found": False, "errors": [_error(f"{channel} probe", exc)]},
                  "ops": {}, "import_error": None}
    result["channel"] = channel
    result["python"] = sys.version.split()[0]
    result["phases_ms"] = phases.ms
    return result
