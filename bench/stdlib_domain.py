"""A non-medical domain built from text on this machine: the Python standard library.

Writes `<out>/corpus.jsonl` (one passage per module, class or function docstring of the modules below, in
hyporag's corpus schema: id, title, contents) and `<out>/questions.jsonl` (the multiple-choice questions written
for this benchmark, below; each answerable from those docstrings). Used by docs/new-domain.md:

    python bench/stdlib_domain.py --out runs/stdlib
    hyporag fit --dataset runs/stdlib/questions.jsonl --corpus runs/stdlib/corpus.jsonl --method chr \
        --domain "Python standard library" --corpus-description "Python standard library docstring index" \
        --budget 3 --out runs/stdlib/fit-chr
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
from pathlib import Path

MODULES = ("heapq", "bisect", "collections", "itertools", "functools", "json", "re", "os.path", "pathlib",
           "shutil", "tempfile", "csv", "datetime", "time", "calendar", "statistics", "math", "random", "secrets",
           "string", "textwrap", "difflib", "copy", "pickle", "hashlib", "base64", "uuid", "gzip", "zipfile",
           "struct", "array", "queue", "threading", "subprocess", "contextlib", "operator", "enum", "dataclasses",
           "fractions", "decimal", "fnmatch", "glob", "urllib.parse", "pprint", "weakref", "argparse", "logging",
           "sqlite3", "inspect", "typing")

# (question, {letter: option}, gold letter); options are real standard-library names, one right for the question
QUESTIONS = [
    ("Which module provides an implementation of the heap queue algorithm, also known as the priority queue "
     "algorithm?", {"A": "bisect", "B": "heapq", "C": "queue", "D": "collections"}, "B"),
    ("Which module maintains a list in sorted order without having to sort the list after each insertion?",
     {"A": "bisect", "B": "heapq", "C": "array", "D": "operator"}, "A"),
    ("Which function makes an iterator that returns elements from the first iterable until it is exhausted, "
     "then proceeds to the next iterable?", {"A": "itertools.cycle", "B": "itertools.chain", "C": "zip",
                                              "D": "itertools.tee"}, "B"),
    ("Which class is a dict subclass for counting hashable objects?",
     {"A": "collections.OrderedDict", "B": "collections.defaultdict", "C": "collections.Counter",
      "D": "collections.ChainMap"}, "C"),
    ("Which class is a list-like container with fast appends and pops on either end?",
     {"A": "collections.deque", "B": "array.array", "C": "queue.Queue", "D": "collections.UserList"}, "A"),
    ("Which decorator wraps a function with a memoizing callable that saves up to the maxsize most recent "
     "calls?", {"A": "functools.wraps", "B": "functools.partial", "C": "functools.lru_cache",
                "D": "functools.reduce"}, "C"),
    ("Which function serializes obj to a JSON formatted str?",
     {"A": "json.dump", "B": "json.dumps", "C": "json.loads", "D": "pickle.dumps"}, "B"),
    ("Which function scans through a string looking for the first location where a regular expression "
     "pattern produces a match?", {"A": "re.match", "B": "re.fullmatch", "C": "re.search", "D": "re.findall"},
     "C"),
    ("Which function returns True if the path refers to an existing path?",
     {"A": "os.path.exists", "B": "os.path.isabs", "C": "os.path.normpath", "D": "os.path.realpath"}, "A"),
    ("Which function recursively deletes a directory tree?",
     {"A": "shutil.copytree", "B": "shutil.rmtree", "C": "shutil.move", "D": "os.rmdir"}, "B"),
    ("Which function creates and returns a unique temporary directory?",
     {"A": "tempfile.mkstemp", "B": "tempfile.gettempdir", "C": "tempfile.mkdtemp",
      "D": "tempfile.TemporaryFile"}, "C"),
    ("Which class operates like a regular reader but maps the information read into a dict whose keys are "
     "given by the optional fieldnames parameter?", {"A": "csv.DictReader", "B": "csv.reader",
                                                     "C": "csv.Sniffer", "D": "csv.DictWriter"}, "A"),
    ("Which class represents a duration, the difference between two dates or times?",
     {"A": "datetime.date", "B": "datetime.timedelta", "C": "datetime.tzinfo", "D": "time.struct_time"}, "B"),
    ("Which function returns the median (middle value) of numeric data?",
     {"A": "statistics.mean", "B": "statistics.mode", "C": "statistics.median", "D": "statistics.stdev"}, "C"),
    ("Which function returns the greatest common divisor of the specified integer arguments?",
     {"A": "math.lcm", "B": "math.gcd", "C": "math.comb", "D": "math.factorial"}, "B"),
    ("Which function chooses k unique random elements from a population sequence, for random sampling "
     "without replacement?", {"A": "random.choice", "B": "random.choices", "C": "random.shuffle",
                              "D": "random.sample"}, "D"),
    ("Which module generates cryptographically strong random numbers suitable for managing secrets such as "
     "account authentication and tokens?", {"A": "random", "B": "secrets", "C": "hashlib", "D": "uuid"}, "B"),
    ("Which function wraps a single paragraph of text so that every line is at most width characters long, "
     "returning a list of lines?", {"A": "textwrap.fill", "B": "textwrap.wrap", "C": "textwrap.dedent",
                                    "D": "textwrap.shorten"}, "B"),
    ("Which function removes any common leading whitespace from every line in text?",
     {"A": "textwrap.indent", "B": "textwrap.dedent", "C": "str.strip", "D": "textwrap.shorten"}, "B"),
    ("Which function compares two sequences of lines and returns a delta in unified diff format?",
     {"A": "difflib.ndiff", "B": "difflib.context_diff", "C": "difflib.unified_diff",
      "D": "difflib.get_close_matches"}, "C"),
    ("Which function makes a deep copy of an object?",
     {"A": "copy.copy", "B": "copy.deepcopy", "C": "pickle.loads", "D": "copy.replace"}, "B"),
    ("Which module encodes binary data to printable ASCII characters and decodes such encodings back?",
     {"A": "base64", "B": "struct", "C": "hashlib", "D": "codecs"}, "A"),
    ("Which function generates a random UUID?",
     {"A": "uuid.uuid1", "B": "uuid.uuid3", "C": "uuid.uuid4", "D": "uuid.uuid5"}, "C"),
    ("Which module converts between Python values and C structs represented as Python bytes objects?",
     {"A": "array", "B": "struct", "C": "ctypes", "D": "pickle"}, "B"),
    ("Which class is a FIFO queue for exchanging items safely between multiple threads?",
     {"A": "queue.Queue", "B": "collections.deque", "C": "queue.LifoQueue", "D": "heapq"}, "A"),
    ("Which function runs a command with arguments, waits for it to complete, and returns a CompletedProcess "
     "instance?", {"A": "subprocess.Popen", "B": "subprocess.call", "C": "subprocess.run",
                   "D": "os.system"}, "C"),
    ("Which context manager suppresses any of the specified exceptions if they occur in the body of a with "
     "statement?", {"A": "contextlib.suppress", "B": "contextlib.closing", "C": "contextlib.nullcontext",
                    "D": "contextlib.ExitStack"}, "A"),
    ("Which function returns a callable object that fetches an item from its operand using the operand's "
     "__getitem__ method?", {"A": "operator.attrgetter", "B": "operator.itemgetter",
                              "C": "operator.methodcaller", "D": "operator.getitem"}, "B"),
    ("Which decorator adds generated special methods such as __init__ and __repr__ to a class based on its "
     "annotated fields?", {"A": "functools.total_ordering", "B": "dataclasses.dataclass", "C": "enum.unique",
                           "D": "typing.final"}, "B"),
    ("Which class represents rational numbers exactly, as a numerator and a denominator?",
     {"A": "decimal.Decimal", "B": "fractions.Fraction", "C": "float", "D": "numbers.Rational"}, "B"),
    ("Which function returns a possibly empty list of path names that match a pathname pattern with shell-style "
     "wildcards?", {"A": "fnmatch.filter", "B": "glob.glob", "C": "os.listdir", "D": "os.scandir"}, "B"),
    ("Which function parses a URL into six components, returning a 6-item named tuple?",
     {"A": "urllib.parse.urlsplit", "B": "urllib.parse.urlparse", "C": "urllib.parse.urljoin",
      "D": "urllib.parse.quote"}, "B"),
    ("Which class creates a reference to an object that does not keep the object alive?",
     {"A": "weakref.ref", "B": "copy.copy", "C": "types.SimpleNamespace", "D": "contextlib.closing"}, "A"),
    ("Which class is the object for parsing command line strings into Python objects?",
     {"A": "argparse.Namespace", "B": "argparse.ArgumentParser", "C": "shlex.shlex", "D": "getopt.getopt"}, "B"),
    ("Which function returns an iterator over successive overlapping pairs taken from the input iterable?",
     {"A": "itertools.pairwise", "B": "itertools.combinations", "C": "zip", "D": "itertools.accumulate"}, "A"),
    ("Which function groups consecutive keys of an iterable, returning an iterator of (key, group) pairs?",
     {"A": "itertools.groupby", "B": "itertools.islice", "C": "collections.Counter", "D": "itertools.starmap"},
     "A"),
]


def docstring_passages() -> list[dict]:
    """One passage per public module, class and function docstring (first 900 characters)."""
    passages, seen = [], set()
    for name in MODULES:
        module = importlib.import_module(name)
        members = [(name, module)] + [(f"{name}.{attr}", getattr(module, attr)) for attr in sorted(dir(module))
                                      if not attr.startswith("_")]
        for qualified, obj in members:
            if qualified != name and not (inspect.isclass(obj) or inspect.isroutine(obj)):
                continue
            if qualified != name and (getattr(obj, "__module__", None) or "").split(".")[0] not in (name.split(".")[0],
                                                                                        f"_{name}", "builtins"):
                continue  # re-exported from elsewhere: indexed under its own module
            doc = inspect.getdoc(obj)
            if not doc or qualified in seen:
                continue
            seen.add(qualified)
            passages.append({"id": qualified, "title": qualified, "contents": " ".join(doc.split())[:900]})
    return passages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/stdlib")
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    passages = docstring_passages()
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(p, ensure_ascii=False) + "\n" for p in passages)
    with (out / "questions.jsonl").open("w", encoding="utf-8") as handle:
        for number, (question, options, answer) in enumerate(QUESTIONS, start=1):
            handle.write(json.dumps({"id": f"stdlib-{number:02d}", "question": question, "options": options,
                                     "answer": answer}) + "\n")
    print(f"{len(passages)} passages -> {out / 'corpus.jsonl'}; {len(QUESTIONS)} questions -> "
          f"{out / 'questions.jsonl'}")


if __name__ == "__main__":
    main()
