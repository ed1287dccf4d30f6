"""Pools of servers (`--api-base` repeated) as a user can get them wrong: members serving different models under
one alias are refused before any call, and two pools under one model string for two roles keep their own cache
and their own counts. Fake OpenAI-compatible servers on 127.0.0.1 (what each reports is the point)."""

from __future__ import annotations

import dspy
import pytest

from hyporag.foundation.errors import ModelError
from hyporag.lm.client import LMRoles, build_lm
from hyporag.testing import fake_openai


def test_a_pool_whose_members_serve_different_models_is_refused(tmp_path):
    with fake_openai(["qwen"], "/models/big.gguf") as big, fake_openai(["qwen"], "/models/small.gguf") as small:
        with pytest.raises(ModelError, match=r"serve different models .*big.gguf.*small.gguf"):
            build_lm("openai/qwen", api_base=[big.base(), small.base()], api_key="k")
        assert big.completions == small.completions == 0
        build_lm("openai/qwen", api_base=[big.base(), big.base() + "/"], api_key="k")  # one model: fine


def test_two_pools_of_one_model_string_keep_their_cache_and_counts_apart(tmp_path):
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)
    with fake_openai(["m"], "/a.gguf", {"answer": "from-a"}) as a1, fake_openai(["m"], "/a.gguf",
                                                                                  {"answer": "from-a"}) as a2, \
            fake_openai(["m"], "/b.gguf", {"answer": "from-b"}) as b1, fake_openai(["m"], "/b.gguf",
                                                                                  {"answer": "from-b"}) as b2:
        roles = LMRoles.from_specs("openai/m", role_api_bases={"hypothesis": [a1.base(), a2.base()],
                                                               "answer": [b1.base(), b2.base()],
                                                               "judge": [b1.base(), b2.base()]}, api_key="k")
        predict = dspy.Predict("question -> answer")
        with roles.hypothesis.context():
            assert predict(question="same").answer == "from-a"
        with roles.answer.context():
            assert predict(question="same").answer == "from-b"  # not the hypothesis pool's cached reply
        assert b1.completions + b2.completions == 1
        usage = roles.endpoint_usage()
    assert len(usage) == 2  # each pool its own entry, each call counted where it went
    by_roles = {tuple(entry["roles"]): sum(e["calls"] for e in entry["endpoints"].values())
                for entry in usage.values()}
    assert by_roles == {("hypothesis",): 1, ("answer", "judge"): 1}
