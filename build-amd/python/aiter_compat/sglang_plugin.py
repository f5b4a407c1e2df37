"""SGLang general plugin: `pip install aiter-compat` registers register() in the entry-point group
`sglang.srt.plugins`, whose zero-argument functions SGLang calls first thing in every scheduler
process, before the attention backend is imported. register() calls aiter_compat.install(), so
the AITer names SGLang's aiter backend binds when it is imported are the routes.

AITER_COMPAT_INSTALL=0 (or false, no, off) turns it off; SGLang's own SGLANG_PLUGINS allow-list
applies too. This never raises: whatever goes wrong is one log line. The logic is _plugin's,
shared with the vLLM plugin.
"""
from ._plugin import install_from_plugin


def register():
    return install_from_plugin("SGLang")
