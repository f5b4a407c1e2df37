"""Whether a build's code objects may be reused instead of compiled again
(cmake/FallbackKernels.cmake's AITER_COMPAT_KERNELS_FROM): the mutation check's copy and the
test suite's wheel build both ask."""
import glob
import os


def fresh_code_objects(root, archs=None):
    """root/build/kernels when the code objects of `archs` (every one there, if None) exist and
    are newer than every kernel source under root/fallback_kernels/gpu; None otherwise."""
    folder = os.path.join(root, "build", "kernels")
    sources = glob.glob(os.path.join(root, "fallback_kernels", "gpu", "*"))
    objects = ([os.path.join(folder, f"attention_{a}.co") for a in archs] if archs is not None
               else glob.glob(os.path.join(folder, "attention_*.co")))
    if not sources or not objects or not all(os.path.isfile(o) for o in objects):
        return None
    newest_source = max(os.path.getmtime(p) for p in sources)
    return folder if all(os.path.getmtime(o) > newest_source for o in objects) else None
