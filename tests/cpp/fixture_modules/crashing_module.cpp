// A module whose constructor kills the process that loads it: the probe must survive it.
#include <csignal>
namespace {
struct CrashOnLoad {
  CrashOnLoad() { std::raise(SIGSEGV); }
} crash_on_load;
}  // namespace
extern "C" __attribute__((visibility("default"))) int aiter_ctypes_abi_version() { return 2; }
