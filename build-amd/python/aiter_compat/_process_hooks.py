"""Per-process bookkeeping of the call counts and the route trace.

The trace's counts line is written at exit from a C atexit handler, which runs on a normal exit
(sys.exit, the end of the program). A multiprocessing child started by fork (vLLM's default
start method where it can) ends with os._exit instead, after running multiprocessing's
finalizers: so the line is also written from one of those. A forked child's finalizer registry
is emptied when it starts, so the finalizer is registered again there, from multiprocessing's
after-fork hooks. And a forked child's counts start from zero: it counts its own calls.
"""
import os

from . import _aiter_compat as _ext


class _Hooks:
    """The object multiprocessing's after-fork registry holds (it keeps a weak reference)."""


_HOOKS = _Hooks()


def _register_finalizer(_=None):
    import multiprocessing.util
    multiprocessing.util.Finalize(None, _ext._trace_write_counts, exitpriority=-100)


def register():
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_ext._after_fork_in_child)
    if os.environ.get("AITER_COMPAT_TRACE"):
        import multiprocessing.util
        _register_finalizer()
        multiprocessing.util.register_after_fork(_HOOKS, _register_finalizer)
