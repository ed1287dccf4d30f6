"""Speculative decoding in the in-process llama.cpp engine (`--speculative none|ngram|ngram-mod|draft[:MODEL]`).

Much of what hyporag's steps write copies the prompt (option texts, the question's clues), which is what llama.cpp's
speculative decoding exploits: n-gram lookup proposes the tokens that followed the same n-gram earlier in the
context, a draft model (the 0.5B Qwen2.5-Coder shares the 1.5B's tokenizer) proposes its own greedy tokens, and
the target model verifies a whole proposal in one batch. At temperature 0 greedy verification keeps the target's
own tokens, so the replies should not change; tests/lm/test_speculative.py checks that byte for byte, and a mode
found not to be exact is refused for evaluation (`NOT_EXACT`). Because the replies do not change, the mode is
recorded beside the model's identity but is not part of DSPy's cache key.
"""

from __future__ import annotations

from dataclasses import dataclass

from hyporag.errors import ConfigError

MODES = ("none", "ngram", "ngram-mod", "draft")
DEFAULT_DRAFT = "qwen2.5-coder-0.5b"
NOT_EXACT: dict[str, str] = {}  # mode -> why it is refused (filled from the exactness test's findings)


@dataclass(frozen=True)
class Speculative:
    """A parsed `--speculative` value: the mode and, for `draft`, the draft model (an alias or a .gguf path)."""

    mode: str = "none"
    draft: str | None = None

    @classmethod
    def parse(cls, text: str | None) -> Speculative:
        text = (text or "none").strip()
        mode, _, model = text.partition(":")
        if mode not in MODES:
            raise ConfigError(f"--speculative {text!r}: use one of none, ngram, ngram-mod, draft or draft:MODEL")
        if model and mode != "draft":
            raise ConfigError(f"--speculative {text!r}: only draft takes a model (draft:qwen2.5-coder-0.5b)")
        if mode in NOT_EXACT:
            raise ConfigError(f"--speculative {mode}: refused, its replies differ from plain decoding "
                              f"({NOT_EXACT[mode]})")
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
            from hyporag.lm.gguf import resolve_model_path

            spec.types = [kinds.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
            spec.draft.mparams.path = str(resolve_model_path(self.draft))
            spec.draft.cpuparams.n_threads = threads
            spec.draft.cpuparams_batch.n_threads = threads
            spec.draft.n_max = 8  # tokens proposed a step: hyporag's copied spans are short phrases
