"""Speculative decoding in the in-process llama.cpp engine (`--speculative none|ngram|ngram-mod|draft[:MODEL]`).

Much of what hyporag's steps write copies the prompt (option texts, the question's clues), which is what llama.cpp's
speculative decoding exploits: n-gram lookup proposes the tokens that followed the same n-gram earlier in the
context, a draft model (the 0.5B Qwen2.5-Coder shares the 1.5B's tokenizer) proposes its own greedy tokens, and
the target model verifies a whole proposal in one batch. At temperature 0 greedy verification should keep the
target's own tokens, but on this CPU it does not always: a batch of tokens goes through other matmul kernels than
one token does, the logits round differently, and a near-tie between two tokens can flip. A mode whose replies
were measured to differ is refused for evaluation (`NOT_EXACT`, with the reason); today that is every mode, and
none was faster on 2 cores either. A mode that passes would be recorded beside the model's identity but not keyed
in DSPy's cache, its replies being plain decoding's.
"""

from __future__ import annotations

from dataclasses import dataclass

from hyporag.foundation.errors import ConfigError
from hyporag.lm.gguf import resolve_model_path

MODES = ("none", "ngram", "ngram-mod", "draft")
DEFAULT_DRAFT = "qwen2.5-coder-0.5b"
# mode -> why it is refused: measured by bench/speculative_exactness.py (docs/results/speed.md) on the 1.5B, 60
# requests of cot, hcqr and chr under both protocols replayed on fresh servers; a second plain server differed on 0
# of 60, so the differences are the mode's (the target verifies drafts in batches, whose kernels round differently from
# one-token decoding, and a greedy near-tie flips)
NOT_EXACT: dict[str, str] = {
    "ngram": "replies differed from plain decoding on 7 of 60 recorded requests of the 1.5B",
    "ngram-mod": "replies differed from plain decoding on 17 of 60 recorded requests of the 1.5B",
    "draft": "replies differed from plain decoding on 28 of 60 recorded requests of the 1.5B",
}


@dataclass(frozen=True)
class Speculative:
    """A parsed `--speculative` value: the mode and, for `draft`, the draft model (an alias or a .gguf path)."""

    mode: str = "none"
    draft: str | None = None

    @classmethod
    def parse(cls, text: str | None, *, measuring: bool = False) -> Speculative:
        """`measuring`: a bench or exactness check building the mode itself (lm.local_engine's servers) may take a
        mode that evaluation refuses; everything a user builds (build_lm) parses strictly."""
        text = (text or "none").strip()
        mode, _, model = text.partition(":")
        if mode not in MODES:
            raise ConfigError(f"--speculative {text!r}: use one of none, ngram, ngram-mod, draft or draft:MODEL")
        if model and mode != "draft":
            raise ConfigError(f"--speculative {text!r}: only draft takes a model (draft:qwen2.5-coder-0.5b)")
        if mode in NOT_EXACT and not measuring:
            raise ConfigError(f"--speculative {mode}: refused for evaluation, {NOT_EXACT[mode]} "
                              "(docs/results/speed.md); use --speculative none")
        return cls(mode, (model or DEFAULT_DRAFT) if mode == "draft" else None)

    @property
    def label(self) -> str:
        return f"draft:{self.draft}" if self.mode == "draft" else self.mode

    def apply(self, params, threads: int) -> None:
        """Set xllamacpp's CommonParams.speculative for this mode (nothing for `none`)."""
        if self.mode == "none":
            return
        import xllamacpp

        kinds = xllamacpp.common_speculative_type
        spec = params.speculative
        if self.mode == "ngram":
            spec.types = [kinds.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
        elif self.mode == "ngram-mod":
            spec.types = [kinds.COMMON_SPECULATIVE_TYPE_NGRAM_MOD]
        else:
            spec.types = [kinds.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
            spec.draft.mparams.path = str(resolve_model_path(self.draft))
            spec.draft.cpuparams.n_threads = threads
            spec.draft.cpuparams_batch.n_threads = threads
            spec.draft.n_max = 8  # tokens proposed a step: hyporag's copied spans are short phrases
