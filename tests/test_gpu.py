"""GPU tiles with CuPy (marked ``gpu``; skipped without CuPy and a GPU).

The whole differential suite also runs with GPU tiles: ``SPARTAN_TEST_DEVICE=gpu pytest``.
"""

from __future__ import annotations

import numpy as np
import pytest

import spartan as sp
from spartan.backend.device import cupy_module

pytestmark = pytest.mark.gpu
cupy = cupy_module()
if cupy is None:
    pytest.skip("needs CuPy and a CUDA GPU", allow_module_level=True)


@pytest.fixture
def gpu():
    from spartan.backend.local import LocalBackend

    be = LocalBackend(num_workers=2, device="gpu")
    sp.backend.session.use(be)
    return be


def test_tiles_live_in_device_memory(gpu, tiling):
    x = sp.random.rand(9, 7, tiling=tiling)
    y = sp.evaluate(x * 2 + 1)
    blocks = [v for w in gpu.workers for v in w.store.values()]
    assert blocks and all(isinstance(b, cupy.ndarray) for b in blocks)
    out = y.to_numpy()
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, x.to_numpy() * 2 + 1)


def test_user_functions_get_cupy_tiles(gpu):
    seen = []

    def f(t):
        seen.append(type(t).__module__.split(".")[0])
        xp = sp.get_array_module(t)
        return xp.sqrt(t)

    a = np.arange(20.0).reshape(4, 5)
    np.testing.assert_allclose(sp.map(f, sp.array(a), dtype=float).to_numpy(), np.sqrt(a))
    assert set(seen) == {"cupy"}


def test_operators_on_gpu_equal_numpy(gpu, tiling):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((12, 6)), rng.standard_normal((6, 5))
    x, y = sp.array(a, tiling=tiling), sp.array(b, tiling=tiling)
    np.testing.assert_allclose((x @ y).to_numpy(), a @ b)
    np.testing.assert_allclose((x.T @ x).to_numpy(), a.T @ a)
    np.testing.assert_allclose(x.sum(axis=0).to_numpy(), a.sum(axis=0))
    np.testing.assert_array_equal(x.argmax(axis=1).to_numpy(), a.argmax(axis=1))
    np.testing.assert_array_equal(x.argmin().to_numpy(), a.argmin())
    np.testing.assert_allclose(sp.cumsum(x, axis=0).to_numpy(), np.cumsum(a, axis=0))
    np.testing.assert_array_equal(x[x > 0].to_numpy(), a[a > 0])
    np.testing.assert_array_equal(
        x.reshape(6, 12)[::2, ::-3].to_numpy(), a.reshape(6, 12)[::2, ::-3]
    )
    np.testing.assert_allclose(np.exp(x).mean().item(), np.exp(a).mean())


def test_host_arrays_mix_in_with_a_counted_transfer(gpu):
    a = np.ones((8, 4))
    x = sp.ones((8, 4))
    sp.evaluate(x)
    gpu.reset_stats()
    np.testing.assert_allclose((x + a).to_numpy(), 2 * a)
    assert sp.stats()["bytes_from_driver"] == a.nbytes
