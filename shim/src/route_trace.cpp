#include "aiter_compat/shim/route_trace.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "aiter_compat/shim/dispatch.hpp"
#include "aiter_compat/probe/logging.hpp"

namespace aiter_compat {
namespace {

using Json = nlohmann::ordered_json;  // keys in the order written: lines read well by eye

// "%p" becomes the process id, so that each process of a multi-process engine can have a file.
std::string expand_path(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 1 < text.size() && text[i + 1] == 'p') {
      out += std::to_string(getpid());
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

Json candidates_json(const std::vector<Candidate>& cands) {
  Json list = Json::array();
  for (const auto& c : cands) list.push_back({{"name", c.name}, {"accepted", c.accepted}, {"reasons", c.reasons}});
  return list;
}

void at_exit() { RouteTrace::instance().write_counts(); }

}  // namespace

void add_count(std::vector<RouteCount>& counts, OpId op, RouteKind kind, const std::string& route_target, uint64_t calls) {
  const std::string& target = kind == RouteKind::refused && route_target.empty() ? "refused" : route_target;
  for (auto& c : counts)
    if (c.op == op && c.kind == kind && c.target == target) {
      c.calls += calls;
      return;
    }
  counts.push_back({op, kind, target, calls});
}

RouteTrace& RouteTrace::instance() {
  static RouteTrace* trace = new RouteTrace();  // never destroyed: at_exit and late detaches use it
  return *trace;
}

RouteTrace::RouteTrace() {
  const char* text = std::getenv("AITER_COMPAT_TRACE");
  if (!text || !*text) return;
  path_ = expand_path(text);
  // Appended, never truncated: the processes of one engine may share a file; each write() is
  // one whole line (O_APPEND keeps lines of different processes apart).
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const std::string why = std::strerror(errno);  // before the allocations below can touch errno
    log_warn(std::string("AITER_COMPAT_TRACE=") + text + ": cannot open " + path_ + " for appending (" + why +
             "); no route trace is written");
    return;
  }
  std::atexit(at_exit);
}

void RouteTrace::write_line(const std::string& line) {
  std::string text = line + "\n";
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "nothing written";
      log_warn("route trace " + path_ + ": write failed (" + why + "); no more lines are written");
      ::close(fd_);
      fd_ = -1;
      return;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void RouteTrace::attach(const Dispatcher* d) {
  std::lock_guard lock(mutex_);
  live_.push_back(d);
  front_ = d->front();
  attached_ever_ = true;
}

void RouteTrace::detach(const Dispatcher* d) {
  std::lock_guard lock(mutex_);
  auto it = std::find(live_.begin(), live_.end(), d);
  if (it == live_.end()) return;
  live_.erase(it);
  if (fd_ < 0 || counts_written_) return;
  d->for_each_route([&](const CallFeatures& f, const Route& r) {
    auto id = ids_.find(&r);
    retired_.push_back({id == ids_.end() ? 0 : id->second, f.op, r.kind, r.target, r.kernel(), r.calls.value()});
    if (id != ids_.end()) ids_.erase(id);
  });
}

void RouteTrace::decided(const Dispatcher& d, const CallFeatures& f, const Route& r) {
  if (fd_ < 0) return;
  Json features = Json::object();
  for (const auto& [name, value] : f.describe()) features[name] = value;
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || counts_written_) return;
  const int id = next_id_++;
  ids_[&r] = id;
  Json line = {{"event", "decision"},
               {"id", id},
               {"pid", static_cast<int64_t>(getpid())},
               {"front", d.front()},
               {"op", to_string(f.op)},
               {"route", to_string(r.kind)},
               {"target", r.target},
               {"kernel", r.kernel()},
               {"aiter", d.router().capabilities().aiter_label},
               {"policy", to_string(d.router().policy())},
               {"features", features},
               {"candidates", candidates_json(r.candidates)},
               {"kernels", candidates_json(r.kernels)}};
  write_line(line.dump(-1, ' ', false, Json::error_handler_t::replace));
}

void RouteTrace::write_counts() {
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || counts_written_ || !attached_ever_) return;
  counts_written_ = true;
  std::vector<Retired> decisions = retired_;
  for (const Dispatcher* d : live_)
    d->for_each_route([&](const CallFeatures& f, const Route& r) {
      auto id = ids_.find(&r);
      decisions.push_back({id == ids_.end() ? 0 : id->second, f.op, r.kind, r.target, r.kernel(), r.calls.value()});
    });
  std::sort(decisions.begin(), decisions.end(), [](const Retired& a, const Retired& b) { return a.id < b.id; });
  std::vector<RouteCount> per_route;
  uint64_t total = 0;
  Json per_decision = Json::array();
  for (const auto& r : decisions) {
    add_count(per_route, r.op, r.kind, r.target, r.calls);
    total += r.calls;
    per_decision.push_back({{"id", r.id}, {"op", to_string(r.op)}, {"route", to_string(r.kind)},
                            {"target", r.target}, {"kernel", r.kernel}, {"calls", r.calls}});
  }
  Json routes = Json::array();
  for (const auto& c : per_route)
    routes.push_back({{"op", to_string(c.op)}, {"route", to_string(c.kind)}, {"target", c.target}, {"calls", c.calls}});
  Json line = {{"event", "counts"},
               {"pid", static_cast<int64_t>(getpid())},
               {"front", front_},
               {"calls", total},
               {"routes", routes},
               {"decisions", per_decision}};
  write_line(line.dump(-1, ' ', false, Json::error_handler_t::replace));
}

void RouteTrace::forked() {
  for (const Dispatcher* d : live_)
    d->for_each_route([](const CallFeatures&, const Route& r) { r.calls.clear(); });
  for (auto& r : retired_) r.calls = 0;
  counts_written_ = false;
}

}  // namespace aiter_compat
