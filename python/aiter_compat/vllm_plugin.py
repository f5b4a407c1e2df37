"""vLLM general plugin: `pip install aiter-compat` registers register() in the entry-point group
`vllm.general_plugins`, which vLLM loads in every process (API server, engine core, workers)
before it builds attention backends. register() calls aiter_compat.install().

AITER_COMPAT_INSTALL=0 (or false, no, off) turns it off. vLLM calls plugin functions without a
guard, so this never raises: whatever goes wrong is one log line.
"""
import os

OFF = ("0", "false", "no", "off")
ON = ("", "1", "true", "yes", "on")


def register():
    from . import _aiter_compat as _ext
    flag = os.environ.get("AITER_COMPAT_INSTALL", "1").strip().lower()
    if flag in OFF:
        _ext._log("info", f"vLLM plugin: AITER_COMPAT_INSTALL={flag}: AITer's entry points left as they are")
        return []
    if flag not in ON:
        _ext._log("warn", f"vLLM plugin: AITER_COMPAT_INSTALL={flag!r} is not one of 0/1 (or false/true, no/yes, "
                          "off/on); installing")
    try:
        from ._install import install
        return install()
    except Exception as exc:  # install() does not raise; this guards vLLM against a bug here
        _ext._log("warn", f"vLLM plugin: install failed: {type(exc).__name__}: {exc}")
        return []
