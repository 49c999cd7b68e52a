"""Secure noise: ``TrainConfig(secure=True)`` / ``train --secure`` draws the
training noise from generators seeded by ``os.urandom``, never recorded and not reproducible;
seeded runs stay reproducible and say that their guarantee needs the seed to stay secret."""

import json
import re

import numpy as np
import pytest
import torch

from dpcompanion import cli, training
from dpcompanion.training.models import make_model
from dpcompanion.training.trainers import engine
from dpcompanion.training.trainers.adp_sgd import adp_schedule
from dpcompanion.training.trainers.config import SECURE_NOISE_NOTE, SEEDED_NOISE_NOTE, TrainConfig
from dpcompanion.training.trainers.engine import SECURE_DRAWS, NoiseSource, noise_seed, secret_noise_seeds

N, D, T = 40, 6, 5


def _data(seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(N, D, generator=g, dtype=torch.float64)
    y = (torch.rand(N, generator=g) > 0.5).long()
    return X, y


def _config(trainer: str, *, secure: bool, seed=3, **kw) -> TrainConfig:
    """A small config of each trainer: full-batch PGD, momentum, PSGD (Poisson masks from the
    noise stream) and ADP-SGD (adaptive noise and step size)."""
    base = dict(clip_norm=1.0, seed=seed, device="cpu", dtype=torch.float64, secure=secure, N=N, **kw)
    if trainer == "pgd":
        return TrainConfig.build(sigma=np.full(T, 2.0), R=None, lr=0.1, **base)
    if trainer == "momentum":
        return TrainConfig.build(sigma=np.full(T, 2.0), R=None, lr=0.1, beta=0.9, **base)
    if trainer == "psgd":
        return TrainConfig.build(sigma=np.full(T, 2.0), R=None, lr=0.1, sampling_rate=0.5, **base)
    plan = adp_schedule(R=1.0, T=T, step_size="adaptive")
    return TrainConfig.build(sigma=plan["sigma"], lr=plan["lr"], lr_rule=plan["lr_rule"],
                             algorithm=plan["algorithm"], R=1.0, **base)


TRAINERS = ["pgd", "momentum", "psgd", "adp"]
MODELS = ["logistic", "mlp"]  # the margin fast path and the general path


def _model(kind):
    return make_model(kind, in_dim=D, n_classes=2, hidden=4)


@pytest.mark.parametrize("kind", MODELS)
@pytest.mark.parametrize("trainer", TRAINERS)
def test_secure_runs_differ_and_seeded_runs_repeat(trainer, kind):
    """Two secure runs with the same seed release different parameters (fresh noise
    per call), from the same initial point (the seed still draws init); two seeded runs are
    identical, bit for bit; the History says which it was."""
    X, y = _data()
    a = training.train(_model(kind), X, y, _config(trainer, secure=True)).theta
    b = training.train(_model(kind), X, y, _config(trainer, secure=True)).theta
    assert not torch.equal(a, b)
    sa = training.train(_model(kind), X, y, _config(trainer, secure=False))
    sb = training.train(_model(kind), X, y, _config(trainer, secure=False))
    assert torch.equal(sa.theta, sb.theta)
    h = training.train(_model(kind), X, y, _config(trainer, secure=True))
    assert h.meta["secure"] is True and h.meta["privacy_note"] == SECURE_NOISE_NOTE
    assert sa.meta["secure"] is False and sa.meta["privacy_note"] == SEEDED_NOISE_NOTE
    assert h.steps_done == sa.steps_done == T


def test_secure_runs_start_from_the_seeded_init():
    """Only the noise is secret; the initial parameters are still drawn from the seed
    (a secure run with lr 0 stays at the seeded run's initial point)."""
    X, y = _data()
    cfg = dict(sigma=np.full(2, 2.0), R=None, lr=0.0, clip_norm=1.0, seed=5, device="cpu", dtype=torch.float64)
    a = training.train(_model("mlp"), X, y, TrainConfig.build(secure=True, **cfg)).theta
    b = training.train(_model("mlp"), X, y, TrainConfig.build(secure=False, **cfg)).theta
    assert torch.equal(a, b)


def test_seeded_stream_is_the_documented_one():
    """The seeded path is unchanged: its Gaussian block is ``randn(b, P)`` of a generator seeded
    with ``noise_seed(seed)`` (a reference written here), bit for bit; its masks are the uniforms of
    the same generator before the block's Gaussians, in the training dtype, a record kept below
    ``floor(p 2^24) 2^-24`` (and on that edge by the edge generator, an event of probability 2^-24
    that these draws do not hit)."""
    P, n, steps = 7, 11, 3
    src = NoiseSource([4, 9], device="cpu", dtype=torch.float32, P=P, T=steps, N=n, sampling_rate=0.3)
    active = np.ones(2, dtype=bool)
    out = torch.empty(2, P)
    masks = [src.mask(t, active) for t in range(steps)]
    src2 = NoiseSource([4, 9], device="cpu", dtype=torch.float32, P=P, T=steps, N=n, sampling_rate=0.3)
    noises = [src2.draw(t, active, out).clone() for t in range(steps)]
    for k, s in enumerate([4, 9]):
        g = torch.Generator().manual_seed(noise_seed(s))
        u = torch.rand(steps, n, generator=g)
        z = torch.randn(steps, P, generator=g)
        assert not bool((u == src.p_cut).any())  # no edge event in these draws
        for t in range(steps):
            assert torch.equal(masks[t][k], (u[t] < 0.3).float())  # the masks every committed result drew
            assert torch.equal(noises[t][k], z[t])


def test_secure_noise_amplitude_and_masks():
    """Secure noise is still standard normal (the sum of four draws / 2): mean 0,
    variance 1, fourth moment 3 within a few standard errors; secure masks keep each sample with
    probability p; the blocks differ from those of a seeded source and between two sources."""
    P, n, steps, p = 4096, 4096, 4, 0.2
    secret = secret_noise_seeds([0])
    src = NoiseSource([0], device="cpu", dtype=torch.float32, P=P, T=steps, N=n, sampling_rate=p, secret=secret)
    active = np.ones(1, dtype=bool)
    out = torch.empty(1, P)
    z = torch.cat([src.draw(t, active, out).clone().double().ravel() for t in range(steps)])
    m = z.numel()
    assert abs(float(z.mean())) < 5 / m**0.5
    assert abs(float(z.var()) - 1) < 5 * (2 / m) ** 0.5
    assert abs(float((z**4).mean()) - 3) < 5 * (96 / m) ** 0.5
    src2 = NoiseSource([0], device="cpu", dtype=torch.float32, P=P, T=steps, N=n, sampling_rate=p,
                       secret=secret_noise_seeds([0]))
    keep = torch.cat([src2.mask(t, active).ravel() for t in range(steps)]).double()
    assert abs(float(keep.mean()) - p) < 5 * (p * (1 - p) / keep.numel()) ** 0.5
    seeded = NoiseSource([0], device="cpu", dtype=torch.float32, P=P, T=steps, N=n, sampling_rate=p)
    first = src.noise_blk.clone()
    assert not torch.equal(first, seeded.draw(0, active, out).clone())
    assert not torch.equal(src.mask_blk, src2.mask_blk)


def test_secure_noise_amplitude_in_training():
    """End to end, a model whose clipped gradient is 0 (all features 0) moves by the
    noise alone: ``theta_T = -lr C sigma / N sum_t z_t``, whose entries have variance T (to a
    few standard errors), for the secure source as for the seeded one."""
    P_in, steps, sigma, C, lr = 3000, 4, 2.0, 1.5, 1.0
    X = torch.zeros(N, P_in, dtype=torch.float64)
    y = torch.arange(N) % 2
    for secure in (True, False):
        cfg = TrainConfig.build(sigma=np.full(steps, sigma), R=None, lr=lr, clip_norm=C, seed=0, device="cpu",
                                dtype=torch.float64, secure=secure, N=N)
        h = training.train(make_model("linear", in_dim=P_in), X, y, cfg, init=torch.zeros(P_in + 1))
        s = h.theta.double().ravel() / (-lr * C * sigma / N)
        m = s.numel()
        assert abs(float(s.var()) / steps - 1) < 5 * (2 / m) ** 0.5


def test_secret_seeds_appear_nowhere(monkeypatch, capsys):
    """The secure seeds are never recorded: none of them (nor their low 32 bits, what a
    CPU generator keeps) appears in the History (its dict, its meta) or the command's output."""
    seen = []

    def spy(seeds):
        out = secret_noise_seeds(seeds)
        seen.extend(k for ks in out.values() for k in ks)
        return out

    monkeypatch.setattr(engine, "secret_noise_seeds", spy)
    X, y = _data()
    h = training.train(_model("logistic"), X, y, _config("psgd", secure=True))
    rc = cli.main(["train", "--dataset", "synthetic", "--n", "60", "--R", "1", "--T", "3", "--device", "cpu",
                   "--secure", "--json"])
    out, err = capsys.readouterr()
    assert rc == 0 and len(seen) == 2 * SECURE_DRAWS
    text = json.dumps(h.to_dict(), default=str) + repr(h.meta) + out + err
    numbers = set(re.findall(r"\d+", text))
    for k in seen:
        assert str(k) not in numbers and str(k & 0xFFFFFFFF) not in numbers
    assert not any(isinstance(v, torch.Generator) for v in vars(h).values())


def test_secure_runs_never_share_their_noise_even_with_one_seed_across_chunks():
    """Every secure run draws its own secret noise, also runs given one seed and trained in
    separate chunks (common noise across released runs would reveal their noise-free sum);
    distinct seeds get distinct secret noise too."""
    X, y = _data()
    cfg = TrainConfig.build(sigma=np.full((3, T), 2.0), R=None, lr=0.1, clip_norm=1.0, seed=7, device="cpu",
                            dtype=torch.float64, secure=True, memory_budget=2**20, fast=False)
    h = training.train(make_model("mlp", in_dim=D, n_classes=2, hidden=2048), X, y, cfg)  # ~0.5 MiB a run
    assert h.meta["chunks"] == 3
    assert not torch.equal(h.theta[0], h.theta[1]) and not torch.equal(h.theta[1], h.theta[2])
    cfg2 = TrainConfig.build(sigma=np.full(T, 2.0), R=None, lr=0.1, clip_norm=1.0, seed=[7, 8], device="cpu",
                             dtype=torch.float64, secure=True)
    h2 = training.train(_model("logistic"), X, y, cfg2)
    assert not torch.equal(h2.theta[0], h2.theta[1])


def test_cpu_generator_keeps_32_bits_of_a_seed():
    """Why a secure run sums SECURE_DRAWS = 4 generators (NoiseSource's docstring): torch's CPU
    generator (MT19937) keeps only the low 32 bits of its seed, so one os.urandom-seeded
    generator would hold 32 bits of secret, few enough to search. If torch changes this, the
    docstring's '128 bits on CPU' must be updated."""
    a = torch.randn(8, generator=torch.Generator().manual_seed(12345))
    b = torch.randn(8, generator=torch.Generator().manual_seed(12345 + 2**32))
    assert torch.equal(a, b)
    assert SECURE_DRAWS * 32 >= 128


def test_secure_must_be_a_bool():
    with pytest.raises(ValueError, match="secure must be True or False"):
        TrainConfig.build(sigma=[1.0], R=None, lr=0.1, clip_norm=1.0, device="cpu", secure="yes")
    assert TrainConfig.build(sigma=[1.0], R=None, lr=0.1, clip_norm=1.0, device="cpu").secure is False


def test_book_runs_stay_seeded():
    """The experiments are the book's reproducible runs: TrainConfig's default is seeded
    and no call in the experiments passes ``secure=`` anything but False (nor any call of the
    training layer, whose own plumbing passes the config's flag on, ``secure=True``)."""
    import ast
    import pathlib

    import dpcompanion

    root = pathlib.Path(dpcompanion.__file__).parent
    for path in [*(root / "experiments").rglob("*.py"), *(root / "training").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg == "secure":
                        literal = kw.value.value if isinstance(kw.value, ast.Constant) else None
                        assert literal is not True, (path, node.lineno)
                        assert "experiments" not in path.parts or literal is False, (path, node.lineno)


# ----------------------------------------------------------------------- command line


def _train(capsys, *argv):
    rc = cli.main(["train", "--dataset", "synthetic", "--n", "60", "--R", "1", "--T", "4", "--device", "cpu",
                   "--json", *argv])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def test_cli_secure_by_default_without_seed(capsys):
    """``train`` without ``--seed`` is a practitioner's run: secure (two runs differ),
    its JSON says ``secure: true`` and records no noise seed."""
    a, b = _train(capsys), _train(capsys)
    assert a["secure"] is True and a["noise_seed"] is None and a["privacy_note"] == SECURE_NOISE_NOTE
    assert a["non_private"]["final_loss"] != b["non_private"]["final_loss"]
    assert a["seed"] == 0  # the data subset and init


def test_cli_seed_makes_a_reproducible_run_with_the_warning(capsys):
    """``--seed N`` asks for a reproducible run (two runs are identical); its JSON says
    ``secure: false`` and warns that the guarantee needs the printed seed to stay secret."""
    a, b = _train(capsys, "--seed", "0"), _train(capsys, "--seed", "0")
    assert a["secure"] is False and a["noise_seed"] == 0
    for d in (a, b):
        d["non_private"].pop("wall_time")
    assert a == b
    assert "only if the noise seed stays secret" in a["privacy_note"] and "--seed 0" in a["privacy_note"]
    c = _train(capsys, "--no-secure")
    assert c["secure"] is False and c["non_private"]["final_loss"] == a["non_private"]["final_loss"]  # the default seed 0


def test_cli_secure_with_seed(capsys):
    """``--secure --seed N``: N draws the data and init, the noise is secret (two runs
    differ, same data)."""
    a, b = _train(capsys, "--seed", "2", "--secure"), _train(capsys, "--seed", "2", "--secure")
    assert a["secure"] is True and a["seed"] == 2 and a["noise_seed"] is None
    assert a["non_private"]["final_loss"] != b["non_private"]["final_loss"] and a["n_train"] == b["n_train"]


def test_cli_text_output_names_the_noise(capsys):
    rc = cli.main(["train", "--dataset", "synthetic", "--n", "60", "--R", "1", "--T", "3", "--device", "cpu",
                   "--seed", "4"])
    out, _ = capsys.readouterr()
    assert rc == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("noise: "))
    assert line.startswith("noise: seeded:") and "--seed 4" in line


def test_the_wrappers_pass_secure_through():
    """train_pgd, train_psgd and train_adpsgd take ``secure``: two secure runs of
    each differ, and their History says secure."""
    import numpy as np
    import torch

    from dpcompanion.training import dense_models
    from dpcompanion.training.trainers import train_adpsgd, train_pgd, train_psgd

    g = torch.Generator().manual_seed(0)
    X = torch.randn(40, 5, generator=g)
    y = (X[:, 0] > 0).long()
    m = dense_models.DenseModel(in_dim=5, n_classes=2, loss="logistic")
    runs = {
        "pgd": lambda: train_pgd(m, X, y, sigma=np.full(3, 2.0), R=1.0, seed=0, device="cpu", secure=True),
        "psgd": lambda: train_psgd(m, X, y, sigma=np.full(3, 2.0), R=1.0, delta=1e-5, sampling_rate=0.5, seed=0,
                                   device="cpu", secure=True),
        "adp": lambda: train_adpsgd(m, X, y, T=3, R=1.0, seed=0, device="cpu", secure=True),
    }
    for name, run in runs.items():
        a, b = run(), run()
        assert a.meta["secure"] is True and b.meta["secure"] is True, name
        assert not torch.equal(torch.as_tensor(a.theta), torch.as_tensor(b.theta)), name
