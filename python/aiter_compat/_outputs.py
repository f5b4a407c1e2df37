"""Makes output tensors with the input's own framework, so a call returns the kind of tensor it
was given (torch on torch's device, cupy, or numpy). Used by the fallback routes only."""


def empty_like(like, shape, float32):
    module = type(like).__module__.split(".")[0]
    if module == "torch":
        import torch
        return torch.empty(shape, dtype=torch.float32 if float32 else like.dtype, device=like.device)
    if module == "cupy":
        import cupy
        with cupy.cuda.Device(like.device.id):
            return cupy.empty(shape, dtype="float32" if float32 else like.dtype)
    import numpy
    return numpy.empty(shape, dtype=numpy.float32 if float32 else like.dtype)


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
