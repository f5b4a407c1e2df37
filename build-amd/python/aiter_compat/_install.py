"""install() and uninstall(): aiter-compat's routing under AITer's own entry points, in place.

install() replaces each routed AITer entry point (flash_attn_varlen_func, flash_attn_func,
unified_attention) by a PatchedFunction at every module path of the installed aiter that holds
it: the defining module, `aiter` itself and any other loaded aiter.* module that re-exports the
same object (found by identity, so a different function of the same name, such as Triton's
flash_attn_varlen_func in aiter.ops.triton.mha, is left alone). The originals are recorded in
the extension's registry first: the AITer route calls them, never the patched names.

From 0.1.10 aiter.ops.triton.unified_attention is an alias kept by AITer's compat finder, which
executes the moved module a second time on the first import through the old path (the path vLLM
imports from), leaving a copy holding an unpatched function. install() makes the old path name
the module already imported (sys.modules), so every import of either path sees the route.

Code that bound a name before install() ran (`from aiter import flash_attn_varlen_func` at
import time, as SGLang's and ATOM's attention backends do) holds AITer's function in its own
module's globals. After patching, install() finds those by identity in every loaded module
outside aiter and rebinds each one held under AITer's own name (what `from aiter import name`
binds) to the route; one held under another name (`original = aiter.flash_attn_varlen_func`)
may be a deliberate reference to AITer's function and is reported, not changed, unless
AITER_COMPAT_REBIND=all; AITER_COMPAT_REBIND=0 reports every one and changes none.
bound_elsewhere() lists both; uninstall() puts the originals back there too.
"""
import importlib
import importlib.machinery
import inspect
import os
import sys
import threading
import types

from . import _aiter_compat as _ext

_lock = threading.RLock()
# (module path, name) -> _Patch, for every path install() put a route under.
_patches = {}
# name -> module paths its original is registered under (forgotten once no patch of it is left).
_registered = {}
# sys.modules entries install() made: compat alias path -> the module it now names.
_aliases = {}
# (sys.modules key, global name) -> _Patch, for each module outside aiter whose global install()
# rebound from an original to its route.
_rebound = {}
# "module.name" -> why it still holds AITer's function, as the latest install() found them.
_left = {}


class _Patch:
    __slots__ = ("module", "original", "patched")

    def __init__(self, module, original, patched):
        self.module, self.original, self.patched = module, original, patched


def _one_line(exc):
    text = f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())


def _unpatched(fn):
    while isinstance(fn, _ext.PatchedFunction):
        fn = fn.__aiter_compat_original__
    return fn


def _absent(exc, module):
    """A ModuleNotFoundError for the module itself or one of its parents: not in this release."""
    return isinstance(exc, ModuleNotFoundError) and exc.name is not None and \
        (module == exc.name or module.startswith(exc.name + "."))


def _has_own_file(path):
    """Whether the release has a file for module `path`, asked of the path finder alone (not of
    AITer's compat finder, which would import the module it maps the path to)."""
    parent, _, _ = path.rpartition(".")
    package = sys.modules.get(parent)
    if package is None:
        try:
            package = importlib.import_module(parent)
        except (Exception, SystemExit):
            return False
    search = getattr(package, "__path__", None)
    return search is not None and importlib.machinery.PathFinder.find_spec(path, search) is not None


def _entry_modules(name, paths, problems):
    """The modules at the entry point's candidate paths that hold `name`, imported where the
    release has them. A path that is only an alias in this release (AITer's compat map from
    0.1.10: importing aiter.ops.triton.unified_attention executes the moved module a second time,
    an unpatched copy) is pointed at the module already imported, as sys.modules[path]."""
    modules, first = [], None
    for path in paths:
        module = sys.modules.get(path)
        if module is None and first is not None and not _has_own_file(path):
            sys.modules[path] = first
            _aliases[path] = first
            module = first
        if module is None:
            try:
                module = importlib.import_module(path)
            except (Exception, SystemExit) as exc:  # an import may raise anything, SystemExit included
                if not _absent(exc, path):
                    problems.append(f"{path}.{name}: import {path} failed: {_one_line(exc)}")
                continue
        if vars(module).get(name) is not None:
            modules.append(module)
            first = first or module
    return modules


def _originals(name, modules):
    """AITer's functions for `name` in those modules, each once (two when a compat alias made a
    second copy of the module before install() ran)."""
    found = []
    for module in modules:
        fn = _unpatched(vars(module)[name])
        if not any(fn is f for f in found):
            found.append(fn)
    return found


def _holders(name, original):
    """(path, module) for every loaded aiter module holding `original` (or a patch of it) as `name`."""
    found = []
    for path, module in list(sys.modules.items()):
        if module is None or not (path == "aiter" or path.startswith("aiter.")):
            continue
        try:
            value = vars(module).get(name)
        except TypeError:  # a module-like object without __dict__
            continue
        if value is not None and _unpatched(value) is original:
            found.append((path, module))
    return sorted(found)


def _positional_names(original):
    """The release's positional parameters in order; none when its signature cannot be read
    (then every positional argument is refused rather than guessed)."""
    try:
        params = inspect.signature(original).parameters.values()
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in kinds]


def _patch_entry(op, name, original, problems):
    """Puts op's route under `name` wherever `original` is held (name is the function's name in
    AITer's modules: the op triton_flash_attn_varlen_func is Triton's flash_attn_varlen_func)."""
    holders = _holders(name, original)
    module_name = getattr(original, "__module__", None) or (holders[0][0] if holders else "aiter")
    patched = None
    for path, module in holders:
        current = vars(module).get(name)
        if isinstance(current, _ext.PatchedFunction):
            patched = patched or current  # already in place (this process's earlier install)
    if patched is None:
        patched = _ext.PatchedFunction(op, original, _positional_names(original), f"{module_name}.{name}")
    # The registry first: a call through a name patched below must already find the original.
    for path in {module_name, *(p for p, _ in holders)}:
        _ext._register_original(path, name, original)
        _registered.setdefault(name, set()).add(path)
    for path, module in holders:
        if (path, name) in _patches:
            continue
        current = vars(module).get(name)
        if not isinstance(current, _ext.PatchedFunction):
            try:
                setattr(module, name, patched)
            except Exception as exc:
                problems.append(f"{path}.{name}: cannot be set: {_one_line(exc)}")
                continue
            if vars(module).get(name) is not patched:
                problems.append(f"{path}.{name}: setting it did not change it (the module keeps "
                                f"{type(vars(module).get(name)).__name__})")
                continue
            current = patched
        _patches[(path, name)] = _Patch(module, original, current)


def _rebind_mode(problems):
    """AITER_COMPAT_REBIND: "same" (unset, 1, true, yes, on: names held under AITer's own name),
    "all" (every name holding an original) or "off" (0, false, no, off: report only); and the
    variable's value."""
    flag = os.environ.get("AITER_COMPAT_REBIND", "").strip().lower()
    if flag in ("0", "false", "no", "off"):
        return "off", flag
    if flag == "all":
        return "all", flag
    if flag not in ("", "1", "true", "yes", "on"):
        problems.append(f"AITER_COMPAT_REBIND={flag!r} is not one of 0/1/all: rebinding names held under "
                        "AITer's own name")
    return "same", flag


def _in_aiter(path):
    return isinstance(path, str) and (path == "aiter" or path.startswith("aiter."))


def _rebind_elsewhere(problems):
    """Finds, in every loaded module outside aiter, top-level names holding one of the originals
    install() put a route over (bound before it ran: `from aiter import name` at import), and
    rebinds them to the route where that is safe. Returns the "module.name"s rebound now and
    {"module.name": why} for those left; only module globals can be found (a class attribute, a
    closure cell or a container holding the function is out of reach and not claimed)."""
    mode, flag = _rebind_mode(problems)
    wanted = {}  # id(original) -> (AITer's name for it, original, its route)
    for (_, name), patch in _patches.items():
        wanted.setdefault(id(patch.original), (name, patch.original, patch.patched))
    if not wanted:
        return [], {}
    rebound, left, seen = [], {}, set()
    for key, module in list(sys.modules.items()):
        # Only real module objects: their __dict__ is their code's globals. Another object in
        # sys.modules (a lazy or proxy module) is not read: reading it can run its code.
        if not isinstance(key, str) or not issubclass(type(module), types.ModuleType) or id(module) in seen:
            continue
        seen.add(id(module))
        try:
            namespace = object.__getattribute__(module, "__dict__")  # not the module's own __getattr__
            if type(namespace) is not dict or _in_aiter(key) or _in_aiter(namespace.get("__name__")):
                continue
            if wanted.keys().isdisjoint(map(id, namespace.values())):
                continue
            found = [(g, v) for g, v in list(namespace.items()) if id(v) in wanted and wanted[id(v)][1] is v]
        except Exception:  # a module's dict changed size under another thread: the next install() sees it
            continue
        for global_name, value in found:
            name, original, patched = wanted[id(value)]
            where = f"{key}.{global_name}"
            if mode == "off":
                left[where] = f"AITER_COMPAT_REBIND={flag}: reported only"
                continue
            if global_name != name and mode != "all":
                # `original = aiter.flash_attn_varlen_func` keeps AITer's function on purpose, as a
                # profiler or a test does; an engine's `from aiter import name` binds AITer's name.
                left[where] = f"held as {global_name}, not as {name}; AITER_COMPAT_REBIND=all rebinds it"
                continue
            namespace[global_name] = patched
            _rebound[(key, global_name)] = _Patch(module, original, patched)
            rebound.append(where)
    return sorted(rebound), left


def bound_elsewhere():
    """Where, outside aiter, modules held AITer's functions bound before install() ran:
    {"rebound": ["module.name", ...] (now the route, until uninstall()), "left": ["module.name",
    ...] (still AITer's function, as the latest install() found them), "reasons": {"module.name":
    why it was left}}. Names are sorted; empty lists before install() and after uninstall()."""
    with _lock:
        return {"rebound": sorted(f"{k}.{n}" for k, n in _rebound), "left": sorted(_left),
                "reasons": dict(sorted(_left.items()))}


def install():
    """Puts aiter-compat's routing under AITer's attention entry points, in place, at every module
    path of the installed aiter that holds them. Returns the paths patched ("aiter.ops.mha.
    flash_attn_varlen_func", ...), sorted; idempotent (a second call patches only what is new,
    such as a module imported since) and thread-safe. Without AITer, or when importing it
    fails, patches nothing, logs one line saying why and returns []. Never raises.

    Then it rebinds, in modules outside aiter, the names that took AITer's function before it ran
    (bound_elsewhere() lists them, and those it left; AITER_COMPAT_REBIND=0 reports only); the
    returned paths are aiter's own."""
    with _lock:
        try:
            importlib.import_module("aiter")
        except (Exception, SystemExit) as exc:
            if _absent(exc, "aiter"):
                _ext._log("info", "install: nothing patched: AITer is not installed (import aiter: "
                                  f"{_one_line(exc)})")
            else:
                _ext._log("warn", f"install: nothing patched: import aiter failed: {_one_line(exc)}")
            return sorted(f"{p}.{n}" for p, n in _patches)
        before = set(_patches)
        problems = []
        for op, (name, paths) in _ext._routed_entry_points().items():
            for original in _originals(name, _entry_modules(name, paths, problems)):
                try:
                    _patch_entry(op, name, original, problems)
                except Exception as exc:  # nothing half done: each path is set, or left, whole
                    problems.append(f"{name}: {_one_line(exc)}")
        patched = sorted(f"{p}.{n}" for p, n in _patches)
        new = sorted(f"{p}.{n}" for p, n in set(_patches) - before)
        if new or problems:
            text = f"install: routes put under {', '.join(new)}" if new else "install: nothing new patched"
            if problems:
                text += "; not patched: " + "; ".join(problems)
            _ext._log("warn" if problems else "info", text)
        _report_elsewhere()
        return patched


def _report_elsewhere():
    """Rebinds names bound before install() ran (see _rebind_elsewhere) and logs one line when
    something was rebound or what is left has changed since the last line."""
    global _left
    problems = []
    try:
        rebound, left = _rebind_elsewhere(problems)
    except Exception as exc:  # the scan is an addition to install(): it never undoes the patching
        rebound, left = [], dict(_left)
        problems.append(f"the scan failed: {_one_line(exc)}")
    changed = left != _left
    _left = left
    if rebound or (left and changed) or problems:
        parts = [f"rebound {', '.join(rebound)}"] if rebound else []
        if left:
            parts.append("left " + "; ".join(f"{w} ({why})" for w, why in sorted(left.items())))
        parts += problems
        _ext._log("warn" if problems else "info", "install: AITer's functions bound outside aiter before "
                                                  "install(): " + "; ".join(parts))


def uninstall():
    """Puts AITer's original functions back (the same objects) wherever install() put a route.
    A path that now holds something else (another library's wrapper) is left as it is, with a
    warning, and keeps its original registered, so a wrapper around the route still reaches
    AITer. Names install() rebound outside aiter get AITer's function back where they still hold
    the route. Returns aiter's paths restored, sorted."""
    global _left
    with _lock:
        restored, left = [], []
        elsewhere = []
        for (key, name), patch in sorted(_rebound.items()):
            # Only where the name still holds the route: a module that rebound it since keeps its own.
            namespace = object.__getattribute__(patch.module, "__dict__")
            current = namespace.get(name)
            if current is patch.patched:
                namespace[name] = patch.original
                elsewhere.append(f"{key}.{name}")
            elif current is not patch.original:
                left.append(f"{key}.{name}: now holds {type(namespace.get(name)).__name__}, not the route")
            del _rebound[(key, name)]
        _left = {}
        if elsewhere:
            _ext._log("info", "uninstall: AITer's functions put back outside aiter in " + ", ".join(elsewhere))
        for (path, name), patch in sorted(_patches.items()):
            current = vars(patch.module).get(name)
            if current is patch.patched:
                try:
                    setattr(patch.module, name, patch.original)
                except Exception as exc:
                    left.append(f"{path}.{name}: cannot be set: {_one_line(exc)}")
                    continue
            elif current is not patch.original:
                left.append(f"{path}.{name}: now holds {type(current).__name__} {current!r:.80}, not the route")
                continue
            restored.append(f"{path}.{name}")
            del _patches[(path, name)]
        for name in list(_registered):
            if not any(n == name for _, n in _patches):
                for path in _registered.pop(name):
                    _ext._forget_original(path, name)
        if not _patches:
            for path, module in list(_aliases.items()):
                if sys.modules.get(path) is module:
                    del sys.modules[path]
                del _aliases[path]
        if left:
            _ext._log("warn", "uninstall: left as they are: " + "; ".join(left))
        return restored
