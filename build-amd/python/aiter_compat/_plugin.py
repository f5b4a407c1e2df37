"""What the engines' plugin functions share (vllm_plugin, sglang_plugin): read
AITER_COMPAT_INSTALL, call install(), never raise.

AITER_COMPAT_INSTALL=0 (or false, no, off) leaves AITer as it is; 1, true, yes, on or unset
installs; any other value installs with a warning. Every log line starts with the engine's
label ("vLLM plugin: ...", "SGLang plugin: ...").
"""
import os
import sys

OFF = ("0", "false", "no", "off")
ON = ("", "1", "true", "yes", "on")


def _log(level, text):
    try:
        from . import _aiter_compat as _ext
        _ext._log(level, text)
    except Exception:  # the logger itself failed (or the extension is missing): stderr, never raise
        try:
            sys.stderr.write(f"[aiter_compat] [{'warning' if level == 'warn' else level}] {text}\n")
        except Exception:
            pass


def install_from_plugin(engine_label):
    """install() for an engine's plugin hook; engine_label ("vLLM", "SGLang") names it in the log.
    Returns install()'s list of patched paths, or [] when AITER_COMPAT_INSTALL turns it off or
    anything fails (one warning line then). Engines call plugin functions in every process, some
    without a guard: this never raises an Exception."""
    try:
        flag = os.environ.get("AITER_COMPAT_INSTALL", "1").strip().lower()
        if flag in OFF:
            _log("info", f"{engine_label} plugin: AITER_COMPAT_INSTALL={flag}: AITer's entry points left as they are")
            return []
        if flag not in ON:
            _log("warn", f"{engine_label} plugin: AITER_COMPAT_INSTALL={flag!r} is not one of 0/1 (or false/true, "
                         "no/yes, off/on); installing")
        from ._install import install
        return install()
    except Exception as exc:  # install() does not raise; this guards the engine against a bug here
        _log("warn", f"{engine_label} plugin: install failed: {type(exc).__name__}: {exc}")
        return []
