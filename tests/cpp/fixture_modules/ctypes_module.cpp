// Shaped like an AITer module with the plain C ABI (v0.1.13+): a few exported C functions, the
// rest hidden.
#define EXPORT extern "C" __attribute__((visibility("default")))
EXPORT int aiter_ctypes_abi_version() { return 2; }
EXPORT const char* aiter_get_last_error() { return nullptr; }
EXPORT void aiter_clear_last_error() {}
EXPORT void pa_fwd(void*, void*, void*, void*) {}
int hidden_helper() { return 1; }
