"""The thesis's applications (§3.2) as optimizer programs, loops unrolled.

Each builder returns a :class:`Program` whose main arrays carry names (``X``,
``ratings``...), so a plan's choice for them can be read back with :func:`named`.

>>> p = regression(iterations=2)
>>> sorted(named(p))[:2]
['X', 'w']
"""

from __future__ import annotations

from spartan.frontend.optimizer.program import Program


def named(program: Program) -> dict[str, int]:
    """Node id of every named node."""
    return {n.name: n.id for n in program if n.name}


def regression(n: int = 1 << 20, d: int = 128, iterations: int = 3) -> Program:
    """Linear regression by gradient descent: ``w -= X.T @ (X @ w - y)``."""
    p = Program()
    x = p.source((n, d), name="X")
    y = p.source((n, 1), name="y")
    w = p.source((d, 1), name="w")
    for _ in range(iterations):
        err = p.map(p.dot(x, w), y)
        w = p.map(w, p.dot(p.transpose(x), err))
    return p


def logistic_regression(n: int = 1 << 20, d: int = 128, iterations: int = 3) -> Program:
    """Logistic regression: ``w -= X.T @ (sigmoid(X @ w) - y)``."""
    p = Program()
    x = p.source((n, d), name="X")
    y = p.source((n, 1), name="y")
    w = p.source((d, 1), name="w")
    for _ in range(iterations):
        prob = p.map(p.dot(x, w))  # sigmoid
        err = p.map(prob, y)
        w = p.map(w, p.dot(p.transpose(x), err))
    return p


def kmeans(n: int = 1 << 20, d: int = 64, k: int = 128, iterations: int = 3) -> Program:
    """K-means: distances by dot, nearest center by fold, new centers by join_update."""
    p = Program()
    x = p.source((n, d), name="X")
    c = p.source((k, d), name="centers")
    for _ in range(iterations):
        dist = p.map(p.dot(x, p.transpose(c)), p.fold(p.map(c), axis=1))
        labels = p.fold(dist, axis=1, itemsize=8)
        c = p.join_update([x, labels], [0, 0], (k, d), site="kmeans.centers")
    return p


def pca(n: int = 1 << 20, d: int = 256) -> Program:
    """PCA: center the data, covariance ``Xc.T @ Xc`` through swapaxes."""
    p = Program()
    x = p.source((n, d), name="X")
    mean = p.fold(x, axis=0, name="mean")
    xc = p.map(x, mean, name="Xc")
    cov = p.dot(p.swapaxes(xc, 0, 1), xc, name="cov")
    p.map(cov)  # scale by 1/n
    return p


def ssvd(n: int = 1 << 20, d: int = 512, k: int = 64) -> Program:
    """Stochastic SVD: ``Y = A @ Omega``, orthonormalize, ``B = Q.T @ A``, ``B @ B.T``."""
    p = Program()
    a = p.source((n, d), name="A")
    omega = p.source((d, k), name="Omega")
    y = p.dot(a, omega, name="Y")
    q = p.map(y, name="Q")  # per-tile QR
    b = p.dot(p.swapaxes(q, 0, 1), a, name="B")
    p.dot(b, p.swapaxes(b, 0, 1), name="BBt")
    return p


def cholesky(n: int = 1 << 15, blocks: int = 4) -> Program:
    """Right-looking blocked Cholesky on slices of ``A``: factor the diagonal block,
    solve the panel below it, update the trailing matrix (``A22 -= L21 @ L21.T``)."""
    p = Program()
    a = p.source((n, n), name="A")
    b = n // blocks
    for _ in range(blocks - 1):
        # ``a`` is the trailing matrix left by the previous step
        l11 = p.map(p.slice(a, (slice(0, b), slice(0, b))))  # cholesky of the block
        panel = p.slice(a, (slice(b, None), slice(0, b)))
        l21 = p.dot(panel, p.transpose(l11))  # triangular solve
        update = p.dot(l21, p.transpose(l21))
        trailing = p.slice(a, (slice(b, None), slice(b, None)))
        a = p.map(trailing, update)
    p.map(a)
    return p


def als(users: int = 1 << 17, items: int = 1 << 17, rank: int = 32, iterations: int = 7) -> Program:
    """Alternating least squares: every iteration joins the ratings matrix by rows
    (user factors) and by columns (item factors). 7 iterations = 14 operators."""
    p = Program()
    ratings = p.source((users, items), itemsize=4, name="ratings")
    m = p.source((items, rank), name="M0")
    for _ in range(iterations):
        u = p.join_update([ratings, m], [0, -1], (users, rank), update_axis=0, site="als.U")
        m = p.join_update([ratings, u], [1, -1], (items, rank), update_axis=0, site="als.M")
    return p
