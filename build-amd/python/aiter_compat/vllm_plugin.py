"""vLLM general plugin: `pip install aiter-compat` registers register() in the entry-point group
`vllm.general_plugins`, which vLLM loads in every process (API server, engine core, workers)
before it builds attention backends. register() calls aiter_compat.install().

AITER_COMPAT_INSTALL=0 (or false, no, off) turns it off. vLLM calls plugin functions without a
guard, so this never raises: whatever goes wrong is one log line. The logic is _plugin's, shared
with the SGLang plugin.
"""
from ._plugin import install_from_plugin


def register():
    return install_from_plugin("vLLM")
