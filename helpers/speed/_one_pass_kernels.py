"""The Numba kernels of :mod:`helpers.speed.one_pass` (what they compute, and why so, is told there).

A module of its own so that importing :mod:`helpers.speed.compiled` does not import Numba (about 0.35 s):
only the first backward that takes a one-pass kernel imports this.
"""

import os

import numba

if "NUMBA_THREADING_LAYER" not in os.environ:  # read when the first parallel kernel launches
    numba.config.THREADING_LAYER = "workqueue"

_FASTMATH = {"reassoc", "contract"}


@numba.njit(parallel=True, fastmath=_FASTMATH, cache=True)
def layer_norm_kernel(x, dy, w, mean, rstd, inv_n, dx, partials, block_rows):
    m, n = x.shape
    for block in numba.prange(partials.shape[0]):
        dgamma, dbeta = partials[block, 0], partials[block, 1]
        dgamma[:] = 0
        dbeta[:] = 0
        for i in range(block * block_rows, min((block + 1) * block_rows, m)):
            mu, r = mean[i], rstd[i]
            sum_g = inv_n * 0  # zero in the input's dtype: the sums stay in it, as torch's kernel's do
            sum_g_x_hat = inv_n * 0
            for j in range(n):
                g = dy[i, j] * w[j]
                sum_g += g
                sum_g_x_hat += g * ((x[i, j] - mu) * r)
            a, c = sum_g * inv_n, sum_g_x_hat * inv_n
            for j in range(n):
                x_hat = (x[i, j] - mu) * r
                dx[i, j] = r * (dy[i, j] * w[j] - a - x_hat * c)
                dgamma[j] += dy[i, j] * x_hat
                dbeta[j] += dy[i, j]


@numba.njit(parallel=True, fastmath=_FASTMATH, cache=True)
def rms_norm_kernel(x, dy, w, rstd, inv_n, dx, partials, block_rows):
    m, n = x.shape
    for block in numba.prange(partials.shape[0]):
        dgamma = partials[block, 0]
        dgamma[:] = 0
        for i in range(block * block_rows, min((block + 1) * block_rows, m)):
            r = rstd[i]
            sum_g_x_hat = inv_n * 0
            for j in range(n):
                sum_g_x_hat += dy[i, j] * w[j] * (x[i, j] * r)
            c = sum_g_x_hat * inv_n
            for j in range(n):
                x_hat = x[i, j] * r
                dx[i, j] = r * (dy[i, j] * w[j] - x_hat * c)
                dgamma[j] += dy[i, j] * x_hat
