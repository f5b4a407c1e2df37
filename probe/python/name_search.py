# Finds an entry point by name anywhere in the aiter package, for releases that put it where the
# probe does not know to look (aiter.paged_attn in v0.1.1, ops/triton reorganised in v0.1.21...).
# Embedded into the probe as the module _aiter_compat_name_search.
#
# Cheap before exact: every .py file is read as bytes and only those whose text contains the
# name are parsed; a file that does not contain it can neither define nor re-export it. Among
# the parsed ones a binding counts when the AST shows it at the top level: a definition, an
# assignment, or `from .x import name` (followed to where it is defined). Compatibility maps
# (_BACKWARD_COMPAT_MAP) of the packages above the module found give its old import paths.
import os

import _aiter_compat_static_reading as reading


def package_modules(pkg):
    """(module, path) of every .py file importable as aiter.*, in a stable order."""
    base = os.path.dirname(pkg)
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = sorted(d for d in dirnames if d.isidentifier() and d != "__pycache__")
        parts = os.path.relpath(dirpath, base).split(os.sep)
        for f in sorted(filenames):
            if f.endswith(".py") and f[:-3].isidentifier():
                yield ".".join(parts if f == "__init__.py" else parts + [f[:-3]]), os.path.join(dirpath, f)


def modules_naming(sources, names):
    """{name: [modules whose source text contains name]}; one pass over the package."""
    wanted = [(n, n.encode()) for n in names]
    hits = {n: [] for n in names}
    for module, path in package_modules(sources.pkg):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        found = [n for n, b in wanted if b in data]
        if found:
            sources.keep_text(module, data)
            for n in found:
                hits[n].append(module)
    return hits


def _is_package(sources, module):
    path = sources.path_of(module)
    return path is not None and os.path.basename(path) == "__init__.py"


def _import_source(sources, module, node):
    """The absolute module an ImportFrom in `module` reads from; None for `from . import x`
    (that binds a submodule, not a function)."""
    if node.level == 0:
        return node.module
    package = module if _is_package(sources, module) else module.rpartition(".")[0]
    parts = package.split(".")
    if node.level - 1 >= len(parts):
        return None
    base = ".".join(parts[:len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else None


def resolve(sources, module, name, depth=0):
    """(module, kind, node) where `module`'s binding of name comes from, following re-exports
    inside the package; None when module does not bind name."""
    if not sources.mentions(module, name):
        return None
    tree, _ = sources.tree(module, [name])
    hit = reading.find_top_level(tree, name) if tree is not None else None
    if hit is None:
        return None
    kind, node = hit
    if kind == "import" and depth < 8:
        source_name = next(al.name for al in node.names if (al.asname or al.name) == name)
        source = _import_source(sources, module, node)
        top = module.split(".")[0]
        if source and source.split(".")[0] == top:
            found = resolve(sources, source, source_name, depth + 1)
            if found:
                return found
    return module, kind, node


def _compat_aliases(sources, module):
    """{old path: module} for the compat maps of the packages above module that point at it."""
    aliases = {}
    parts = module.split(".")
    for i in range(1, len(parts)):
        package = ".".join(parts[:i])
        for old, new in reading.compat_map(sources, package).items():
            if f"{package}.{new}" == module:
                aliases[f"{package}.{old}"] = module
    return aliases


def search(sources, spec, op, hits):
    """Completes op (read at the known paths, not found there) from the modules in hits that
    bind the name. Returns the modules a live import should try, best first."""
    name, known = reading.function_of(spec), spec["modules"]
    within = spec.get("search_within") or ""
    defining = {}  # module -> {"kind", "node", "via": [modules re-exporting it]}
    for module in hits:
        if module in known or not (module == within or module.startswith(within + ".") or not within):
            continue
        tree, err = sources.tree(module, [name])
        if err:
            data, _ = sources.text(module)
            if data is not None and b"def " + name.encode() in data:
                op["errors"].append(err)  # it may well be defined there: could not tell
            continue
        found = resolve(sources, module, name)
        if found is None:
            continue
        where, kind, node = found
        entry = defining.setdefault(where, {"kind": kind, "node": node, "via": []})
        if where != module:
            entry["via"].append(module)
    if not defining:
        return []

    def rank(module):
        e = defining[module]
        public = any(reading.exported(sources, m, name) for m in [module] + e["via"])
        return (not public, e["kind"] != "def", -len(e["via"]), module.count("."), module)

    ordered = sorted(defining, key=rank)
    chosen = ordered[0]
    e = defining[chosen]
    op["present"], op["module"], op["located_by"] = True, chosen, "name search"
    reading.describe_binding(op, e["kind"], e["node"])
    for module in ordered:
        op["import_paths"][module] = "defined"
        for via in defining[module]["via"]:
            op["import_paths"][via] = f"re-export of {module}"
    for old, new in _compat_aliases(sources, chosen).items():
        if op["import_paths"].get(old) in (None, "absent"):
            op["import_paths"][old] = f"alias of {new}"
    op["notes"].append(f"not at its known module paths ({', '.join(known)}); found by name search in {chosen}")
    if len(ordered) > 1:
        op["notes"].append("also defined in " + ", ".join(ordered[1:]) + f"; {chosen} is preferred "
                           "(re-exported by aiter, a definition, re-exported more often, shallower, then by name)")
    op["exported"] = any(reading.exported(sources, m, name) for m in [chosen] + e["via"])
    return ordered + [via for m in ordered for via in defining[m]["via"]]
