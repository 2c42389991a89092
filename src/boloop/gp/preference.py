"""Kernel logistic regression on duels and the dueling kernel (numerics only).

Kayal, Vakili, Toni, Shiu, Bernacchia, "Bayesian Optimization from Human Feedback: Near-Optimal
Regret Bounds" (ICML), Section 2.3 and Appendix C; the dueling kernel is eq. 4 (from Pasztor et al.
2024). Notation of the paper:

* arms (actions) ``X = {x_1..x_m}`` with Gram matrix ``K_X = [k(x_i, x_j)]`` (m, m);
* a duel ``z = (x, x')`` has ``y = 1{x > x'} ~ Bernoulli(mu(h(z)))`` with the sigmoid link ``mu``
  (no temperature) and the preference function ``h(x, x') = f(x) - f(x')``;
* dueling kernel (eq. 4) ``kk(z1, z2) = k(x1, x2) + k(x1', x2') - k(x1, x2') - k(x1', x2)``. With
  ``a_z = e_x - e_x'`` in R^m it is ``a_z1^T K_X a_z2`` and the pair Gram matrix is
  ``A K_X A^T``;
* estimator (eq. 7): ``h_t = argmin sum_i [-y_i log mu(h(z_i)) - (1 - y_i) log(1 - mu(h(z_i)))]
  + (lambda / 2) ||h||^2``;
* uncertainty (eq. 10): ``sigma_t^2(z) = kk(z, z) - kk_t(z)^T (KK_t + rho I)^{-1} kk_t(z)`` with
  ``rho = lambda kappa`` in the paper's analysis (and ``rho = lambda`` in its experiments).

Regulariser (the paper is inconsistent, see the spec's pitfall P1). Eq. 7 penalises the RKHS norm
``||h||^2_{H_kk}``; eq. 9 and 36, after the representer substitution ``h = sum_i theta_i kk(z_i, .)``,
print the Euclidean norm ``||theta||_2^2`` instead of ``theta^T KK theta``. We default to the RKHS
norm (``regularizer="rkhs"``): it is the estimator of eq. 7, the one Appendix C analyses (there
``theta`` is an element of the RKHS and ``||theta||`` its RKHS norm, ``G_t >= lambda I_H``), and it
does not depend on how many times a pair was repeated. The literal eq. 9 penalty is available as
``regularizer="l2_coef"`` (and ``normalize_loss=True`` divides the data term by the number of duels
as the authors' script does).

Solver: Newton's method with a backtracking line search, to a gradient norm below ``tol`` (1e-8 by
default), in a well-conditioned parametrisation:

* ``"rkhs"``: features ``Phi = U Lambda^{1/2}`` from the eigendecomposition ``K_X = U Lambda U^T``
  (eigenvalues below ``eig_rtol * max`` dropped), ``f = Phi v``, ``||h||_{H_kk} = ||v||``; the
  Hessian ``Psi^T W Psi + lambda I`` has smallest eigenvalue ``lambda``;
* ``"l2_coef"``: one coefficient per distinct pair (repeats merged exactly: ``c`` equal copies
  share ``theta`` equally, so the penalty becomes ``theta_j^2 / c_j``), Hessian
  ``KK W KK + lambda D``.

Uncertainty: :class:`DuelCovariance` keeps the posterior covariance ``S`` (m, m) of the latent
utility over the arms (prior ``K_X``, Gaussian observations of ``f(x) - f(x')`` with variance
``rho``) and updates it by rank-one steps; then ``sigma^2(x, x') = S_xx + S_x'x' - 2 S_xx'`` equals
eq. 10 exactly for every pair at once.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from boloop.errors import InvalidInputError, NotFittedError
from boloop.gp.kernels import Kernel

__all__ = [
    "dueling_kernel",
    "dueling_gram",
    "KernelLogisticDuels",
    "DuelCovariance",
    "sigmoid",
    "sigmoid_derivative",
]

logger = logging.getLogger("boloop")

REGULARIZERS = ("rkhs", "l2_coef")


def sigmoid(a: Any) -> np.ndarray:
    """The BTL link ``mu(a) = 1 / (1 + e^{-a})`` (no temperature), elementwise."""
    from scipy.special import expit

    return expit(np.asarray(a, dtype=np.float64))


def sigmoid_derivative(a: Any) -> np.ndarray:
    """``mu'(a) = mu(a) (1 - mu(a))``, elementwise; ``1 / mu'`` gives the paper's kappa (eq. 2)."""
    m = sigmoid(a)
    return m * (1.0 - m)


def dueling_kernel(
    kernel: Kernel,
    A: np.ndarray,
    A_prime: np.ndarray,
    B: np.ndarray | None = None,
    B_prime: np.ndarray | None = None,
) -> np.ndarray:
    """Dueling kernel (eq. 4) between pairs ``(A[i], A_prime[i])`` and ``(B[j], B_prime[j])``.

    ``kk(z1, z2) = k(x1, x2) + k(x1', x2') - k(x1, x2') - k(x1', x2)``.

    Shapes: ``A``, ``A_prime`` (n, d); ``B``, ``B_prime`` (p, d) (default: the first pair set).
    Returns (n, p).
    """
    A = np.asarray(A, dtype=np.float64)
    A_prime = np.asarray(A_prime, dtype=np.float64)
    if A.shape != A_prime.shape:
        raise InvalidInputError(
            f"A and A_prime must have the same shape, got {A.shape} and {A_prime.shape}"
        )
    if B is None:
        B, B_prime = A, A_prime
    B = np.asarray(B, dtype=np.float64)
    B_prime = np.asarray(B_prime, dtype=np.float64)
    if B_prime is None or B.shape != B_prime.shape:
        raise InvalidInputError("B and B_prime must be given together with the same shape")
    return kernel.k(A, B) + kernel.k(A_prime, B_prime) - kernel.k(A, B_prime) - kernel.k(A_prime, B)


def dueling_gram(K_X: np.ndarray, pairs: Any, other: Any | None = None) -> np.ndarray:
    """The dueling Gram matrix ``A K_X B^T`` between index pairs (eq. 4 on a finite arm set).

    Shapes: ``K_X`` (m, m); ``pairs`` (n, 2) and ``other`` (p, 2) integer arm indices (default:
    ``pairs``). Returns (n, p).
    """
    K = np.asarray(K_X, dtype=np.float64)
    P = _as_pairs(pairs, K.shape[0], "pairs")
    Q = P if other is None else _as_pairs(other, K.shape[0], "other")
    i1, j1 = P[:, 0][:, None], P[:, 1][:, None]
    i2, j2 = Q[:, 0][None, :], Q[:, 1][None, :]
    return K[i1, i2] + K[j1, j2] - K[i1, j2] - K[j1, i2]


def _as_pairs(pairs: Any, m: int, name: str) -> np.ndarray:
    P = np.asarray(pairs)
    if P.ndim == 1 and P.size == 2:
        P = P.reshape(1, 2)
    if P.ndim != 2 or P.shape[1] != 2:
        raise InvalidInputError(f"{name} must have shape (n, 2), got {P.shape}")
    if P.size and (not np.issubdtype(P.dtype, np.integer)):
        if not np.all(np.isfinite(P)) or np.any(P != np.round(P)):
            raise InvalidInputError(f"{name} must hold integer arm indices")
        P = P.astype(np.int64)
    P = P.astype(np.int64)
    if P.size and (P.min() < 0 or P.max() >= m):
        raise InvalidInputError(f"{name} holds arm indices outside [0, {m})")
    return P


def _check_gram(K_X: Any, name: str = "K_X") -> np.ndarray:
    K = np.array(K_X, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        raise InvalidInputError(f"{name} must be a non-empty square matrix, got shape {K.shape}")
    if not np.all(np.isfinite(K)):
        raise InvalidInputError(f"{name} contains NaN or infinite values")
    if not np.allclose(K, K.T, rtol=1e-10, atol=1e-12):
        raise InvalidInputError(f"{name} must be symmetric")
    return 0.5 * (K + K.T)


def _arm_index(value: Any, m: int, name: str) -> int:
    if isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{name} must be an arm index, got {value!r}")
    try:
        idx = int(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be an arm index, got {value!r}") from exc
    if idx != value or not 0 <= idx < m:
        raise InvalidInputError(f"{name} must be an integer arm index in [0, {m}), got {value!r}")
    return idx


class KernelLogisticDuels:
    """Regularised kernel logistic regression on duels over a finite arm set (eq. 7-9).

    Parameters
    ----------
    K_X:
        Gram matrix of the arms, (m, m), symmetric PSD.
    lam:
        The regularisation parameter ``lambda`` of eq. 7 (> 0). The paper uses 0.05.
    regularizer:
        ``"rkhs"`` (default, eq. 7: ``(lambda/2) ||h||^2_{H_kk}``) or ``"l2_coef"`` (eq. 9 as
        printed: ``(lambda/2) ||theta||_2^2``). See the module docstring.
    normalize_loss:
        Divide the data term by the number of duels (the authors' script); default False.
    tol:
        Newton stops when the gradient norm is below ``tol`` (default 1e-8).
    eig_rtol:
        ``"rkhs"`` only: eigenvalues of ``K_X`` below ``eig_rtol * max`` are dropped (the
        directions they carry cost more than ``1 / eig_rtol`` times the others in RKHS norm).

    Data are stored as counts per unordered pair: ``wins[j]`` of ``counts[j]`` duels of
    ``pairs[j] = (a, b)``, ``a < b``, were won by ``a``. A duel of an arm with itself carries no
    information (``h(x, x) = 0`` for every ``h``) and is a documented no-op of :meth:`add`.

    After :meth:`fit`: ``utility`` (m,) is the fitted latent utility ``f_t`` on the arms (defined
    up to a constant; ``h_t(x_i, x_j) = utility[i] - utility[j]``); ``gradient_norm`` and
    ``n_newton`` describe the solve.
    """

    def __init__(
        self,
        K_X: Any,
        lam: float = 0.05,
        regularizer: str = "rkhs",
        normalize_loss: bool = False,
        tol: float = 1e-8,
        eig_rtol: float = 1e-10,
        max_iter: int = 200,
    ) -> None:
        self.K_X = _check_gram(K_X)
        self.m = int(self.K_X.shape[0])
        lam_f = float(lam)
        if not math.isfinite(lam_f) or lam_f <= 0:
            raise InvalidInputError(f"lam must be positive and finite, got {lam!r}")
        if regularizer not in REGULARIZERS:
            raise InvalidInputError(
                f"regularizer must be one of {REGULARIZERS}, got {regularizer!r}"
            )
        self.lam = lam_f
        self.regularizer = regularizer
        self.normalize_loss = bool(normalize_loss)
        self.tol = float(tol)
        self.eig_rtol = float(eig_rtol)
        self.max_iter = int(max_iter)
        self._index: dict[tuple[int, int], int] = {}
        self._pairs: list[tuple[int, int]] = []
        self._wins: list[float] = []
        self._counts: list[float] = []
        self.n_duels = 0
        self.version = 0
        self._Phi: np.ndarray | None = None
        self._v: np.ndarray | None = None  # rkhs parameters (m',)
        self._theta: np.ndarray | None = None  # l2_coef coefficients (p,)
        self._hess: Any = None  # Cholesky factor of the last Newton Hessian (rkhs)
        #: number of Hessians factorised so far (rkhs)
        self.n_hessian = 0
        self._fitted_version = -1
        self.utility = np.zeros(self.m)
        self.gradient_norm = 0.0
        self.n_newton = 0
        self.objective = 0.0

    # -- data -------------------------------------------------------------------------------------
    @property
    def pairs(self) -> np.ndarray:
        """Distinct unordered pairs seen, (p, 2) with ``a < b``."""
        return np.array(self._pairs, dtype=np.int64).reshape(-1, 2)

    @property
    def wins(self) -> np.ndarray:
        """Wins of the first arm of each pair, (p,)."""
        return np.array(self._wins, dtype=np.float64)

    @property
    def counts(self) -> np.ndarray:
        """Number of duels of each pair, (p,)."""
        return np.array(self._counts, dtype=np.float64)

    def add(self, i: Any, j: Any, y: Any) -> bool:
        """Record a duel of arms ``i`` and ``j`` with ``y = 1{x_i preferred to x_j}``.

        Returns False (and stores nothing) for ``i == j``: a self-duel carries no information.
        Raises :class:`InvalidInputError` (changing nothing) for bad indices or ``y`` not 0/1.
        """
        a = _arm_index(i, self.m, "i")
        b = _arm_index(j, self.m, "j")
        if isinstance(y, bool | np.bool_):
            y_val = int(y)
        else:
            try:
                y_val = int(y)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"y must be 0 or 1, got {y!r}") from exc
            if y_val != y or y_val not in (0, 1):
                raise InvalidInputError(f"y must be 0 or 1, got {y!r}")
        if a == b:
            return False
        if a > b:
            a, b, y_val = b, a, 1 - y_val
        key = (a, b)
        slot = self._index.get(key)
        if slot is None:
            self._index[key] = len(self._pairs)
            self._pairs.append(key)
            self._wins.append(float(y_val))
            self._counts.append(1.0)
        else:
            self._wins[slot] += y_val
            self._counts[slot] += 1.0
        self.n_duels += 1
        self.version += 1
        return True

    def add_many(self, pairs: Any, y: Any) -> int:
        """Record several duels; ``pairs`` (n, 2), ``y`` (n,) of 0/1. Returns how many were stored.

        Validates everything first, so a bad row changes nothing.
        """
        P = _as_pairs(pairs, self.m, "pairs")
        Y = np.asarray(y).reshape(-1)
        if Y.shape[0] != P.shape[0]:
            raise InvalidInputError(f"y must have {P.shape[0]} values, got {Y.shape[0]}")
        if not np.all(np.isin(Y, (0, 1))):
            raise InvalidInputError("y must hold only 0 and 1")
        return sum(self.add(int(a), int(b), int(v)) for (a, b), v in zip(P, Y))

    # -- fitting ----------------------------------------------------------------------------------
    def features(self) -> np.ndarray:
        """Feature rows ``Phi`` (m, r) of the arms with ``Phi Phi^T = K_X`` up to the
        eigenvalues below ``eig_rtol`` times the largest (dropped): the fit's parametrisation
        ``f = Phi v`` (computed once per kernel)."""
        from scipy.linalg import eigh

        if self._Phi is None:
            lam, U = eigh(self.K_X)
            top = float(lam[-1]) if lam.size else 0.0
            keep = lam > self.eig_rtol * max(top, 1e-300)
            if not np.any(keep):
                self._Phi = np.zeros((self.m, 0))
            else:
                self._Phi = U[:, keep] * np.sqrt(lam[keep])
        return self._Phi

    def fit(self) -> KernelLogisticDuels:
        """Solve eq. 7 (or eq. 9) exactly by damped Newton; warm-started from the previous fit."""
        if self._fitted_version == self.version:
            return self
        if self.n_duels == 0:
            self.utility = np.zeros(self.m)
            self.gradient_norm = 0.0
            self.n_newton = 0
            self.objective = 0.0
            self._fitted_version = self.version
            return self
        if self.regularizer == "rkhs":
            self._fit_rkhs()
        else:
            self._fit_l2_coef()
        self._fitted_version = self.version
        return self

    def _data_scale(self) -> float:
        return 1.0 / self.n_duels if self.normalize_loss else 1.0

    def _fit_rkhs(self) -> None:
        from scipy.linalg import cho_factor, cho_solve
        from scipy.special import expit

        Phi = self.features()
        P = self.pairs
        k = self.wins
        c = self.counts
        s = self._data_scale()
        lam = self.lam
        Psi = Phi[P[:, 0]] - Phi[P[:, 1]]  # (p, m')
        v = np.zeros(Phi.shape[1]) if self._v is None else self._v

        def objective(v_: np.ndarray) -> tuple[float, np.ndarray]:
            u_ = Psi @ v_
            return s * float(np.sum(c * np.logaddexp(0.0, u_) - k * u_)) + 0.5 * lam * float(
                v_ @ v_
            ), u_

        F, u = objective(v)
        use_laplacian = Psi.shape[0] * Phi.shape[1] > 2 * self.m * self.m
        it = 0
        gnorm = math.inf
        prev_gnorm = math.inf
        fresh = False
        for it in range(1, self.max_iter + 1):  # noqa: B007 - reported below
            mu = expit(u)
            grad = s * (Psi.T @ (c * mu - k)) + lam * v
            gnorm = float(np.linalg.norm(grad))
            if gnorm < self.tol:
                it -= 1
                break
            # a fresh Hessian at the first step of every fit; later steps of the same fit reuse it
            # while it still halves the gradient norm per step (otherwise it is refreshed)
            if it == 1 or self._hess is None or (not fresh and gnorm > 0.5 * prev_gnorm):
                w = s * c * mu * (1.0 - mu)
                if use_laplacian:
                    # Psi^T W Psi = Phi^T L_W Phi, L_W the weighted pair-graph Laplacian (m, m)
                    m = self.m
                    flat = np.concatenate(
                        [
                            P[:, 0] * (m + 1),
                            P[:, 1] * (m + 1),
                            P[:, 0] * m + P[:, 1],
                            P[:, 1] * m + P[:, 0],
                        ]
                    )
                    L = np.bincount(flat, np.concatenate([w, w, -w, -w]), minlength=m * m)
                    H = Phi.T @ (L.reshape(m, m) @ Phi)
                else:
                    H = Psi.T @ (w[:, None] * Psi)
                H[np.diag_indices_from(H)] += lam
                self._hess = cho_factor(H, lower=True, check_finite=False)
                self.n_hessian += 1
                fresh = True
            else:
                fresh = False
            prev_gnorm = gnorm
            step = -cho_solve(self._hess, grad, check_finite=False)
            v, F, u = self._line_search(objective, v, F, grad, step)
        else:
            logger.warning("KernelLogisticDuels: Newton stopped at max_iter, |grad| = %.3g", gnorm)
        self._v = v
        self.utility = Phi @ v
        self.gradient_norm = gnorm
        self.n_newton = it
        self.objective = F

    def _fit_l2_coef(self) -> None:
        from scipy.linalg import cho_factor, cho_solve
        from scipy.special import expit

        P = self.pairs
        k = self.wins
        c = self.counts
        s = self._data_scale()
        lam = self.lam
        KK = dueling_gram(self.K_X, P)  # (p, p)
        theta = np.zeros(P.shape[0])
        if self._theta is not None:
            theta[: self._theta.size] = self._theta
        dinv = 1.0 / c

        def objective(t_: np.ndarray) -> tuple[float, np.ndarray]:
            u_ = KK @ t_
            return s * float(np.sum(c * np.logaddexp(0.0, u_) - k * u_)) + 0.5 * lam * float(
                t_ @ (dinv * t_)
            ), u_

        F, u = objective(theta)
        it = 0
        gnorm = math.inf
        for it in range(1, self.max_iter + 1):  # noqa: B007
            mu = expit(u)
            r = s * (c * mu - k)
            grad = KK @ r + lam * dinv * theta
            gnorm = float(np.linalg.norm(grad))
            if gnorm < self.tol:
                it -= 1
                break
            w = s * c * mu * (1.0 - mu)
            H = KK @ (w[:, None] * KK)
            H[np.diag_indices_from(H)] += lam * dinv
            step = -cho_solve(cho_factor(H, lower=True, check_finite=False), grad)
            theta, F, u = self._line_search(objective, theta, F, grad, step)
        else:
            logger.warning("KernelLogisticDuels: Newton stopped at max_iter, |grad| = %.3g", gnorm)
        self._theta = theta
        # h(z) = sum_j theta_j kk(z, z_j) = a_z^T K_X (A^T theta): utility = K_X (A^T theta)
        at = np.zeros(self.m)
        np.add.at(at, P[:, 0], theta)
        np.add.at(at, P[:, 1], -theta)
        self.utility = self.K_X @ at
        self.gradient_norm = gnorm
        self.n_newton = it
        self.objective = F

    @staticmethod
    def _line_search(
        objective: Any, x: np.ndarray, F: float, grad: np.ndarray, step: np.ndarray
    ) -> tuple[np.ndarray, float, np.ndarray]:
        """Backtracking (Armijo) on the convex objective; a full Newton step is tried first."""
        slope = float(grad @ step)
        t = 1.0
        for _ in range(60):
            x_new = x + t * step
            F_new, u_new = objective(x_new)
            if F_new <= F + 1e-4 * t * slope or abs(F_new - F) <= 1e-14 * max(1.0, abs(F)):
                return x_new, F_new, u_new
            t *= 0.5
        F_new, u_new = objective(x + t * step)
        return x + t * step, F_new, u_new

    # -- predictions --------------------------------------------------------------------------------
    def _require_fit(self) -> None:
        if self._fitted_version != self.version:
            raise NotFittedError("call fit() after adding duels before predicting")

    def h(self, i: Any, j: Any) -> np.ndarray:
        """``h_t(x_i, x_j) = f_t(x_i) - f_t(x_j)`` for index arrays ``i``, ``j`` (broadcast)."""
        self._require_fit()
        return self.utility[np.asarray(i)] - self.utility[np.asarray(j)]

    def preference_matrix(self, idx: Any | None = None) -> np.ndarray:
        """``P[a, b] = mu(h_t(x_a, x_b))`` over the arms ``idx`` (default all), (n, n).

        ``P + P^T = 1`` and the diagonal is exactly 1/2.
        """
        from scipy.special import expit

        self._require_fit()
        g = self.utility if idx is None else self.utility[np.asarray(idx)]
        return expit(g[:, None] - g[None, :])

    def gradient(self) -> np.ndarray:
        """Gradient of the solved objective at the current solution (in its parametrisation)."""
        from scipy.special import expit

        self._require_fit()
        if self.n_duels == 0:
            return np.zeros(0)
        P, k, c, s = self.pairs, self.wins, self.counts, self._data_scale()
        if self.regularizer == "rkhs":
            Phi = self.features()
            Psi = Phi[P[:, 0]] - Phi[P[:, 1]]
            assert self._v is not None
            return s * (Psi.T @ (c * expit(Psi @ self._v) - k)) + self.lam * self._v
        KK = dueling_gram(self.K_X, P)
        assert self._theta is not None
        return KK @ (s * (c * expit(KK @ self._theta) - k)) + self.lam * self._theta / c

    def laplace_log_evidence(self) -> float:
        """Laplace approximation of ``log p(y | K_X, lambda)`` for ``f ~ GP(0, K_X / lambda)``.

        Rasmussen and Williams (2006), eq. 3.32, in the feature parametrisation: the objective at
        the optimum (negated) minus ``0.5 log det(I + Psi^T W Psi / lambda)``. Used to choose
        kernel hyperparameters when they are fitted ("rkhs" regulariser, unnormalised loss only).
        """
        from scipy.special import expit

        if self.regularizer != "rkhs" or self.normalize_loss:
            raise InvalidInputError(
                "laplace_log_evidence needs regularizer='rkhs' without normalize_loss"
            )
        self.fit()
        if self.n_duels == 0:
            return 0.0
        Phi = self.features()
        P = self.pairs
        Psi = Phi[P[:, 0]] - Phi[P[:, 1]]
        assert self._v is not None
        mu = expit(Psi @ self._v)
        w = self.counts * mu * (1.0 - mu)
        H = Psi.T @ (w[:, None] * Psi) / self.lam
        H[np.diag_indices_from(H)] += 1.0
        sign, logdet = np.linalg.slogdet(H)
        # log binomial coefficients do not depend on the hyperparameters; omitted
        return -self.objective - 0.5 * float(logdet)


class DuelCovariance:
    """Posterior covariance of the latent utility over the arms, updated by rank-one steps.

    ``S_0 = K_X``; after a duel ``a = e_x - e_x'``: ``S <- S - (S a)(S a)^T / (a^T S a + rho)``.
    Then ``sigma_t^2(x, x') = S_xx + S_x'x' - 2 S_xx'`` is eq. 10 with regulariser ``rho`` for
    every pair at once (rho = lambda kappa in the analysis, lambda in the paper's experiments).
    Memory (m, m); each update O(m^2). ``information_gain`` accumulates
    ``0.5 sum_n log(1 + sigma^2_{n-1}(z_n) / rho) = 0.5 log det(I + KK_N / rho)``.
    """

    def __init__(self, K_X: Any, rho: float) -> None:
        self.K_X = _check_gram(K_X)
        rho_f = float(rho)
        if not math.isfinite(rho_f) or rho_f <= 0:
            raise InvalidInputError(f"rho must be positive and finite, got {rho!r}")
        self.rho = rho_f
        self.m = int(self.K_X.shape[0])
        self.S = self.K_X.copy()
        self.information_gain = 0.0
        self.n_updates = 0

    def variance(self, i: Any, j: Any) -> np.ndarray:
        """``sigma^2(x_i, x_j)`` for index arrays ``i``, ``j`` (broadcast), clipped at 0."""
        i = np.asarray(i)
        j = np.asarray(j)
        S = self.S
        return np.maximum(S[i, i] + S[j, j] - 2.0 * S[i, j], 0.0)

    def variance_matrix(self, idx: Any | None = None) -> np.ndarray:
        """``sigma^2`` over all pairs of the arms ``idx`` (default all), (n, n), diagonal 0."""
        if idx is None:
            S = self.S
        else:
            idx = np.asarray(idx)
            S = self.S[np.ix_(idx, idx)]
        d = np.diag(S)
        V = d[:, None] + d[None, :] - 2.0 * S
        np.maximum(V, 0.0, out=V)
        np.fill_diagonal(V, 0.0)
        return V

    def update(self, i: Any, j: Any) -> float:
        """Condition on one duel of arms ``i``, ``j``; returns its prior ``sigma^2``.

        A self-duel (``i == j``) is a no-op (``a = 0``) and returns 0.
        """
        a = _arm_index(i, self.m, "i")
        b = _arm_index(j, self.m, "j")
        if a == b:
            return 0.0
        Sa = self.S[:, a] - self.S[:, b]
        s2 = max(float(Sa[a] - Sa[b]), 0.0)
        self.S -= np.outer(Sa, Sa) / (s2 + self.rho)
        self.information_gain += 0.5 * math.log1p(s2 / self.rho)
        self.n_updates += 1
        return s2


def kernel_matrix(kernel: Kernel, X: np.ndarray) -> np.ndarray:
    """``K_X = k(X, X)`` symmetrised, (m, m)."""
    K = kernel.k(X, X)
    return 0.5 * (K + K.T)
