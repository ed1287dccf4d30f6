"""An OpenAI-compatible server behind a proxy with HTTP basic auth (`--api-base http://user:pw@host/v1`), on DSPy's
native engine.

DSPy sends an LM whose settings hold extra headers through LiteLLM instead of its native engine: about 10 ms of
Python more per call on an idle machine, and seconds per call under load. Here the credentials travel in the native
engine's own transport instead: `Authorization: Basic` for the proxy and, with `--api-key`, the key as `X-Api-Key`
for the server behind it (llama.cpp's server reads it, as do most gateways; `Authorization` is the proxy's). The
LM reports the capabilities DSPy's native route reports for the same server, so its requests are the same.
"""

from __future__ import annotations

from dataclasses import replace

import dspy
from dspy._vendor.lm15.transports import StdlibTransport
from dspy.clients.capabilities import capabilities
from dspy.clients.engines.lm15_engine import LM15Engine
from dspy.lm15 import RouterConfig

from hyporag.foundation.redact import basic_auth, split_userinfo
from hyporag.lm.model_identity import digest, register, server_identity


class HeaderTransport(StdlibTransport):
    """lm15's stdlib transport, sending `headers` on every request in place of any of the same name."""

    def __init__(self, headers: list[tuple[str, str]], **settings):
        super().__init__(**settings)
        self._headers, self._settings = list(headers), settings

    def copy(self) -> HeaderTransport:
        return HeaderTransport(self._headers, **self._settings)

    def stream(self, request):
        names = {name.lower() for name, _ in self._headers}
        request.headers = [(k, v) for k, v in request.headers if k.lower() not in names] + self._headers
        return super().stream(request)


class AuthedEngine(LM15Engine):
    """DSPy's native engine for one endpoint, its requests carrying the proxy's and the server's credentials."""

    def __init__(self, spec: str, endpoint: str, api_key: str | None, transport: HeaderTransport, twin: dspy.LM):
        provider = LM15Engine(RouterConfig(env={})).resolve(spec).provider
        super().__init__(RouterConfig(env={}, api_keys={provider: api_key or "none"}, base_urls={provider: endpoint},
                                      transport=transport))
        self.spec = spec
        found = capabilities(twin)  # what the native route would declare for this server: the same requests
        self.supports_function_calling, self.supports_reasoning = found.function_calling, found.reasoning
        self.supports_response_schema, self.supported_params = found.response_schema, found.params

    def __deepcopy__(self, memo: dict) -> AuthedEngine:
        return self  # one transport and its connections, shared by the copies DSPy makes of programs

    def complete(self, request):
        return super().complete(replace(request, model=self.spec))


def authed_lm(spec: str, api_base: str, api_key: str | None, timeout: float, **settings) -> dspy.LM:
    """A `dspy.LM` for `spec` at an api_base that carries a user and password."""
    endpoint, credentials = split_userinfo(api_base.rstrip("/"))
    headers = [("Authorization", basic_auth(*credentials))] + ([("X-Api-Key", api_key)] if api_key else [])
    transport = HeaderTransport(headers, read_timeout=timeout, write_timeout=timeout, pool_timeout=timeout)
    twin = dspy.LM(spec, api_base=endpoint, api_key=api_key or "none", timeout=timeout)
    engine = AuthedEngine(spec, endpoint, api_key, transport, twin)
    identity = server_identity(api_base)  # asked with the credentials; recorded without them
    # DSPy keys its cache on the model name: it names this server (not the alias), as an embedded model's does
    lm = dspy.LM(f"{spec}@auth-{digest(identity)[:12]}", engine=engine, **settings)
    lm._hyporag_identity = identity
    lm._hyporag_endpoints = [endpoint]  # a served model: the JSON adapter and logprobs, as for any --api-base
    register(lm.model, "", identity)
    return lm
