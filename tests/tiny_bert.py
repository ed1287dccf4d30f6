"""A BERT built from a config with random weights and a word-level vocabulary: a real transformers encoder for
tests, made in a second with nothing downloaded."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

WORDS = ["query", ":", "passage", "insulin", "beta", "cells", "alpha", "glucagon", "kidney", "blood", "bone",
         "liver", "heart", "the", "of", "secrete", "pancreas", "thyroid", "hormone", "cell", "osteoclasts", "."]


def tiny_bert(directory: Path, seed: int, words: Sequence[str] = WORDS, hidden: int = 16, layers: int = 1,
              max_positions: int = 64) -> str:
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    directory.mkdir(parents=True)
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(directory)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(words) + 5, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=2, intermediate_size=2 * hidden, max_position_embeddings=max_positions)
    BertModel(config).save_pretrained(directory)
    return str(directory)
