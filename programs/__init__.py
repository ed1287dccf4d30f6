"""DSPy programs: every baseline, HCQR and CHR, sharing one answer step and one context budget."""

from hyporag.programs.base import MCQProgram
from hyporag.programs.baselines import CoT, HyDE, Query2DocRAG, RerankRAG, Rewriting, SimpleRAG
from hyporag.programs.chr import CHR
from hyporag.programs.hcqr import HCQR
from hyporag.programs.protocol import FAST, PAPER, PROTOCOLS, Protocol, protocol_named
from hyporag.programs.registry import METHODS, PAPER_METHODS, make_program

__all__ = [
    "CHR",
    "FAST",
    "PAPER",
    "PROTOCOLS",
    "HCQR",
    "METHODS",
    "PAPER_METHODS",
    "CoT",
    "HyDE",
    "MCQProgram",
    "Protocol",
    "Query2DocRAG",
    "RerankRAG",
    "Rewriting",
    "SimpleRAG",
    "make_program",
    "protocol_named",
]
