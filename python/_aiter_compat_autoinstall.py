"""AITER_COMPAT_INSTALL=1: aiter_compat.install() right after the first `import aiter`, for engines
with no plug-in group aiter-compat can register in, and for modules that bind AITer's names at
import (`from aiter import mha_batch_prefill_func`): the import that binds them is the one that
installs, so they bind the routes.

aiter_compat_autoinstall.pth, at the top of site-packages, runs at the start of every Python
process of the environment, so all of this stays cheap and silent. The .pth line reads the
variable itself and imports this module only when it is 1, true, yes or on: unset is off here
(the engine plug-ins take unset as on), and a process without the variable imports nothing. The
module checks again (arm() is for callers that import it themselves) and, when on, only puts a
finder first on sys.meta_path: it imports neither aiter (which imports torch) nor aiter_compat
until the program imports aiter. The finder wraps the exec_module of aiter's own loader: once aiter/__init__.py
has run, install(), then the finder removes itself. An aiter whose import fails raises to its
importer exactly as without the finder, and nothing is installed. Nothing here raises: a failure
is one line through aiter_compat's logger (imported only then), or stderr without it.
"""
import os
import sys

_ON = ("1", "true", "yes", "on")


def _log(text):
    try:
        from aiter_compat import _aiter_compat
        _aiter_compat._log("warn", text)
    except Exception:  # aiter_compat itself does not load: the line goes to stderr
        try:
            sys.stderr.write(f"[aiter_compat] [warning] {text}\n")
        except Exception:
            pass


def _install():
    try:
        import aiter_compat
        aiter_compat.install()  # logs its own outcome, never raises
    except Exception as exc:
        _log(f"AITER_COMPAT_INSTALL: install after import aiter failed: {type(exc).__name__}: {exc}")


class _AfterAiterImport:
    """A meta-path finder that finds nothing itself: for `aiter` it asks the finders after it,
    and makes the loader they return call install() once aiter's own code has run."""

    def __init__(self):
        self._finding = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "aiter" or self._finding:
            return None
        self._finding = True  # the finders asked below may import; never ask them for aiter twice
        try:
            spec = None
            for finder in list(sys.meta_path):
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                self._wrap(spec.loader)
            return spec
        except Exception as exc:  # the import goes on without the hook, exactly as it would
            _log(f"AITER_COMPAT_INSTALL: not installing at import aiter: {type(exc).__name__}: {exc}")
            return None
        finally:
            self._finding = False

    def _wrap(self, loader):
        """Sets exec_module on the loader object itself: spec.loader and aiter.__loader__ stay
        AITer's loader (importlib.resources and pkgutil read them)."""
        own = loader.exec_module

        def exec_module(module):
            try:
                own(module)  # aiter/__init__.py; its exceptions reach the importer unchanged
            finally:
                try:
                    del loader.exec_module
                except Exception:
                    pass
            self.remove()
            _install()

        loader.exec_module = exec_module

    def remove(self):
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


def arm():
    """Installs once aiter has been imported: now if it already is, else at its first import."""
    module = sys.modules.get("aiter")
    if module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False):
        _install()
    elif not any(isinstance(f, _AfterAiterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterAiterImport())


try:
    if os.environ.get("AITER_COMPAT_INSTALL", "").strip().lower() in _ON:
        arm()
except Exception as exc:  # a traceback from a .pth file at every interpreter start is never wanted
    _log(f"AITER_COMPAT_INSTALL: not armed: {type(exc).__name__}: {exc}")
