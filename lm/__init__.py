"""The LM client: role LMs from DSPy/LiteLLM model strings or the embedded GGUF model, its engine and adapters,
the cache and its identities, token counts and the cost of each call."""

from hyporag.lm.client import LMRoles, RoleLM, build_lm, engine_of
from hyporag.lm.local_engine import LocalEngine, new_server

__all__ = ["LMRoles", "LocalEngine", "RoleLM", "build_lm", "engine_of", "new_server"]
