"""Makes output tensors with the input's own framework, so a call returns the kind of tensor it
was given (cupy or numpy here; torch tensors are made in C++ through Tensor.new_empty), and finds
the framework's current stream (torch only when torch._C lacks its raw-stream getter). Used by
the fallback routes only."""


def empty_like(like, shape, dtype):
    """An empty array of `shape` on like's device, in like's dtype or the one named ("float32",
    "bfloat16": numpy and cupy know the latter only with ml_dtypes imported)."""
    module = type(like).__module__.split(".")[0]
    if module == "cupy":
        import cupy
        with cupy.cuda.Device(like.device.id):
            return cupy.empty(shape, dtype=dtype or like.dtype)
    import numpy
    return numpy.empty(shape, dtype=dtype or like.dtype)


def current_stream(like):
    """The stream the caller's framework would run on now, for like's device (0: the default)."""
    module = type(like).__module__.split(".")[0]
    if module == "torch" and like.is_cuda:
        import torch
        return torch.cuda.current_stream(like.device).cuda_stream
    if module == "cupy":
        import cupy
        return cupy.cuda.get_current_stream().ptr
    return 0


def call_on_stream(stream, fn, kwargs):
    """fn(**kwargs) with `stream` (a torch stream, or a raw handle) as torch's current stream:
    an AITer route given an explicit stream= runs there."""
    import torch
    if not isinstance(stream, torch.cuda.Stream):
        stream = torch.cuda.ExternalStream(int(stream))
    with torch.cuda.stream(stream):
        return fn(**kwargs)
