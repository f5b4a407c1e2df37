#pragma once
// The Python channels through CPython's C API. Works in a process that already runs Python (the
// aiter_compat module: it attaches to the host interpreter) and in one that does not (the CLI:
// it starts an interpreter once and never finalises it, since torch may have been imported).
#include <string>

#include "aiter_compat/probe/readings.hpp"

namespace aiter_compat {

// The pending Python exception as "Type: message", cleared; the GIL must be held.
std::string fetch_python_error();

// When this library started the interpreter (without `site`, to start faster), runs site.main()
// once so site-packages and .pth files are on sys.path, as in a plain `python3`. Anything that
// imports installed packages (aiter, torch) calls it first; the GIL must be held.
void run_site_once();

class EmbeddedPythonReader : public PythonReader {
 public:
  ChannelReading read(Channel channel, const std::string& aiter_root) override;
};

}  // namespace aiter_compat
