"""scikit-learn and SciPy as clients of spartan arrays, through the array API standard.

Each client call runs twice, on spartan arrays and on the same data as NumPy arrays,
and the results must agree. Arrays a client returns in its input's namespace must come
back as spartan arrays (estimators' fitted attributes included), and a call must not
fetch its distributed input into the driver: ``fetches_little`` bounds the bytes the
workers sent to the driver while it ran. What SciPy can only do on a NumPy copy is
pinned by ``test_scipy_runs_on_a_numpy_copy``, which lists it (docs: the README's
clients section).

scikit-learn runs under ``sklearn.config_context(array_api_dispatch=True)``; SciPy
needs ``SCIPY_ARRAY_API=1`` before it is first imported (tests/conftest.py sets it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import spartan as sp

RNG = np.random.default_rng(36)
X = RNG.standard_normal((120, 6)) * [1.0, 2.0, 0.5, 3.0, 1.0, 0.1] + [0, 1, 2, 3, 4, 5]
Y = RNG.standard_normal((40, 6))
POS = np.abs(X) + 0.1  # for chi2 kernels, logs, deviances
Y_REG = X @ RNG.standard_normal(6) + 0.1 * RNG.standard_normal(120)
Y_POS = np.abs(Y_REG) + 0.5
Y_CLS = (X[:, 0] + X[:, 1] > 1.5).astype(np.int64) + (X[:, 3] > 4).astype(np.int64)  # 0..2
Y_CLS_PRED = np.where(RNG.random(120) < 0.8, Y_CLS, (Y_CLS + 1) % 3)
Y_BIN = (Y_CLS > 0).astype(np.int64)
Y_BIN_PRED = np.where(RNG.random(120) < 0.8, Y_BIN, 1 - Y_BIN)
SCORE = np.clip(0.6 * Y_BIN + 0.5 * RNG.random(120), 0.01, 0.99)
PROBA3 = RNG.dirichlet(np.ones(3), 120)


# -- helpers -------------------------------------------------------------------------------


def S(a: Any) -> Any:
    """``a`` as a spartan array (NumPy arrays only; anything else unchanged)."""
    return sp.asarray(a) if isinstance(a, np.ndarray) else a


def same(got: Any, want: Any, rtol: float = 1e-7, atol: float = 1e-9, where: str = "") -> None:
    """``got`` (from spartan inputs) equals ``want`` (from NumPy inputs); wherever the
    NumPy run gave an ndarray, the spartan run gave a spartan array."""
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            same(g, w, rtol, atol, f"{where}[{i}]")
        return
    if hasattr(want, "_asdict"):  # SciPy's result objects
        for k, w in want._asdict().items():
            same(getattr(got, k), w, rtol, atol, f"{where}.{k}")
        return
    if hasattr(want, "statistic") and hasattr(want, "pvalue"):  # the other result objects
        same((got.statistic, got.pvalue), (want.statistic, want.pvalue), rtol, atol, where)
        return
    if isinstance(want, np.ndarray):
        assert isinstance(got, sp.Array), f"{where}: {type(got).__name__}, not a spartan array"
        assert got.shape == want.shape and got.dtype == want.dtype, (where, got, want)
        got = got.to_numpy()
    elif isinstance(got, sp.Array):  # a 0-d result where NumPy's run gave a scalar
        got = got.to_numpy()
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=where)


@contextlib.contextmanager
def fetches_little(*inputs: np.ndarray, share: float = 0.25, allow: int = 0) -> Iterator[None]:
    """The block fetched into the driver less than ``share`` of the bytes of
    ``inputs`` (plus ``allow`` bytes a client is known to fetch): their data stayed on
    the workers (small results, and scalars a client branches on, may be fetched)."""
    before = sp.stats()["bytes_to_driver"]
    yield
    fetched = sp.stats()["bytes_to_driver"] - before
    limit = share * sum(a.nbytes for a in inputs) + allow
    assert fetched < limit, f"fetched {fetched} B into the driver (limit {limit:.0f} B)"


def both(
    fn: Callable[..., Any], *args: Any, share: float = 0.25, allow: int = 0, **kwargs: Any
) -> tuple:
    """``fn`` on spartan versions of the NumPy ``args``, then on ``args``: (spartan
    result, NumPy result). The spartan call must fetch little (:func:`fetches_little`)."""
    inputs = [a for a in args if isinstance(a, np.ndarray)]
    with fetches_little(*inputs, share=share, allow=allow):
        got = fn(*[S(a) for a in args], **kwargs)
    return got, fn(*args, **kwargs)


def one_hot_fetch(labels: np.ndarray) -> int:
    """What scikit-learn's ``label_binarize`` fetches: it builds the one-hot matrix of
    ``labels`` with scipy.sparse on NumPy (three vectors of ``len(labels)`` integers)."""
    return 3 * len(labels) * 8 + 64


# -- scikit-learn --------------------------------------------------------------------------


@pytest.fixture
def sk(local: Any) -> Iterator[Any]:
    """scikit-learn with array API dispatch on, on the in-process backend."""
    sklearn = pytest.importorskip("sklearn", reason="scikit-learn is not installed")
    pytest.importorskip("array_api_compat", reason="array-api-compat is not installed")
    import scipy._lib._array_api

    if not scipy._lib._array_api.SCIPY_ARRAY_API:
        pytest.skip("SciPy was imported without SCIPY_ARRAY_API=1 (tests/conftest.py sets it)")
    with sklearn.config_context(array_api_dispatch=True):
        yield sklearn


def fitted(est: Any) -> dict[str, Any]:
    """An estimator's public fitted attributes (``name_``)."""
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def same_estimator(got: Any, want: Any, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    """Fitted on spartan arrays, ``got`` has ``want``'s fitted attributes, with spartan
    arrays where ``want`` has ndarrays (the estimator's state stayed distributed)."""
    g, w = fitted(got), fitted(want)
    assert g.keys() == w.keys()
    for k, v in w.items():
        if isinstance(v, (np.ndarray, float, np.floating)) and not isinstance(v, bool):
            same(g[k], v, rtol, atol, k)
        else:
            assert type(g[k]) is type(v), k


PCA_SOLVERS = [
    ("full", {}),
    ("covariance_eigh", {}),
    ("randomized", {"power_iteration_normalizer": "QR", "random_state": 0}),
    ("auto", {}),
]


@pytest.mark.parametrize("solver, options", PCA_SOLVERS, ids=[s for s, _ in PCA_SOLVERS])
@pytest.mark.parametrize("whiten", [False, True])
def test_pca(sk, solver, options, whiten, monkeypatch):
    from sklearn.decomposition import PCA

    monkeypatch.setattr(sp.config, "tsqr_min_bytes", 0)  # SVDs by TSQR, however small
    est = PCA(n_components=4, svd_solver=solver, whiten=whiten, **options)
    with fetches_little(X):
        pca = est.fit(S(X))
        Z = pca.transform(S(X))
        back = pca.inverse_transform(Z)
    ref = PCA(n_components=4, svd_solver=solver, whiten=whiten, **options).fit(X)
    same_estimator(pca, ref)
    assert pca._fit_svd_solver == ref._fit_svd_solver
    same(Z, ref.transform(X))
    same(back, ref.inverse_transform(ref.transform(X)))
    same(pca.fit_transform(S(X)), ref.fit_transform(X))
    same(pca.score(S(X)), ref.score(X))


def test_pca_solvers_without_array_api_support_say_so(sk):
    from sklearn.decomposition import PCA

    with pytest.raises(ValueError, match="LU"):
        PCA(2, svd_solver="randomized", power_iteration_normalizer="LU").fit(S(X))
    with pytest.warns(UserWarning, match="falling back to QR"):
        PCA(2, svd_solver="randomized", iterated_power=3, random_state=0).fit(S(X))
    with fetches_little(X), pytest.raises(ValueError, match="arpack"):
        PCA(2, svd_solver="arpack").fit(S(X))


def test_linear_discriminant_analysis(sk):
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as LDA

    with fetches_little(X):
        lda = LDA(solver="svd").fit(S(X), S(Y_CLS))
    ref = LDA(solver="svd").fit(X, Y_CLS)
    same_estimator(lda, ref)
    for method in ["decision_function", "predict", "predict_proba", "predict_log_proba"]:
        same(getattr(lda, method)(S(X)), getattr(ref, method)(X), where=method)
    same(lda.transform(S(X)), ref.transform(X))
    same(lda.fit_transform(S(X), S(Y_CLS)), ref.transform(X))
    # lsqr and eigen are NumPy code in scikit-learn (``ndarray += x``): an error, no gather
    for solver in ["lsqr", "eigen"]:
        with pytest.raises(TypeError):
            LDA(solver=solver).fit(S(X), S(Y_CLS))


def test_ridge(sk):
    from sklearn.linear_model import Ridge, RidgeClassifier, RidgeClassifierCV, RidgeCV

    for make, y in [
        (lambda: Ridge(alpha=0.5, solver="svd"), Y_REG),
        (lambda: Ridge(alpha=0.5, solver="svd", fit_intercept=False), Y_REG),
        (lambda: Ridge(alpha=0.5, solver="svd"), np.stack([Y_REG, Y_POS], axis=1)),
        (lambda: RidgeCV(alphas=(0.1, 1.0, 10.0)), Y_REG),
        (lambda: RidgeClassifier(solver="svd"), Y_CLS),
        (lambda: RidgeClassifierCV(alphas=(0.1, 1.0, 10.0)), Y_CLS),
    ]:
        labels = one_hot_fetch(y) if y.dtype.kind == "i" else 0  # the classifiers' y
        with fetches_little(X, allow=labels):
            est = make().fit(S(X), S(y))
        ref = make().fit(X, y)
        same_estimator(est, ref)
        same(est.predict(S(X)), ref.predict(X), where=type(ref).__name__)
        same(est.score(S(X), S(y)), ref.score(X, y))
    # sample weights, and y given as NumPy (converted to X's namespace)
    w = RNG.random(120)
    est = Ridge(solver="svd").fit(S(X), Y_REG, sample_weight=S(w))
    same_estimator(est, Ridge(solver="svd").fit(X, Y_REG, sample_weight=w))


def test_ridge_solvers_other_than_svd_say_so(sk):
    from sklearn.linear_model import Ridge

    with pytest.warns(UserWarning, match="solver 'svd'"):  # auto picks svd, and says so
        est = Ridge(alpha=0.5).fit(S(X), S(Y_REG))
    same(est.coef_, Ridge(alpha=0.5, solver="svd").fit(X, Y_REG).coef_)
    for solver in ["cholesky", "lsqr", "sparse_cg", "sag", "saga", "lbfgs"]:
        with pytest.raises(ValueError, match="svd"):
            Ridge(solver=solver, positive=solver == "lbfgs").fit(S(X), S(Y_REG))


def test_lbfgs_linear_models(sk):
    from sklearn.linear_model import LogisticRegression, PoissonRegressor

    Xs = (X - X.mean(0)) / X.std(0)
    for make, y in [
        (lambda: LogisticRegression(max_iter=200), Y_CLS),
        (lambda: LogisticRegression(max_iter=200), Y_BIN),
        (lambda: PoissonRegressor(max_iter=200), Y_POS),
    ]:
        ref = make().fit(Xs, y)
        # L-BFGS runs in SciPy on the driver: each step fetches the loss and gradient
        steps = int(np.max(ref.n_iter_)) + 5
        grads = steps * (ref.coef_.size + np.size(ref.intercept_) + 1) * 8
        labels = one_hot_fetch(y) if y.dtype.kind == "i" else 0
        with fetches_little(Xs, allow=grads + labels):
            est = make().fit(S(Xs), S(y))
        same_estimator(est, ref, rtol=1e-5, atol=1e-7)
        same(est.predict(S(Xs)), ref.predict(Xs), rtol=1e-5, atol=1e-7)


def test_other_array_api_estimators(sk):
    from sklearn.kernel_approximation import Nystroem
    from sklearn.mixture import GaussianMixture
    from sklearn.naive_bayes import GaussianNB

    with fetches_little(X):
        nb = GaussianNB().fit(S(X), S(Y_CLS))
    ref = GaussianNB().fit(X, Y_CLS)
    same_estimator(nb, ref)
    same(nb.predict_proba(S(X)), ref.predict_proba(X))
    ny = Nystroem(n_components=10, random_state=0)
    same(ny.fit_transform(S(X)), Nystroem(n_components=10, random_state=0).fit_transform(X))
    gm = GaussianMixture(2, init_params="random_from_data", random_state=0)
    with fetches_little(X):
        gm.fit(S(X))
    ref = GaussianMixture(2, init_params="random_from_data", random_state=0).fit(X)
    same(gm.means_, ref.means_, rtol=1e-6)
    same(gm.predict_proba(S(X)), ref.predict_proba(X), rtol=1e-6, atol=1e-8)


SCALERS = [
    ("StandardScaler", {}),
    ("StandardScaler", {"with_mean": False}),
    ("StandardScaler", {"with_std": False}),
    ("MinMaxScaler", {}),
    ("MinMaxScaler", {"feature_range": (-1, 2), "clip": True}),
    ("MaxAbsScaler", {}),
    ("Normalizer", {}),
    ("Normalizer", {"norm": "l1"}),
    ("Normalizer", {"norm": "max"}),
    ("Binarizer", {"threshold": 1.0}),
    ("PolynomialFeatures", {"degree": 2}),
]


# scikit-learn's 0 / 0 in its incremental variance: silenced by np.errstate on NumPy
# only (the array API has no errstate), so spartan's tiles warn, as array-api-strict's do
@pytest.mark.filterwarnings("ignore:invalid value encountered in divide:RuntimeWarning")
@pytest.mark.parametrize("name, options", SCALERS, ids=[f"{n}{o}" for n, o in SCALERS])
def test_preprocessing(sk, name, options):
    from sklearn import preprocessing

    make = getattr(preprocessing, name)
    with fetches_little(X):
        est = make(**options).fit(S(X))
        out = est.transform(S(X))
    ref = make(**options).fit(X)
    same_estimator(est, ref)
    same(out, ref.transform(X))
    same(est.transform(S(Y)), ref.transform(Y))  # new data, outside the fitted range
    if hasattr(ref, "inverse_transform"):
        same(est.inverse_transform(out), ref.inverse_transform(ref.transform(X)))


def test_preprocessing_functions(sk):
    from sklearn import preprocessing

    for fn, options in [
        (preprocessing.normalize, {}),
        (preprocessing.normalize, {"norm": "l1", "axis": 0}),
        (preprocessing.minmax_scale, {}),
        (preprocessing.maxabs_scale, {}),
        (preprocessing.binarize, {"threshold": 0.5}),
    ]:
        same(*both(fn, X, **options), where=fn.__name__)
    K = X @ X.T
    kc = preprocessing.KernelCenterer()
    same(kc.fit_transform(S(K)), preprocessing.KernelCenterer().fit_transform(K))
    le = preprocessing.LabelEncoder().fit(S(Y_CLS))
    same(le.classes_, np.unique(Y_CLS))
    same(le.transform(S(Y_CLS_PRED)), np.searchsorted(np.unique(Y_CLS), Y_CLS_PRED))


PAIRWISE = [
    "additive_chi2_kernel",
    "chi2_kernel",
    "cosine_similarity",
    "cosine_distances",
    "euclidean_distances",
    "linear_kernel",
    "polynomial_kernel",
    "rbf_kernel",
    "sigmoid_kernel",
    "laplacian_kernel",
    "manhattan_distances",
    "paired_cosine_distances",
    "paired_euclidean_distances",
    "paired_manhattan_distances",
]


@pytest.mark.parametrize("name", PAIRWISE)
def test_pairwise(sk, name):
    from sklearn.metrics import pairwise

    fn = getattr(pairwise, name)
    a, b = (POS, np.abs(Y) + 0.1) if "chi2" in name else (X, Y)
    if name.startswith("paired"):
        b = a[::-1].copy()
    same(*both(fn, a, b, share=1.0))  # the result is what is fetched: share of a and b
    if not name.startswith("paired"):
        same(*both(fn, a, share=1.0), where="Y=None")


@pytest.mark.parametrize("metric", ["cosine", "euclidean", "l2", "manhattan", "l1", "cityblock"])
def test_pairwise_distances(sk, metric):
    from sklearn.metrics import pairwise_distances, pairwise_distances_argmin

    same(*both(pairwise_distances, X, Y, metric=metric, share=1.0))
    same(*both(pairwise_distances_argmin, X, Y, metric=metric))


@pytest.mark.parametrize(
    "metric", ["linear", "poly", "polynomial", "rbf", "sigmoid", "cosine", "additive_chi2", "chi2"]
)
def test_pairwise_kernels(sk, metric):
    from sklearn.metrics.pairwise import pairwise_kernels

    same(*both(pairwise_kernels, POS, POS[:7], metric=metric, share=1.0))


REGRESSION_METRICS = [
    ("r2_score", {}),
    ("explained_variance_score", {}),
    ("max_error", {}),
    ("mean_absolute_error", {}),
    ("mean_absolute_percentage_error", {}),
    ("mean_pinball_loss", {"alpha": 0.3}),
    ("mean_squared_error", {}),
    ("root_mean_squared_error", {}),
    ("median_absolute_error", {}),
    ("d2_absolute_error_score", {}),
    ("d2_pinball_score", {"alpha": 0.9}),
    ("mean_squared_log_error", {}),
    ("root_mean_squared_log_error", {}),
    ("mean_poisson_deviance", {}),
    ("mean_gamma_deviance", {}),
    ("mean_tweedie_deviance", {"power": 1.5}),
    ("mean_tweedie_deviance", {"power": -0.5}),
    ("d2_tweedie_score", {"power": 1.5}),
]


@pytest.mark.parametrize(
    "name, options", REGRESSION_METRICS, ids=[f"{n}{o}" for n, o in REGRESSION_METRICS]
)
def test_regression_metrics(sk, name, options):
    from sklearn import metrics

    fn = getattr(metrics, name)
    pred = 0.9 * Y_POS + 0.2
    same(*both(fn, Y_POS, pred, **options))
    w = RNG.random(120)
    if name != "max_error":
        same(*both(fn, Y_POS, pred, sample_weight=w, **options), where="sample_weight")
    if name not in ("max_error", "mean_poisson_deviance", "mean_gamma_deviance"):
        if "tweedie" not in name:  # multi-output: one value per output
            two = np.stack([Y_POS, Y_POS**0.5], axis=1)
            same(*both(fn, two, two * 0.8 + 0.1, multioutput="raw_values", **options))


CLASSIFICATION_METRICS = [
    ("accuracy_score", {}),
    ("balanced_accuracy_score", {}),
    ("cohen_kappa_score", {}),
    ("confusion_matrix", {}),
    ("confusion_matrix", {"normalize": "true"}),
    ("multilabel_confusion_matrix", {}),
    ("f1_score", {"average": "macro"}),
    ("f1_score", {"average": None}),
    ("fbeta_score", {"beta": 0.5, "average": "weighted"}),
    ("jaccard_score", {"average": "micro"}),
    ("precision_score", {"average": "macro"}),
    ("recall_score", {"average": "macro"}),
    ("precision_recall_fscore_support", {"average": None}),
    ("zero_one_loss", {}),
    ("hamming_loss", {}),
]


@pytest.mark.parametrize(
    "name, options", CLASSIFICATION_METRICS, ids=[f"{n}{o}" for n, o in CLASSIFICATION_METRICS]
)
def test_classification_metrics(sk, name, options):
    from sklearn import metrics

    fn = getattr(metrics, name)
    # scikit-learn counts confusion matrices with scipy.sparse, on NumPy copies of the labels
    counted = name in ("confusion_matrix", "balanced_accuracy_score", "cohen_kappa_score")
    allow = 2 * Y_CLS.nbytes + 64 if counted else 0
    same(*both(fn, Y_CLS, Y_CLS_PRED, allow=allow, **options))
    if name != "cohen_kappa_score":
        binary = {k: v for k, v in options.items() if k != "average"}
        same(*both(fn, Y_BIN, Y_BIN_PRED, allow=allow, **binary), where="binary")


def test_contingency_matrix(sk):
    from sklearn.metrics.cluster import contingency_matrix

    got = contingency_matrix(S(Y_CLS), S(Y_CLS_PRED))  # small counts: SciPy returns NumPy
    np.testing.assert_array_equal(np.asarray(got), contingency_matrix(Y_CLS, Y_CLS_PRED))


PROBABILISTIC_METRICS = ["brier_score_loss", "log_loss", "d2_brier_score", "d2_log_loss_score"]


@pytest.mark.parametrize("name", PROBABILISTIC_METRICS)
def test_probabilistic_metrics(sk, name):
    from sklearn import metrics

    fn = getattr(metrics, name)
    # y_true's one-hot matrix is built on NumPy (label_binarize); the scores stay
    same(*both(fn, Y_BIN, SCORE, allow=one_hot_fetch(Y_BIN)))
    same(*both(fn, Y_CLS, PROBA3, allow=one_hot_fetch(Y_CLS)), where="multiclass")


RANKING_METRICS = [
    "roc_curve",
    "precision_recall_curve",
    "det_curve",
    "average_precision_score",
    "roc_auc_score",
]


@pytest.mark.parametrize("name", RANKING_METRICS)
def test_ranking_metrics(sk, name):
    from sklearn import metrics

    allow = one_hot_fetch(Y_BIN) if name == "roc_auc_score" else 0  # label_binarize
    same(*both(getattr(metrics, name), Y_BIN, SCORE, allow=allow))


@pytest.mark.filterwarnings("ignore:invalid value encountered in divide:RuntimeWarning")
def test_model_selection_tools(sk):
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import GridSearchCV, cross_val_predict, train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.utils import check_consistent_length

    check_consistent_length(S(X), S(Y_REG))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        check_consistent_length(S(X), S(Y_REG[:-1]))
    same(
        train_test_split(S(X), S(Y_REG), random_state=0),
        train_test_split(X, Y_REG, random_state=0),
    )
    pipe = make_pipeline(StandardScaler(), Ridge(solver="svd"))
    same(*both(lambda a, b: cross_val_predict(pipe, a, b, cv=3), X, Y_REG))
    grid = GridSearchCV(Ridge(solver="svd"), {"alpha": [0.1, 10.0]}, cv=3)
    got = grid.fit(S(X), S(Y_REG))
    ref = GridSearchCV(Ridge(solver="svd"), {"alpha": [0.1, 10.0]}, cv=3).fit(X, Y_REG)
    assert got.best_params_ == ref.best_params_
    same(got.best_estimator_.coef_, ref.best_estimator_.coef_)


def test_sklearn_on_ray(on_ray, monkeypatch):
    """The same estimators on Ray workers: PCA (TSQR), a scaler + Ridge pipeline, and a
    metric; the data stays on the workers."""
    sklearn = pytest.importorskip("sklearn", reason="scikit-learn is not installed")
    pytest.importorskip("array_api_compat", reason="array-api-compat is not installed")
    from sklearn.decomposition import PCA
    from sklearn.linear_model import Ridge
    from sklearn.metrics import r2_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    monkeypatch.setattr(sp.config, "tsqr_min_bytes", 0)
    assert sp.backend.current() is on_ray
    with sklearn.config_context(array_api_dispatch=True):
        with fetches_little(X):
            pca = PCA(3, svd_solver="full").fit(S(X))
            pipe = make_pipeline(StandardScaler(), Ridge(solver="svd")).fit(S(X), S(Y_REG))
            score = r2_score(S(Y_REG), pipe.predict(S(X)))
        same_estimator(pca, PCA(3, svd_solver="full").fit(X))
        ref = make_pipeline(StandardScaler(), Ridge(solver="svd")).fit(X, Y_REG)
        same(pipe[-1].coef_, ref[-1].coef_)
        same(score, r2_score(Y_REG, ref.predict(X)))


# -- SciPy ---------------------------------------------------------------------------------


def require_scipy_array_api() -> None:
    import scipy._lib._array_api

    if not scipy._lib._array_api.SCIPY_ARRAY_API:
        pytest.skip("SciPy was imported without SCIPY_ARRAY_API=1 (tests/conftest.py sets it)")


@pytest.fixture
def scipy_xp(local: Any) -> None:
    """SciPy with array API support, on the in-process backend."""
    require_scipy_array_api()


U = RNG.uniform(0.05, 0.95, (60, 5))  # (0, 1): the domain of the inverse functions
V = RNG.uniform(0.5, 4.0, (60, 5))

#: scipy.special's functions with array API support (its xp_capabilities table), and
#: arguments in their domains
SPECIAL = {
    **dict.fromkeys(
        "cbrt cosdg cosm1 cotdg entr erf erfc erfcx exp1 exp10 exp2 expi expit exprel gamma "
        "gammaln gammasgn i0 i0e i1 i1e j0 j1 k0 k0e k1 k1e log_ndtr loggamma psi rgamma "
        "sindg spence tandg y0 y1 zetac ellipk ellipkm1".split(),
        (V,),
    ),
    **dict.fromkeys("erfinv logit ndtri".split(), (U,)),
    **dict.fromkeys(
        "xlogy xlog1py rel_entr kl_div gammainc gammaincc beta betaln binom poch huber "
        "pseudo_huber chdtr chdtrc pdtr pdtrc boxcox boxcox1p inv_boxcox inv_boxcox1p "
        "zeta expn yn stdtr".split(),
        (V, V[::-1]),
    ),
    **dict.fromkeys("gammaincinv gammainccinv chdtri stdtrit".split(), (V, U)),
    "pdtri": (np.floor(V), U),
    **dict.fromkeys("betainc betaincc fdtr fdtrc gdtr gdtrc".split(), (V, V, U)),
    **dict.fromkeys("betaincinv fdtri hyp1f1 lpmv radian".split(), (V, V, U)),
    "nbdtr": (np.floor(V), np.floor(V) + 1, U),
    "nbdtrc": (np.floor(V), np.floor(V) + 1, U),
    "nbdtri": (np.floor(V), np.floor(V) + 1, U),
    **dict.fromkeys("bdtr bdtrc bdtri".split(), (V.astype(np.int64), V.astype(np.int64) + 1, U)),
}


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_scipy_special(scipy_xp, name):
    """Each element-wise function runs on the tiles (spartan.special), none fetched."""
    import scipy.special

    fn = getattr(scipy.special, name)
    args = SPECIAL[name]
    if name in ("expn", "yn"):
        args = (np.floor(args[0]).astype(np.int64), args[1])
    same(*both(fn, *args, share=0.01), rtol=1e-10, atol=0)


def test_scipy_special_not_ufuncs(scipy_xp):
    import scipy.special

    same(*both(scipy.special.polygamma, np.array([0, 1, 2, 3]), V[:, :4], share=0.01))
    same(*both(scipy.special.multigammaln, V + 3, 3, share=0.01))
    with pytest.raises(ValueError, match="exceed"):
        scipy.special.multigammaln(S(V), 3)
    for name, options in [
        ("logsumexp", {}),
        ("logsumexp", {"axis": 0}),
        ("logsumexp", {"axis": 1, "keepdims": True}),
        ("softmax", {"axis": 1}),
        ("log_softmax", {"axis": 0}),
        ("log_softmax", {}),
    ]:
        fn = getattr(scipy.special, name)
        same(*both(fn, V, **options), where=f"{name}{options}")
    logsumexp_b = lambda a, b: scipy.special.logsumexp(a, b=b, axis=1)
    same(*both(logsumexp_b, V, U), where="logsumexp(b=)")


def test_spartan_special_namespace(local):
    import scipy.special

    x = sp.asarray(V)
    y = sp.special.gammaln(x) + 1  # one fused map over the tiles
    assert isinstance(y, sp.Array)
    same(y, scipy.special.gammaln(V) + 1)
    assert {"erf", "gammaln", "xlogy", "polygamma"} <= set(dir(sp.special))
    with pytest.raises(AttributeError, match="element-wise"):
        sp.special.logsumexp  # noqa: B018 -- not element-wise: SciPy's own runs on spartan
    with pytest.raises(TypeError, match="erf"):
        sp.special.erf(sp.asarray(np.array(["a", "b"])))  # at build time, NumPy's error


STATS = [
    ("moment", {"order": 3}),
    ("moment", {"order": [1, 2, 4], "center": 0.5}),
    ("skew", {}),
    ("skew", {"bias": False, "axis": 1}),
    ("kurtosis", {}),
    ("kurtosis", {"fisher": False, "bias": False}),
    ("zscore", {}),
    ("zscore", {"axis": 1, "ddof": 1}),
    ("gzscore", {}),
    ("variation", {}),
    ("sem", {}),
    ("describe", {}),
    ("gmean", {}),
    ("hmean", {}),
    ("pmean", {"p": 2.5}),
    ("tmean", {}),
    ("tvar", {"limits": (1.0, 3.0)}),
    ("tstd", {}),
    ("tmin", {}),
    ("tmax", {}),
    ("tsem", {}),
    ("trim_mean", {"proportiontocut": 0.1}),
    ("iqr", {}),
    ("median_abs_deviation", {}),
    ("entropy", {}),
    ("differential_entropy", {}),
    ("rankdata", {"axis": 0}),
    ("circmean", {}),
    ("circvar", {}),
    ("circstd", {}),
    ("gstd", {}),
    ("kstat", {"n": 3, "axis": 0}),
    ("kstatvar", {"axis": 0}),
    ("lmoment", {}),
    ("quantile", {"p": 0.3, "axis": 0}),
    ("boxcox_llf", None),
    ("yeojohnson_llf", None),
    ("skewtest", {}),
    ("kurtosistest", {}),
    ("normaltest", {}),
    ("jarque_bera", {}),
    ("ttest_1samp", {"popmean": 2.0}),
]


@pytest.mark.parametrize("name, options", STATS, ids=[f"{n}{o}" for n, o in STATS])
def test_scipy_stats_one_sample(scipy_xp, name, options):
    import scipy.stats

    fn = getattr(scipy.stats, name)
    if options is None:  # llf(lmb, data)
        same(*both(lambda data: fn(0.5, data), V))
        return
    same(*both(fn, V, **options))


TWO_SAMPLE = [
    "ttest_ind",
    "ttest_rel",
    "pearsonr",
    "mannwhitneyu",
    "wilcoxon",
    "f_oneway",
    "bartlett",
    "levene",
    "fligner",
    "ansari",
    "mood",
    "kruskal",
    "brunnermunzel",
    "alexandergovern",
    "chatterjeexi",
    "zmap",
]


@pytest.mark.parametrize("name", TWO_SAMPLE)
def test_scipy_stats_two_samples(scipy_xp, name):
    import scipy.stats

    fn = getattr(scipy.stats, name)
    a, b = V[:, 0], U[:, 0] * 4
    if name == "chatterjeexi":
        a, b = V, U
    same(*both(fn, a, b))


def test_scipy_stats_frequencies_and_pvalues(scipy_xp):
    import scipy.stats

    counts = np.floor(V * 10)
    same(*both(scipy.stats.chisquare, counts))
    same(*both(scipy.stats.power_divergence, counts, lambda_="log-likelihood"))
    same(*both(scipy.stats.friedmanchisquare, V[:, 0], V[:, 1], V[:, 2]))
    same(*both(scipy.stats.combine_pvalues, U[:, 0]))
    same(*both(scipy.stats.false_discovery_control, U[:, 0]))
    same(*both(lambda a: scipy.stats.mode(a).mode, counts))
    same(*both(lambda a: scipy.stats.directional_stats(a).mean_direction, V))


def test_scipy_integrate_and_cluster(scipy_xp):
    import scipy.cluster.vq
    import scipy.integrate

    same(*both(scipy.integrate.trapezoid, V, axis=0))
    same(*both(scipy.integrate.trapezoid, V, dx=0.5))
    same(*both(scipy.integrate.cumulative_trapezoid, V, axis=0, initial=0))
    same(*both(scipy.integrate.cumulative_simpson, V, axis=0))
    same(*both(scipy.integrate.romb, V[:33], axis=0))
    same(*both(scipy.cluster.vq.whiten, V))


FFT = [
    ("fft", {"axis": 0}),
    ("ifft", {}),
    ("rfft", {"axis": 0}),
    ("irfft", {"n": 8}),
    ("hfft", {"axis": 0}),
    ("fftn", {}),
    ("ifftn", {"axes": (0,)}),
    ("rfftn", {}),
    ("irfftn", {}),
    ("fft2", {}),
    ("fftshift", {}),
    ("ifftshift", {"axes": 0}),
]


@pytest.mark.parametrize("name, options", FFT, ids=[f"{n}{o}" for n, o in FFT])
def test_scipy_fft(scipy_xp, name, options):
    """SciPy hands the transform to ``spartan.fft`` (``xp.fft``): nothing fetched."""
    import scipy.fft

    same(*both(getattr(scipy.fft, name), V, **options, share=0.01), rtol=1e-10, atol=1e-10)


def test_scipy_fftfreq(scipy_xp):
    import scipy.fft

    same(scipy.fft.fftfreq(8, 0.1, xp=sp), np.fft.fftfreq(8, 0.1))
    same(scipy.fft.rfftfreq(9, xp=sp), np.fft.rfftfreq(9))


def test_scipy_signal_through_spartan_fft(scipy_xp):
    """scipy.signal's FFT-based functions call ``xp.fft``: spartan.fft, nothing fetched."""
    import scipy.signal

    same(*both(scipy.signal.fftconvolve, V[:, 0], U[:5, 1], share=0.01))
    same(*both(scipy.signal.fftconvolve, V, U[:4], mode="same", share=0.01))
    same(*both(scipy.signal.hilbert, V, axis=0, share=0.01))
    same(*both(scipy.signal.resample, V, 30, share=0.01))


#: SciPy calls that run on a NumPy copy of a spartan argument: SciPy dispatches them to
#: CuPy/JAX/PyTorch only, and for any other namespace converts the arguments with
#: ``np.asarray`` (which fetches a spartan array whole into the driver) and converts
#: the result back. They give the right answer; they do not scale. Listed in the
#: README's clients section: a call that starts to stay distributed fails here.
NUMPY_COPY = {
    "signal.convolve": lambda m, a: m.signal.convolve(a[:, 0], a[:5, 1]),
    "signal.correlate": lambda m, a: m.signal.correlate(a[:, 0], a[:5, 1]),
    "signal.lfilter": lambda m, a: m.signal.lfilter(a[:5, 1], a[:1, 1], a[:, 0]),
    "signal.detrend": lambda m, a: m.signal.detrend(a, axis=0),
    "signal.medfilt": lambda m, a: m.signal.medfilt(a[:, 0]),
    "signal.savgol_filter": lambda m, a: m.signal.savgol_filter(a[:, 0], 5, 2),
    "ndimage.gaussian_filter": lambda m, a: m.ndimage.gaussian_filter(a, 1.0),
    "ndimage.uniform_filter": lambda m, a: m.ndimage.uniform_filter(a, 3),
    "fft.dct": lambda m, a: m.fft.dct(a, axis=0),
    "fft.dst": lambda m, a: m.fft.dst(a, axis=0),
    "cluster.vq.vq": lambda m, a: m.cluster.vq.vq(a, a[:3])[1],
}


@pytest.mark.parametrize("name", sorted(NUMPY_COPY))
def test_scipy_runs_on_a_numpy_copy(scipy_xp, name):
    import scipy
    import scipy.cluster.vq
    import scipy.fft
    import scipy.ndimage
    import scipy.signal

    run = NUMPY_COPY[name]
    before = sp.stats()["bytes_to_driver"]
    got = run(scipy, sp.asarray(V))
    assert sp.stats()["bytes_to_driver"] - before >= V[:, 0].nbytes, f"{name} stays distributed"
    want = run(scipy, V)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9, atol=1e-12)


def test_scipy_on_ray(on_ray):
    """scipy.special's ufuncs (pickled to the Ray workers), a reduction and a test."""
    import scipy.special
    import scipy.stats

    require_scipy_array_api()
    assert sp.backend.current() is on_ray

    same(*both(scipy.special.erf, V, share=0.01))
    same(*both(scipy.special.xlogy, V, U, share=0.01))
    same(*both(scipy.special.logsumexp, V, axis=0))
    same(*both(scipy.stats.zscore, V))
    same(*both(scipy.stats.ttest_ind, V[:, 0], V[:, 1]))
