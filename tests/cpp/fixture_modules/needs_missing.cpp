// Links against fixture_module_plain; copied alone into a folder without it, its dependency is
// missing, as a JIT module is on a machine without ROCm's libraries.
extern "C" int unrelated_entry();
extern "C" __attribute__((visibility("default"))) int pa_fwd() { return unrelated_entry(); }
