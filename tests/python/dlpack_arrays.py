"""Host arrays in dtypes numpy lacks (bfloat16, the fp8 formats), exported through DLPack with
ctypes, so the CPU routes can be tested with the dtypes engines pass on GPUs."""
import ctypes

import numpy as np

# DLPack's type codes (dlpack.h 1.1).
CODES = {"bfloat16": (4, 16), "float8_e4m3fn": (10, 8), "float8_e4m3fnuz": (11, 8), "float8_e5m2": (12, 8),
         "int8": (0, 8)}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int), ("dtype", _DType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    pass


_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                     ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed)))]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def bf16_bits(x):
    """float32 values -> bfloat16 bit patterns, rounded to nearest even."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_values(bits):
    """bfloat16 bit patterns -> the float32 values they hold."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


class RawArray:
    """`storage` (a numpy array of the right width) seen as a CPU tensor of dtype `name`."""

    def __init__(self, storage, name):
        self.storage = np.ascontiguousarray(storage)
        self.shape, self.dtype = self.storage.shape, name
        code, bits = CODES[name]
        assert self.storage.itemsize * 8 == bits, (name, self.storage.dtype)
        self._shape = (ctypes.c_int64 * max(len(self.shape), 1))(*self.shape)
        self._managed = _Managed()  # kept alive with the array; no deleter: the array owns it all
        t = self._managed.dl_tensor
        t.data = self.storage.ctypes.data
        t.device = _Device(1, 0)  # kDLCPU
        t.ndim = len(self.shape)
        t.dtype = _DType(code, bits, 1)
        t.shape = self._shape
        t.strides = None  # compact row-major

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None):
        return _capsule_new(ctypes.addressof(self._managed), b"dltensor", None)


def bfloat16(values):
    """A bfloat16 CPU tensor holding `values` rounded to bfloat16."""
    return RawArray(bf16_bits(values), "bfloat16")
