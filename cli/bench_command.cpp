// `aiter-compat bench`: the benchmark is Python (it drives torch and AITer), so this runs
// `python -m aiter_compat.bench` with the same arguments and returns its exit code. The Python
// is $AITER_COMPAT_PYTHON, else the interpreter this command runs in (the wheel's console
// script), else python3 on PATH; $AITER_COMPAT_PYTHONPATH is put in front of PYTHONPATH (a build
// tree's python/ directory).
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "commands.hpp"

namespace aiter_compat::cli {

int run_bench_command(const BenchArgs& args) {
  const std::vector<std::string>& extras = args.passthrough;
  const char* chosen = std::getenv("AITER_COMPAT_PYTHON");
  const std::string python = chosen && *chosen ? chosen : "python3";
  if (const char* path = std::getenv("AITER_COMPAT_PYTHONPATH"); path && *path) {
    const char* old = std::getenv("PYTHONPATH");
    const std::string joined = std::string(path) + (old && *old ? ":" + std::string(old) : "");
    setenv("PYTHONPATH", joined.c_str(), 1);
  }
  std::vector<std::string> argv = {python, "-m", "aiter_compat.bench"};
  argv.insert(argv.end(), extras.begin(), extras.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  std::cout.flush();
  const pid_t pid = fork();
  if (pid < 0) {
    std::cerr << "aiter-compat bench: fork failed: " << std::strerror(errno) << '\n';
    return 1;
  }
  if (pid == 0) {
    execvp(raw[0], raw.data());
    std::cerr << "aiter-compat bench: cannot run " << python << ": " << std::strerror(errno)
              << " (set AITER_COMPAT_PYTHON to a Python with aiter_compat and torch)\n";
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace aiter_compat::cli
