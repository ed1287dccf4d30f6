"""`hyporag.embed`: a corpus's passage vectors in shards, for `index build --vectors`, here or on a Ray cluster.

    report = hyporag.embed(EmbedSettings(out="vectors/medcorp-minilm", ray="auto", concurrency=8),
                           RunConfig(corpus="medcorp-local", embedder="minilm"))
    hyporag.build_index(corpus, vectors=report.out, ...)

Passages are those `index build` stores (long ones split into `<id>#n` the same way), so the ids match. Each shard
is written atomically as it finishes; re-running the same call skips finished shards, whatever ran them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hyporag.foundation.atomic import write_json_atomic
from hyporag.foundation.errors import ConfigError
from hyporag.jobs.run_config import DEFAULT_CORPUS, RunConfig
from hyporag.jobs.settings import EmbedSettings
from hyporag.retrieval.corpus import load_corpus
from hyporag.retrieval.encoders import encoder_spec, make_encoder
from hyporag.retrieval.passage_split import SplitReport, split_long_passages
from hyporag.retrieval.ray_embed import connect, encode_on_ray
from hyporag.retrieval.store import passage_text
from hyporag.retrieval.vector_shards import PendingShard, VectorShards, plan_shards

REPORT_FILE = "embed-report.json"


@dataclass
class EmbedReport:
    """What a call did: shards encoded now and found done, passages, seconds and where it ran."""

    out: Path
    passages: int
    shards: int
    shards_encoded: int
    passages_encoded: int
    seconds: float
    where: str
    encoder: str

    @property
    def passages_per_second(self) -> float:
        return self.passages_encoded / self.seconds if self.seconds > 0 else 0.0

    def describe(self) -> str:
        skipped = self.shards - self.shards_encoded
        rate = f", {self.passages_per_second:.1f} passages/s" if self.passages_encoded else ""
        return (f"embedded {self.passages_encoded} of {self.passages} passages ({self.shards_encoded} shards; "
                f"{skipped} already done) with {self.encoder} on {self.where} in {self.seconds:.1f} s{rate}: "
                f"{self.out}")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _passages(run: RunConfig, settings: EmbedSettings):
    corpus = load_corpus(run.data.corpus or DEFAULT_CORPUS, run.data.data_dir)
    return corpus, split_long_passages(corpus, SplitReport(settings.max_passage_chars))


def embed(settings: EmbedSettings, run: RunConfig | None = None, progress: bool = True, log=_log) -> EmbedReport:
    """Encode every shard of the corpus not already in `settings.out`; returns what was done."""
    from tqdm import tqdm


    run = run or RunConfig()
    if not settings.out:
        raise ConfigError("embed: give out, the folder for the vectors (--out)")
    spec = encoder_spec(run.index.embedder or "minilm", settings.max_seq_length)
    corpus, passages = _passages(run, settings)
    shards = VectorShards(settings.out, {
        "corpus": corpus.name, "corpus_source": corpus.source, "corpus_fingerprint": corpus.fingerprint(),
        "max_passage_chars": settings.max_passage_chars, "encoder": spec.to_dict(), "shard_size": settings.shard_size})
    shards.claim()
    where = f"ray {settings.ray}" if settings.ray else (f"{settings.processes} local processes"
                                                         if settings.processes > 1 else "this process")
    started = time.perf_counter()
    bar = tqdm(total=corpus.count(), desc="embedding", unit="passage", disable=not progress, smoothing=0.05)
    counts = {"passages": 0, "shards": 0, "encoded": 0, "encoded_passages": 0}

    def pending() -> Iterator[PendingShard]:
        for number, start, batch in plan_shards(passages, settings.shard_size):
            counts["passages"] += len(batch)
            counts["shards"] += 1
            if shards.is_done(number, [p.id for p in batch]):
                bar.update(len(batch))
                continue
            yield PendingShard(number, start, batch)

    def write(shard: PendingShard, vectors: np.ndarray) -> None:
        shards.write(shard.number, shard.ids, vectors)
        counts["encoded"] += 1
        counts["encoded_passages"] += len(shard.passages)

    try:
        if settings.ray:
            _embed_on_ray(settings, spec.to_dict(), pending(), write, bar, log)
        else:
            _embed_here(settings, spec, pending(), write, bar)
    finally:
        bar.close()
    report = EmbedReport(Path(settings.out), counts["passages"], counts["shards"], counts["encoded"],
                         counts["encoded_passages"], round(time.perf_counter() - started, 2), where, spec.name)
    write_json_atomic(Path(settings.out) / REPORT_FILE, {**asdict(report), "out": str(report.out),
                                                         "passages_per_second": round(report.passages_per_second, 2)})
    return report


def _embed_here(settings: EmbedSettings, spec, pending: Iterator, write, bar) -> None:
    """This machine: one encoder in process, or sentence-transformers' multi-process pool (one per GPU, or CPUs)."""

    encoder = None
    pool = None
    try:
        for shard in pending:
            encoder = encoder or make_encoder(spec)  # loaded only when a shard is left to do
            pairs = [(p.title, p.contents) for p in shard.passages]
            if settings.processes > 1:
                model = getattr(encoder, "model", None)
                if model is None or not hasattr(model, "start_multi_process_pool"):
                    raise ConfigError(f"embed: processes > 1 needs a sentence-transformers encoder; {spec.name} is "
                                      f"run by {spec.backend}; use --ray for it")
                if pool is None:
                    import torch

                    gpus = torch.cuda.device_count()
                    devices = [f"cuda:{i}" for i in range(gpus)] if gpus > 1 else ["cpu"] * settings.processes
                    pool = model.start_multi_process_pool(devices)
                texts = [spec.passage_prefix + passage_text(t, c) for t, c in pairs]
                vectors = model.encode(texts, pool=pool, batch_size=settings.batch_size, normalize_embeddings=True,
                                       convert_to_numpy=True).astype(np.float32)
            else:
                vectors = encoder.encode_passages(pairs, batch_size=settings.batch_size)
            write(shard, vectors)
            bar.update(len(shard.passages))
    finally:
        if pool is not None:
            encoder.model.stop_multi_process_pool(pool)


def _embed_on_ray(settings: EmbedSettings, spec: dict, pending: Iterator, write, bar, log) -> None:
    """The pending shards in windows of about `settings.window` passages, each one Ray Data job."""

    connect(settings.ray, log)
    window, size = [], 0
    for shard in pending:
        window.append(shard)
        size += len(shard.passages)
        if size >= settings.window:
            encode_on_ray(window, spec, write, settings.concurrency, settings.batch_size, settings.gpus_per_actor,
                          settings.cpus_per_actor, bar.update)
            window, size = [], 0
    if window:
        encode_on_ray(window, spec, write, settings.concurrency, settings.batch_size, settings.gpus_per_actor,
                      settings.cpus_per_actor, bar.update)
