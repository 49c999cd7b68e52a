"""Every array file the results store reads is capped (:data:`files.MAX_ARRAY_BYTES`): the
``.npy`` headers inside an ``arrays.npz`` (or a unit's ``<key>.npz``) are read first, and a file
declaring more than the cap is damaged, named in one line, before any of its data is
decompressed. A 1 KB file declaring 10**12 float64 used to make ``np.load`` ask for 7.28 TiB
(``results``, ``verdicts`` and ``experiment`` crashed), and a 1.5 MB zip of zeros took 11 s and
2.5 GiB to list."""

from __future__ import annotations

import io
import json
import shutil
import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
import toy_units

from dpcompanion import cli
from dpcompanion.core.provenance import REPO
from dpcompanion.experiments import base, store
from dpcompanion.experiments.store import files, numeric, result_store

ID = "test-array-cap"
#: a listing of a crafted file is refused from its headers: this is generous (it takes ms)
FAST_S = 1.0




def _combine(config, results):
    return {"xs": np.stack([r["x"] for r in results]), "total": float(sum(r["x"].sum() for r in results))}


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    with toy_units.registered(base.Experiment(id=ID, title="arrays", configs={"quick": {"n": 100}, "full": {"n": 120}},
                                              units=toy_units.units, run_unit=toy_units.run_unit, combine=_combine),
                              tmp_path, monkeypatch) as exp:
        yield exp


def _npy_header(shape, descr="<f8") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": tuple(shape)})
    return buf.getvalue()


def _zip(members: dict[str, tuple[bytes, int, int]]) -> bytes:
    """A zip file of deflated members ``{name: (raw deflate stream, crc32, uncompressed size)}``
    (zip64 extras where a size needs them), written by hand so that a member's data need not
    pass through a compressor here."""
    out, central = bytearray(), bytearray()
    for name, (data, crc, size) in members.items():
        fn = name.encode()
        big = size >= 0xFFFFFFFF
        extra = struct.pack("<HHQQ", 1, 16, size, len(data)) if big else b""
        usize, csize = (0xFFFFFFFF, 0xFFFFFFFF) if big else (size, len(data))
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 8, 0, 0x21, crc, csize, usize, len(fn), len(extra))
        out += fn + extra + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 8, 0, 0x21, crc, csize, usize, len(fn),
                               len(extra), 0, 0, 0, 0, offset) + fn + extra
    at = len(out)
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), at, 0)
    return bytes(out)


def _zeros_member(header: bytes, nbytes: int, *, chunk: int = 1 << 24) -> tuple[bytes, int, int]:
    """``header`` then ``nbytes`` zero bytes as one deflate stream, made in a fraction of a
    second whatever ``nbytes``: after a full flush the compressor starts afresh, so every
    ``chunk`` of zeros compresses to the same block, compressed once and repeated."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    parts = [c.compress(header) + c.flush(zlib.Z_FULL_FLUSH)]
    zeros = bytes(chunk)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    whole, rest = divmod(nbytes, chunk)
    parts += [block] * whole
    parts.append(c.compress(bytes(rest)) + c.flush())
    crc = zlib.crc32(header)
    for _ in range(whole):
        crc = zlib.crc32(zeros, crc)
    crc = zlib.crc32(bytes(rest), crc)
    return b"".join(parts), crc, len(header) + nbytes


def _plain_member(arr: np.ndarray) -> tuple[bytes, int, int]:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr)
    raw = buf.getvalue()
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(raw) + c.flush(), zlib.crc32(raw), len(raw)


def test_the_crafting_makes_valid_npz_files(tmp_path):
    """(The helpers' files are real npz files: numpy reads a small one back, zeros and all.)"""
    f = tmp_path / "z.npz"
    f.write_bytes(_zip({"a0.npy": _zeros_member(_npy_header((3000,)), 3000 * 8, chunk=4096),
                        "a1.npy": _plain_member(np.arange(5.0))}))
    with np.load(f) as z:
        assert not z["a0"].any() and z["a0"].shape == (3000,) and z["a1"].tolist() == [0, 1, 2, 3, 4]
    got = files.read_npz(f)
    assert not got["a0"].any() and got["a1"].tolist() == [0, 1, 2, 3, 4]


def _crafted_result(toy, npz: bytes) -> Path:
    res = store.compute(ID, mode="quick")
    (res.path / "arrays.npz").write_bytes(npz)
    return res.path


def test_a_header_declaring_10_12_float64_is_damaged_in_one_line(toy, capsys):
    """A 1 KB ``arrays.npz`` whose one array declares 10**12 float64 (7.28 TiB): ``load`` says
    so in one line at once, ``results`` lists it as damaged (exit 0) beside the other results,
    ``experiment`` recomputes over it."""
    data = _npy_header((10**12,)) + bytes(64)
    path = _crafted_result(toy, _zip({"a0.npy": _plain_deflate(data)}))
    assert (path / "arrays.npz").stat().st_size < 1024
    t0 = time.perf_counter()
    r = store.load(ID, mode="quick")
    assert time.perf_counter() - t0 < FAST_S
    assert r.damaged == (f"{path / 'arrays.npz'}: array a0 declares shape (1000000000000,) float64 "
                         "(8,000,000,000,000 bytes): more than the 67,108,864 bytes read (MAX_ARRAY_BYTES)"), r.damaged
    assert not r.fresh and r.stale_reason == f"damaged: {r.damaged}"
    capsys.readouterr()
    assert cli.main(["results"]) == 0
    out = capsys.readouterr().out
    assert f"DAMAGED ({r.damaged})" in out
    assert cli.main(["experiment", ID, "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["replaced_damaged"] == r.damaged and rec["fresh"]
    assert store.load(ID, mode="quick").fresh


def _plain_deflate(raw: bytes) -> tuple[bytes, int, int]:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(raw) + c.flush(), zlib.crc32(raw), len(raw)


def test_a_1_5_mb_zip_of_zeros_is_refused_from_its_header(toy, capsys):
    """The review's second file: 1.2 GB of float64 zeros that deflate to 1.5 MB. Refused from
    the header, well under a second and without reading the data (it used to take 11 s and 2.5
    GiB)."""
    n = 190_000_000  # 1.52 GB of zeros: a 1.5 MB file
    path = _crafted_result(toy, _zip({"a0.npy": _zeros_member(_npy_header((n,)), 8 * n)}))
    size = (path / "arrays.npz").stat().st_size
    assert 1.3e6 < size < 1.6e6, size
    t0 = time.perf_counter()
    rows = store.list_results()
    took = time.perf_counter() - t0
    (r,) = [x for x in rows if x.id == ID]
    assert took < FAST_S, took
    assert r.damaged.endswith(f"array a0 declares shape ({n},) float64 ({8 * n:,} bytes): more than the "
                              "67,108,864 bytes read (MAX_ARRAY_BYTES)"), r.damaged
    assert cli.main(["results"]) == 0 and "DAMAGED" in capsys.readouterr().out


def test_the_cap_counts_every_array_of_a_file_and_lets_through_what_fits(toy, monkeypatch):
    """The cap is on the arrays of one file together: two arrays of 1600 bytes pass a cap of
    3200 and fail one of 3199 (naming what was already read); a file bigger than the cap is
    refused by its size; an object array is never read."""
    res = store.compute(ID, mode="full")  # xs: 2 x 120 float64 = 1920 bytes; quick: 1600
    npz = res.path / "arrays.npz"
    monkeypatch.setattr(files, "MAX_ARRAY_BYTES", 1920)
    assert store.load(ID, mode="full").fresh
    monkeypatch.setattr(files, "MAX_ARRAY_BYTES", 1919)
    r = store.load(ID, mode="full")
    assert r.damaged.startswith(f"{npz}: array a0 declares shape (2, 120) float64 (1,920 bytes)"), r.damaged
    two = _zip({"a0.npy": _plain_member(np.zeros(200)), "a1.npy": _plain_member(np.ones(200))})
    f = res.path.parent / "two.npz"
    f.write_bytes(two)
    assert set(files.read_npz(f, ["a0", "a1"], limit=3200)) == {"a0", "a1"}
    with pytest.raises(files.Damaged, match=r"array a1 declares shape \(200,\) float64 \(1,600 bytes\), 1,600 "
                                            r"already read: more than the 3,199 bytes read"):
        files.read_npz(f, ["a0", "a1"], limit=3199)
    f.write_bytes(_zip({"a0.npy": _plain_member(np.random.default_rng(0).standard_normal(10_000))}))
    with pytest.raises(files.Damaged, match=r"bytes, more than the 65,648 read"):  # 100 + 100 // 8 + 64 kB
        files.read_npz(f, limit=100)
    f.write_bytes(_zip({"a0.npy": _plain_deflate(_npy_header((3,), "|O") + bytes(24))}))
    with pytest.raises(files.Damaged, match="object dtype"):
        files.read_npz(f)


def test_a_unit_file_over_the_cap_is_recomputed(toy):
    """A stored unit whose ``<key>.npz`` declares 10**12 float64: not read (no crash), counted
    as not done, recomputed by the sweep."""
    config = base.config_for(toy, "quick", seed=0)
    unit = toy.units(config)[0]
    folder = store.units_dir(ID, "quick")
    key = store.unit_key(ID, "quick", unit, 0, "cpu")
    result_store.save_unit(folder, key, unit, toy_units.run_unit(unit, "cpu"), {"runs": 1}, code=store.code_hash(toy), seed=0)
    assert result_store.load_unit(folder, key) is not None
    (folder / f"{key}.npz").write_bytes(_zip({"a0.npy": _plain_deflate(_npy_header((10**12,)) + bytes(64))}))
    assert result_store.load_unit(folder, key) is None
    res = store.compute(ID, mode="quick")
    assert (res.provenance["units_reused"], res.provenance["units_computed"]) == (0, 2)


def test_recorded_quick_numbers_that_inflate_beyond_the_cap_do_not_read_back(monkeypatch):
    """The quick numbers a full result records are zlib blobs too: one that inflates beyond
    the cap reads as not reading back (the revalidation then says so), never fills memory."""
    entry = numeric.record({"x": np.zeros(1000)}, cpu="c", commit="0" * 12)
    assert numeric.recorded_numbers(entry)[0] is not None
    monkeypatch.setattr(files, "MAX_ARRAY_BYTES", 7999)
    numbers, why = numeric.recorded_numbers(entry)
    assert numbers is None and "inflates to more than 7,999 bytes" in why, why


def test_verdicts_and_results_survive_a_crafted_committed_result(tmp_path, monkeypatch, capsys):
    """A copy of the committed H-F-CURV full result whose largest array (a0) is replaced by a
    header declaring 10**12 float64, every other array kept: ``verdicts`` judges no row on it
    and exits 0, ``results`` lists it as damaged."""
    root = tmp_path / "results"
    shutil.copytree(REPO / "results" / "h-f-curv" / "full", root / "h-f-curv" / "full")
    npz = root / "h-f-curv" / "full" / "arrays.npz"
    with np.load(npz) as z:
        kept = {f"{k}.npy": _plain_member(z[k]) for k in z.files if k != "a0"}
    npz.write_bytes(_zip({"a0.npy": _plain_deflate(_npy_header((10**12,)) + bytes(64)), **kept}))
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(root))
    assert cli.main(["verdicts", "--page", "h-f-curv", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert not any((r.get("result") or {}).get("fresh") for r in rows), rows
    assert cli.main(["results"]) == 0
    out = capsys.readouterr().out
    assert "h-f-curv" in out and "DAMAGED" in out and "declares shape (1000000000000,) float64" in out, out
