#include "aiter_compat/shim/selftest_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "aiter_compat/gpu_runtime/launch.hpp"
#include "aiter_compat/gpu_runtime/runtime.hpp"

namespace aiter_compat::selftest {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_file(const std::string& path, std::string* problem) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::object();  // no file yet: nothing cached
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("schema", 0) != 1) {
    if (problem) *problem = path + " is not a verdict file of schema 1 (it will be rewritten)";
    return nlohmann::json::object();
  }
  return j;
}

// Holds an advisory lock on "<path>.lock" for the scope: processes starting together merge
// their verdicts instead of overwriting each other's.
struct FileLock {
  int fd = -1;
  explicit FileLock(const std::string& path) {
    fd = ::open((path + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd >= 0) ::flock(fd, LOCK_EX);
  }
  ~FileLock() {
    if (fd >= 0) ::close(fd);  // releases the lock
  }
};

}  // namespace

std::string cache_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string dir = xdg && *xdg ? std::string(xdg) : home && *home ? std::string(home) + "/.cache" : "";
  return dir.empty() ? "" : dir + "/aiter-compat/selftest-verdicts.json";
}

std::string cache_key(gpu::Vendor v, int device) {
  const std::string arch = gpu::device_arch(v, device);
  // The tiled decode families' split cases ran in one split-merge mode: a verdict holds for it.
  // (The warpgroup family's cases run on both of its kernels in every mode of
  // AITER_COMPAT_WGMMA_PRODUCER: a verdict holds whichever the launcher takes.)
  return arch + "|" + gpu::runtime_version(v) + "|" + AITER_COMPAT_VERSION + "+" + gpu::code_object_id(arch) +
         (gpu::split_merge_folded() ? "|folded-merge" : "");
}

std::string cache_family(const gpu::FamilyKey& k) {
  return gpu::kernel_row(k.row).name + ":" + gpu::dtype_suffix(k.dtype) + ":" + std::to_string(k.head_dim);
}

std::map<std::string, gpu::FamilyResult> load_cache(const std::string& key, std::string* problem) {
  std::map<std::string, gpu::FamilyResult> out;
  const std::string path = cache_path();
  if (path.empty()) return out;
  const nlohmann::json j = read_file(path, problem);
  auto entries = j.find("entries");
  if (entries == j.end() || !entries->is_object()) return out;
  auto it = entries->find(key);
  if (it == entries->end() || !it->is_object()) return out;
  for (const auto& [family, v] : it->items()) {
    if (!v.is_object()) continue;
    const std::string verdict = v.value("verdict", "");
    if (verdict != "pass" && verdict != "fail") continue;
    gpu::FamilyResult r;
    r.verdict = verdict == "pass" ? gpu::Verdict::passed : gpu::Verdict::failed;
    r.max_error = v.value("max_error", 0.0);
    r.bound = v.value("bound", 0.0);
    r.detail = v.value("detail", "");
    r.source = "cache";
    out[family] = r;
  }
  return out;
}

bool store_cache(const std::string& key, const std::string& family, const gpu::FamilyResult& r, std::string* problem) {
  const std::string path = cache_path();
  if (path.empty()) {
    if (problem) *problem = "neither XDG_CACHE_HOME nor HOME is set";
    return false;
  }
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) {
    if (problem) *problem = "cannot create " + fs::path(path).parent_path().string() + ": " + ec.message();
    return false;
  }
  FileLock lock(path);
  nlohmann::json j = read_file(path, nullptr);
  j["schema"] = 1;
  j["entries"][key][family] = {{"verdict", gpu::to_string(r.verdict)},
                               {"max_error", std::isfinite(r.max_error) ? r.max_error : 1e300},
                               {"bound", r.bound},
                               {"millis", r.millis},
                               {"detail", r.detail}};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(1) << '\n';
    if (!out) {
      if (problem) *problem = "cannot write " + tmp;
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    if (problem) *problem = "cannot replace " + path + ": " + ec.message();
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

}  // namespace aiter_compat::selftest
