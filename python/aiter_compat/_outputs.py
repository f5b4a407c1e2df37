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
