// A module that exports nothing the probe looks for.
extern "C" __attribute__((visibility("default"))) int unrelated_entry() { return 7; }
