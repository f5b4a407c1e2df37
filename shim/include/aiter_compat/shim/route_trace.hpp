#pragma once
// The route trace (AITER_COMPAT_TRACE=FILE): one JSON line per new route decision, written when
// the decision is made, and one line of call counts per route when the process exits. Calls
// themselves write nothing: each only bumps its route's counter (Route::calls), which this reads
// at exit. Schema: docs/trace.md.
//
// One trace per copy of the dispatch core in the process (the Python module and the C API each
// link one); each line names its front. Dispatchers attach at construction and detach when
// destroyed, handing over their counts, so the exit line covers every dispatcher the process had.
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "aiter_compat/shim/features.hpp"
#include "aiter_compat/shim/router.hpp"

namespace aiter_compat {

class Dispatcher;

// Calls per route target of one op, summed over the feature sets that chose it ("refused" is the
// target of calls no route took).
struct RouteCount {
  OpId op;
  RouteKind kind;
  std::string target;
  uint64_t calls = 0;
};

// Adds `calls` to the entry of (op, kind, target) in `counts`, or appends one.
void add_count(std::vector<RouteCount>& counts, OpId op, RouteKind kind, const std::string& target, uint64_t calls);

class RouteTrace {
 public:
  // The process's trace, opened from AITER_COMPAT_TRACE on first use ("%p" in the name becomes
  // the process id). Never destroyed: the exit line is written from an atexit handler.
  static RouteTrace& instance();

  bool enabled() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

  void attach(const Dispatcher* d);
  void detach(const Dispatcher* d);  // keeps its counts for the exit line
  // One line for a route just decided (by the call that decided it).
  void decided(const Dispatcher& d, const CallFeatures& f, const Route& r);
  // The counts line; written once per process (later calls do nothing), and only where a
  // dispatcher was ever made.
  void write_counts();
  // In a child just forked: its calls start from zero (stats() and its counts line count its own
  // calls, not its parent's), and it writes its own counts line. Takes no lock: call it only
  // where no other thread of the parent can have held this copy's locks at the fork (the Python
  // module: every lock is taken with the GIL held, and fork() holds the GIL).
  void forked();

 private:
  RouteTrace();
  void write_line(const std::string& line);

  struct Retired {  // a decision of a dispatcher already destroyed (and, at exit, of the live ones)
    int id;
    OpId op;
    RouteKind kind;
    std::string target, kernel;
    uint64_t calls;
  };

  std::mutex mutex_;
  int fd_ = -1;
  std::string path_;
  std::string front_;  // of the dispatchers attached (one front per copy of the core)
  bool counts_written_ = false;
  bool attached_ever_ = false;
  int next_id_ = 1;
  std::unordered_map<const Route*, int> ids_;  // decision ids, for the exit line
  std::vector<const Dispatcher*> live_;
  std::vector<Retired> retired_;
};

}  // namespace aiter_compat
