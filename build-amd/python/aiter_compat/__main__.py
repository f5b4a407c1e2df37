"""`python -m aiter_compat` and the `aiter-compat` console script: the C++ command line (the same
code as the CMake-built executable), run in this interpreter so it probes this environment."""
import os
import sys


def main(argv=None):
    """Runs `aiter-compat ARGS...` (ARGS: argv, or sys.argv[1:]) and returns its exit code."""
    from . import _aiter_compat

    args = sys.argv[1:] if argv is None else list(argv)
    # C++ writes to file descriptors 1 and 2 directly: anything Python buffered goes first.
    sys.stdout.flush()
    sys.stderr.flush()
    return _aiter_compat.cli_main(["aiter-compat"] + [os.fsencode(a) for a in args])


if __name__ == "__main__":
    sys.exit(main())
