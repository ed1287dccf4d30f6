"""DSPy programs: every baseline, HCQR and CHR, sharing one answer step and one context budget."""

from hyporag.programs.base import MCQProgram, Trace
from hyporag.programs.baselines import CoT, HyDE, Query2DocRAG, RerankRAG, Rewriting, SimpleRAG
from hyporag.programs.chr import CHR
from hyporag.programs.hcqr import HCQR
from hyporag.programs.protocol import FAST, PAPER, PROTOCOLS, Protocol, protocol_named
from hyporag.programs.registry import METHODS, PAPER_METHODS, make_program, register_method

__all__ = [
    "CHR",
    "FAST",
    "PAPER",
    "PROTOCOLS",
    "HCQR",
    "METHODS",
    "register_method",
    "PAPER_METHODS",
    "CoT",
    "HyDE",
    "MCQProgram",
    "Trace",
    "Protocol",
    "Query2DocRAG",
    "RerankRAG",
    "Rewriting",
    "SimpleRAG",
    "make_program",
    "protocol_named",
]
