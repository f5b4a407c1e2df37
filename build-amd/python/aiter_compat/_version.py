"""aiter_compat.__version__: the installed distribution's metadata, which scikit-build-core writes
from CMakeLists.txt's project() version. A build tree (build/python) has no metadata: the
extension's compiled-in copy of the same number stands in."""
import os
from importlib import metadata

from . import _aiter_compat


def version():
    try:
        dist = metadata.distribution("aiter-compat")
    except metadata.PackageNotFoundError:
        return _aiter_compat.__version__
    # Metadata of another copy (a pip-installed aiter-compat while this one is a build tree)
    # does not describe this package.
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        mine = os.path.samefile(str(dist.locate_file("aiter_compat")), here)
    except OSError:
        mine = False
    return dist.version if mine else _aiter_compat.__version__
