"""Retrieval substrate: corpora, passage store, BM25 (bm25s or tantivy), dense (sentence-transformers + FAISS),
hybrid RRF, contrastive scoring for CHR, and the multi-query budget merge for HCQR."""

from hyporag.retrieval.bm25 import BM25Index
from hyporag.retrieval.bm25_forward import build_forward as build_bm25_forward
from hyporag.retrieval.bm25_tantivy import TantivyBM25Index
from hyporag.retrieval.corpus import CORPORA, Corpus, Passage, load_corpus
from hyporag.retrieval.dense import DenseIndex, build_faiss, default_nprobe
from hyporag.retrieval.encoders import EncoderSpec, make_encoder
from hyporag.retrieval.hit import Hit
from hyporag.retrieval.index import build_index, default_index_dir, open_index
from hyporag.retrieval.lambda_schedule import SCHEDULES, LambdaSchedule
from hyporag.retrieval.mapped import release_pages
from hyporag.retrieval.merge import MERGE_POLICIES, merge_to_budget
from hyporag.retrieval.query import WeightedQuery
from hyporag.retrieval.retriever import MODES, Retriever
from hyporag.retrieval.store import PassageStore
from hyporag.retrieval.vector_shards import VectorShards

__all__ = [
    "BM25Index",
    "CORPORA",
    "MERGE_POLICIES",
    "MODES",
    "SCHEDULES",
    "Corpus",
    "DenseIndex",
    "EncoderSpec",
    "Hit",
    "LambdaSchedule",
    "Passage",
    "PassageStore",
    "Retriever",
    "TantivyBM25Index",
    "VectorShards",
    "WeightedQuery",
    "build_bm25_forward",
    "build_faiss",
    "build_index",
    "default_index_dir",
    "default_nprobe",
    "load_corpus",
    "make_encoder",
    "merge_to_budget",
    "open_index",
    "release_pages",
]
