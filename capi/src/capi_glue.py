# Runs inside the C API's embedded interpreter: turns the caller's DLTensors into the tensors
# AITer's Python entry points take, and calls them by keyword.
import importlib
import importlib.util
import sys


class Borrowed:
    """A caller's tensor, exported once through DLPack; shape and dtype for readers that look."""

    def __init__(self, capsule, device, shape, dtype):
        self._capsule, self._device, self.shape, self.dtype = capsule, device, shape, dtype

    def __dlpack__(self, stream=None):
        capsule, self._capsule = self._capsule, None
        return capsule

    def __dlpack_device__(self):
        return self._device


def torch_available():
    return importlib.util.find_spec("torch") is not None


def tensor(capsule, device, shape, dtype):
    borrowed = Borrowed(capsule, device, shape, dtype)
    try:
        import torch
    except ImportError:
        return borrowed
    return torch.from_dlpack(borrowed)


class Unreachable(Exception):
    """AITer's module or function could not be had: the caller routes around AITer."""


def _original(module, name, fn):
    """AITer's own function, even where aiter_compat.install() patched the name (calling the patch
    would route the call a second time, through the Python module's dispatcher)."""
    ext = sys.modules.get("aiter_compat._aiter_compat")
    registered = ext.original_of(module, name) if ext is not None else None
    return registered if registered is not None else getattr(fn, "__aiter_compat_original__", fn)


def call(module, name, kwargs, lse_out):
    try:
        fn = _original(module, name, getattr(importlib.import_module(module), name))
    except Exception as e:  # an import that raises anything leaves AITer unusable here
        raise Unreachable(f"import {module} failed: {type(e).__name__}: {e}") from e
    result = fn(**kwargs)
    if lse_out is not None:
        lse = result[1]
        if hasattr(lse_out, "copy_"):
            lse_out.copy_(lse)
        else:
            lse_out[...] = lse
    return None
