#include "aiter_compat/probe/native_probe.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "aiter_compat/probe/elf_reader.hpp"

namespace aiter_compat {
namespace fs = std::filesystem;
namespace {

struct LoadResult {
  std::optional<bool> loads;
  std::string message;
};

// dlopen runs the module's constructors, so it happens in a child: a crash or a hang there is
// reported instead of taking the probe (or the engine that called it) down.
LoadResult try_dlopen_isolated(const std::string& path, int timeout_ms) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {std::nullopt, std::string("pipe: ") + std::strerror(errno)};
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {std::nullopt, std::string("fork: ") + std::strerror(errno)};
  }
  if (pid == 0) {
    ::close(fds[0]);
    void* h = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
    const char* err = h ? "" : ::dlerror();
    std::string msg = std::string(h ? "1" : "0") + (err ? err : "");
    ssize_t ignored = ::write(fds[1], msg.data(), msg.size());
    (void)ignored;
    ::_exit(0);  // no atexit handlers, no destructors of the parent's objects
  }
  ::close(fds[1]);
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    char buf[4096];
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return {std::nullopt, "dlopen did not finish in " + std::to_string(timeout_ms) + " ms"};
  if (WIFSIGNALED(status))
    return {false, "crashed while loading (signal " + std::to_string(WTERMSIG(status)) + ", " +
                       strsignal(WTERMSIG(status)) + ")"};
  if (out.empty()) return {std::nullopt, "the loader child reported nothing"};
  return {out[0] == '1', out.substr(1)};
}

}  // namespace

const std::vector<std::string>& interesting_symbols() {
  static const std::vector<std::string> names = {
      "aiter_ctypes_abi_version", "aiter_get_last_error", "aiter_clear_last_error",
      "pa_fwd", "mha_fwd", "mha_varlen_fwd", "fmha_v3_fwd", "mha_batch_prefill"};
  return names;
}

std::vector<std::string> jit_module_dirs(const std::string& aiter_path) {
  // AITer's JIT writes to $AITER_JIT_DIR, else aiter/jit inside the package, else ~/.aiter/jit.
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("AITER_JIT_DIR"); env && *env) dirs.emplace_back(env);
  if (!aiter_path.empty()) dirs.push_back((fs::path(aiter_path) / "jit").string());
  if (const char* home = std::getenv("HOME"); home && *home) dirs.push_back((fs::path(home) / ".aiter" / "jit").string());
  return dirs;
}

NativeReport probe_native(const NativeProbeOptions& options) {
  NativeReport report;
  report.searched = jit_module_dirs(options.aiter_path);
  std::set<std::string> seen;
  for (const auto& dir : report.searched) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (name.rfind("module_", 0) == 0 && it->path().extension() == ".so") files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      std::string real = fs::weakly_canonical(file, ec).string();
      if (!seen.insert(real.empty() ? file.string() : real).second) continue;
      NativeModule m;
      m.name = file.stem().string();
      m.path = file.string();
      ElfExports elf = read_elf_exports(m.path);
      m.elf_ok = elf.ok;
      m.elf_error = elf.error;
      m.machine = elf.machine;
      m.export_count = elf.symbols.size();
      if (elf.ok && !elf.machine_matches_host) {
        m.elf_ok = false;
        m.elf_error = "built for " + elf.machine + ", not this machine";
      }
      std::set<std::string> exported(elf.symbols.begin(), elf.symbols.end());
      for (const auto& s : interesting_symbols())
        if (exported.count(s)) m.exports.push_back(s);
      for (const auto& s : elf.symbols)
        if (s.rfind("PyInit_", 0) == 0) m.exports.push_back(s);
      if (options.try_dlopen && m.elf_ok) {
        LoadResult load = try_dlopen_isolated(m.path, options.dlopen_timeout_ms);
        m.loads = load.loads;
        m.dlerror = load.message;
      }
      report.modules.push_back(std::move(m));
    }
  }
  return report;
}

}  // namespace aiter_compat
