#pragma once
// The command line's whole behaviour, callable from the aiter-compat executable and from the
// Python extension (the wheel's `aiter-compat` console script), so both run the same code.

namespace aiter_compat::cli {

// Parses argv (argv[0] is ignored) and runs the subcommand; returns the process exit code.
// Writes to the process's stdout and stderr and flushes both before returning.
int run(int argc, const char* const* argv);

}  // namespace aiter_compat::cli
