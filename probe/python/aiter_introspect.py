# Reads what an AITer install offers, from Python's side. Embedded into libaiter_compat_pyprobe
# and run inside the embedded interpreter (CLI) or the host interpreter (Python module).
#
# It reports raw facts only (where things are, parameter lists, errors); deciding what those
# facts mean (sinks supported or not, window arity, quirks) is the C++ side's job, so there is
# one place that interprets them. Entry point: run(channel, root, ops_json) -> JSON string.
#
# The static channel never imports aiter: it locates the package with importlib's finders and
# reads sources with `ast`, so no torch import and no JIT build happen. The live channel imports
# aiter and reads inspect.signature, which follows functools.wraps' __wrapped__.
import ast
import json
import os
import sys

_DIST_NAMES = ("amd_aiter", "aiter")  # normalised distribution names of AMD's AITer


def _error(where, exc):
    line = getattr(exc, "lineno", None)
    text = f"{type(exc).__name__}: {exc}"
    if line is not None and isinstance(exc, SyntaxError):
        text = f"SyntaxError: {exc.msg} (line {line})"
    return {"where": where, "error": text}


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
        import importlib.util
        spec = importlib.util.find_spec("aiter")
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
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError) as exc:
        return None, _error(path, exc)
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id in ("__version__", "version") and isinstance(node.value.value, str):
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

class _Sources:
    """Parses each module file at most once."""

    def __init__(self, pkg):
        self.base = os.path.dirname(pkg)
        self.trees = {}

    def path_of(self, module):
        rel = module.replace(".", os.sep)
        for cand in (rel + ".py", os.path.join(rel, "__init__.py")):
            full = os.path.join(self.base, cand)
            if os.path.isfile(full):
                return full
        return None

    def tree(self, module):
        if module not in self.trees:
            path = self.path_of(module)
            if path is None:
                self.trees[module] = (None, None)
            else:
                try:
                    with open(path, "rb") as f:
                        self.trees[module] = (ast.parse(f.read(), path), None)
                except (OSError, SyntaxError, ValueError) as exc:
                    self.trees[module] = (None, _error(path, exc))
        return self.trees[module]


def _literal(node):
    try:
        return repr(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(node) if hasattr(ast, "unparse") else "<expr>"


def _params_from_ast(fn):
    a = fn.args
    pos = list(a.posonlyargs) + list(a.args)
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    params = []
    for i, arg in enumerate(pos):
        kind = "POSITIONAL_ONLY" if i < len(a.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        params.append({"name": arg.arg, "kind": kind,
                       "default": None if defaults[i] is None else _literal(defaults[i])})
    if a.vararg:
        params.append({"name": a.vararg.arg, "kind": "VAR_POSITIONAL", "default": None})
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append({"name": arg.arg, "kind": "KEYWORD_ONLY", "default": None if d is None else _literal(d)})
    if a.kwarg:
        params.append({"name": a.kwarg.arg, "kind": "VAR_KEYWORD", "default": None})
    return params


def _decorator_names(fn):
    names = []
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        names.append(ast.unparse(target) if hasattr(ast, "unparse") else type(target).__name__)
    return names


def _find_top_level(tree, name):
    """The last top-level binding of name wins, as at run time."""
    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = ("def", node)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            found = ("assign", node)
        elif isinstance(node, ast.ImportFrom) and any((al.asname or al.name) == name for al in node.names):
            found = ("import", node)
    return found


def _module_all(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                return list(ast.literal_eval(node.value))
            except (ValueError, TypeError, SyntaxError):
                return None
    return None


def _compat_alias(sources, module):
    """aiter.ops.triton keeps old module paths working through _BACKWARD_COMPAT_MAP (v0.1.10+)."""
    parent, _, leaf = module.rpartition(".")
    tree, _ = sources.tree(parent)
    if tree is None:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_BACKWARD_COMPAT_MAP" for t in node.targets):
            try:
                mapping = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                return None
            if isinstance(mapping, dict) and leaf in mapping:
                return f"{parent}.{mapping[leaf]}"
    return None


def _module_level(body):
    """Statements run at import time: the top level and the blocks of if/try/with under it."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if isinstance(inner, list) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from _module_level(inner)


def _exported_static(sources, module, name):
    """Whether `aiter.<name>` exists: aiter/__init__.py imports it from module."""
    tree, _ = sources.tree("aiter")
    if tree is None:
        return False
    rel = module[len("aiter."):] if module.startswith("aiter.") else module
    for node in _module_level(tree.body):
        if not isinstance(node, ast.ImportFrom):
            continue
        target = node.module if node.level == 0 else ("." * node.level + (node.module or ""))
        if target not in ("." + rel, module):
            continue
        for al in node.names:
            if al.name == "*":
                mod_tree, _ = sources.tree(module)
                names = _module_all(mod_tree) if mod_tree is not None else None
                if names is None or name in names:
                    return True
            elif (al.asname or al.name) == name:
                return True
    return False


def _static_op(sources, spec):
    op = {"present": False, "module": None, "params": None, "decorators": [], "import_paths": {},
          "exported": False, "errors": [], "notes": []}
    for module in spec["modules"]:
        tree, err = sources.tree(module)
        if err:
            op["import_paths"][module] = "error"
            op["errors"].append(err)
            continue
        if tree is None:
            alias = _compat_alias(sources, module)
            op["import_paths"][module] = f"alias of {alias}" if alias else "absent"
            continue
        hit = _find_top_level(tree, spec["name"])
        if hit is None:
            op["import_paths"][module] = "module without it"
            continue
        op["import_paths"][module] = "defined"
        if op["present"]:
            continue  # first candidate that defines it is the entry point
        op["present"], op["module"] = True, module
        kind, node = hit
        if kind == "def":
            op["params"] = _params_from_ast(node)
            op["decorators"] = _decorator_names(node)
        else:
            op["notes"].append(f"bound by {'assignment' if kind == 'assign' else 'import'} at line "
                               f"{node.lineno}: parameters can only be read by the live channel")
    # An alias path only counts when the module it points at really defines the function.
    for module, state in list(op["import_paths"].items()):
        if state.startswith("alias of ") and op["import_paths"].get(state[len("alias of "):]) != "defined":
            op["import_paths"][module] = "alias to a missing module"
    if op["present"]:
        op["exported"] = _exported_static(sources, op["module"], spec["name"])
    return op


def _static_ops(pkg, specs):
    sources = _Sources(pkg)
    return {spec["name"]: _static_op(sources, spec) for spec in specs}


# ---------------------------------------------------------------- live reading

def _params_from_signature(sig):
    import inspect
    params = []
    for p in sig.parameters.values():
        params.append({"name": p.name, "kind": p.kind.name,
                       "default": None if p.default is inspect.Parameter.empty else repr(p.default)})
    return params


def _live_op(aiter, spec):
    import importlib
    import inspect
    op = {"present": False, "module": None, "params": None, "decorators": [], "import_paths": {},
          "exported": False, "errors": [], "notes": []}
    for module in spec["modules"]:
        try:
            mod = importlib.import_module(module)
        except BaseException as exc:  # an import may raise anything, SystemExit included
            absent = isinstance(exc, ModuleNotFoundError) and exc.name == module
            op["import_paths"][module] = "absent" if absent else "error"
            if not absent:
                op["errors"].append(_error(f"import {module}", exc))
            continue
        fn = getattr(mod, spec["name"], None)
        if fn is None:
            op["import_paths"][module] = "module without it"
            continue
        real = getattr(mod, "__name__", module)
        op["import_paths"][module] = "defined" if real == module else f"alias of {real}"
        if op["present"]:
            continue
        op["present"], op["module"] = True, real
        try:
            op["params"] = _params_from_signature(inspect.signature(fn))
        except (TypeError, ValueError) as exc:
            op["errors"].append(_error(f"inspect.signature({module}.{spec['name']})", exc))
        if hasattr(fn, "__wrapped__"):
            op["notes"].append("wrapped (functools.wraps): signature read through __wrapped__")
    op["exported"] = hasattr(aiter, spec["name"]) if aiter is not None else False
    return op


def _live(root, specs):
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
    try:
        import aiter
    except BaseException as exc:
        result["import_error"] = _error("import aiter", exc)
        aiter = None
    if aiter is not None:
        loaded = getattr(aiter, "__file__", None)
        if loaded:
            install["live_path"] = os.path.dirname(os.path.abspath(loaded))
    for spec in specs:
        result["ops"][spec["name"]] = _live_op(aiter, spec) if aiter is not None else {
            "present": False, "module": None, "params": None, "decorators": [], "import_paths": {},
            "exported": False, "errors": [], "notes": ["not read: import aiter failed"]}
    return result


# ---------------------------------------------------------------- entry point

def run(channel, root, ops_json):
    specs = json.loads(ops_json)
    try:
        if channel == "live":
            result = _live(root or None, specs)
        else:
            install = _install(root or None)
            ops = _static_ops(install["path"], specs) if install["path"] and not install["foreign"] else {}
            result = {"install": install, "ops": ops, "import_error": None}
    except BaseException as exc:  # report, never raise into C++
        result = {"install": {"found": False, "errors": [_error(f"{channel} probe", exc)]},
                  "ops": {}, "import_error": None}
    result["channel"] = channel
    result["python"] = sys.version.split()[0]
    return json.dumps(result)
