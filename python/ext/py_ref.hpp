#pragma once
// An owning PyObject reference; the extension's code holds the GIL wherever these live.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <utility>

namespace aiter_compat::py {

class Ref {
 public:
  Ref() = default;
  explicit Ref(PyObject* owned) : p_(owned) {}
  static Ref borrow(PyObject* b) {
    Py_XINCREF(b);
    return Ref(b);
  }
  Ref(const Ref& o) : p_(o.p_) { Py_XINCREF(p_); }
  Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Ref& operator=(Ref o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Ref() { Py_XDECREF(p_); }
  PyObject* get() const { return p_; }
  PyObject* release() { return std::exchange(p_, nullptr); }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  PyObject* p_ = nullptr;
};

// Thrown when a Python error is already set; the entry point returns nullptr.
struct PythonErrorSet {};

inline Ref check(PyObject* owned) {
  if (!owned) throw PythonErrorSet{};
  return Ref(owned);
}

}  // namespace aiter_compat::py
