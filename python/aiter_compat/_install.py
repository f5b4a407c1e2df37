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
import time) keeps AITer's function: install() changes modules, not other modules' copies.
"""
import importlib
import importlib.machinery
import inspect
import sys
import threading

from . import _aiter_compat as _ext

_lock = threading.RLock()
# (module path, name) -> _Patch, for every path install() put a route under.
_patches = {}
# name -> module paths its original is registered under (forgotten once no patch of it is left).
_registered = {}
# sys.modules entries install() made: compat alias path -> the module it now names.
_aliases = {}


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


def install():
    """Puts aiter-compat's routing under AITer's attention entry points, in place, at every module
    path of the installed aiter that holds them. Returns the paths patched ("aiter.ops.mha.
    flash_attn_varlen_func", ...), sorted; idempotent (a second call patches only what is new,
    such as a module imported since) and thread-safe. Without AITer, or when importing it
    fails, patches nothing, logs one line saying why and returns []. Never raises."""
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
        return patched


def uninstall():
    """Puts AITer's original functions back (the same objects) wherever install() put a route.
    A path that now holds something else (another library's wrapper) is left as it is, with a
    warning, and keeps its original registered, so a wrapper around the route still reaches
    AITer. Returns the paths restored, sorted."""
    with _lock:
        restored, left = [], []
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
