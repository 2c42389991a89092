"""Search spaces: continuous boxes, finite candidate sets, and safe spaces with a monotone axis.

Scaling to the unit cube lives here. Points are float64 arrays of shape (n, d).
"""

from __future__ import annotations

import decimal
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from boloop._validation import as_points, as_rng
from boloop.errors import InvalidInputError, OutOfSpaceError

__all__ = [
    "Box",
    "CandidateSet",
    "SafeSpace",
    "Space",
    "axis_index",
    "axis_values",
    "format_value",
    "grid_point",
    "grid_points_per_axis",
    "params_text",
    "points_at",
    "written_params",
    "written_value",
]


class Box:
    """The box ``[lower_1, upper_1] x ... x [lower_d, upper_d]``.

    Parameters
    ----------
    lower, upper:
        Sequences of length d with ``lower < upper`` (finite).
    names:
        Optional parameter names, one per dimension.
    """

    kind = "box"

    def __init__(
        self,
        lower: Sequence[float] | np.ndarray,
        upper: Sequence[float] | np.ndarray,
        names: Sequence[str] | None = None,
    ) -> None:
        lo = np.atleast_1d(np.asarray(lower, dtype=np.float64))
        hi = np.atleast_1d(np.asarray(upper, dtype=np.float64))
        if lo.ndim != 1 or lo.shape != hi.shape or lo.size == 0:
            raise InvalidInputError(
                f"lower and upper must be 1-D of the same length, got {lo.shape} and {hi.shape}"
            )
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise InvalidInputError("lower and upper must be finite")
        if np.any(lo >= hi):
            raise InvalidInputError(f"lower must be < upper in every dimension: {lo} vs {hi}")
        self.lower = lo
        self.upper = hi
        self.names = _check_names(names, lo.size)

    @classmethod
    def unit(cls, dim: int) -> Box:
        return cls(np.zeros(dim), np.ones(dim))

    @property
    def dim(self) -> int:
        return int(self.lower.size)

    @property
    def bounds(self) -> np.ndarray:
        """Shape (d, 2): one row (lower, upper) per dimension."""
        return np.stack([self.lower, self.upper], axis=1)

    @property
    def width(self) -> np.ndarray:
        return self.upper - self.lower

    def contains(self, X: Any, atol: float = 1e-12) -> np.ndarray:
        """Boolean (n,): which rows lie in the box (with tolerance ``atol`` times the width)."""
        X = as_points(X, "X", dim=self.dim, allow_empty=True)
        tol = atol * self.width
        return np.all((X >= self.lower - tol) & (X <= self.upper + tol), axis=1)

    def validate(self, X: Any, name: str = "x") -> np.ndarray:
        """Return ``X`` as (n, d) or raise :class:`OutOfSpaceError` naming ``name``."""
        X = as_points(X, name, dim=self.dim)
        inside = self.contains(X)
        if not np.all(inside):
            bad = X[~inside][0]
            raise OutOfSpaceError(
                f"{name} has a point outside the box {self.bounds.tolist()}: {bad}"
            )
        return np.clip(X, self.lower, self.upper)

    def to_unit(self, X: Any) -> np.ndarray:
        """Map points of the box to the unit cube, (n, d) -> (n, d)."""
        X = as_points(X, "X", dim=self.dim, allow_empty=True)
        return (X - self.lower) / self.width

    def from_unit(self, U: Any) -> np.ndarray:
        """Map points of the unit cube to the box, (n, d) -> (n, d)."""
        U = as_points(U, "U", dim=self.dim, allow_empty=True)
        return self.lower + U * self.width

    def sample(
        self, n: int, seed: int | np.random.Generator | None = None, method: str = "uniform"
    ) -> np.ndarray:
        """``n`` points of the box, (n, d): ``"uniform"`` i.i.d. or a scrambled ``"sobol"`` sequence."""
        if int(n) != n or n < 0:
            raise InvalidInputError(f"n must be a non-negative integer, got {n!r}")
        rng = as_rng(seed)
        if method == "uniform":
            U = rng.random((int(n), self.dim))
        elif method == "sobol":
            import warnings

            from scipy.stats import qmc

            with warnings.catch_warnings():
                # scipy warns when n is not a power of 2 (the first n points of the sequence are
                # still returned, with weaker balance); that is the documented behaviour here
                warnings.filterwarnings("ignore", message=".*balance properties of Sobol")
                U = (
                    qmc.Sobol(self.dim, scramble=True, seed=rng).random(int(n))
                    if n
                    else np.zeros((0, self.dim))
                )
        else:
            raise InvalidInputError(f"method must be 'uniform' or 'sobol', got {method!r}")
        return self.from_unit(U)

    def grid(self, n_per_dim: int | Sequence[int]) -> CandidateSet:
        """A regular grid over the box with endpoints included."""
        return CandidateSet.grid(self.bounds, n_per_dim, names=self.names)

    def __repr__(self) -> str:
        return f"Box(lower={self.lower.tolist()}, upper={self.upper.tolist()})"


class CandidateSet:
    """A finite set of candidate points, shape (N, d): a grid, a table of options, arms.

    Parameters
    ----------
    points:
        Array (N, d) of finite values; N >= 1.
    names:
        Optional column names.
    """

    kind = "candidates"

    def __init__(self, points: Any, names: Sequence[str] | None = None) -> None:
        self.points = as_points(points, "points")
        self.points.flags.writeable = False
        self.names = _check_names(names, self.points.shape[1])

    @classmethod
    def grid(
        cls, bounds: Any, n_per_dim: int | Sequence[int], names: Sequence[str] | None = None
    ) -> CandidateSet:
        """Regular grid with endpoints included; ``bounds`` is (d, 2).

        Points are ordered with the *last* coordinate varying fastest (``itertools.product``
        order), so ``values.reshape(n_1, ..., n_d)`` recovers the grid.
        """
        b = np.asarray(bounds, dtype=np.float64)
        if b.ndim != 2 or b.shape[1] != 2:
            raise InvalidInputError(f"bounds must have shape (d, 2), got {b.shape}")
        counts = [int(n_per_dim)] * b.shape[0] if np.isscalar(n_per_dim) else list(n_per_dim)  # type: ignore[arg-type]
        if len(counts) != b.shape[0] or any(c < 1 for c in counts):
            raise InvalidInputError(f"n_per_dim must be >= 1 per dimension, got {n_per_dim!r}")
        axes = [np.linspace(lo, hi, c) for (lo, hi), c in zip(b, counts)]
        pts = np.array(list(itertools.product(*axes)), dtype=np.float64)
        return cls(pts, names=names)

    @property
    def n(self) -> int:
        return int(self.points.shape[0])

    def __len__(self) -> int:
        return self.n

    @property
    def dim(self) -> int:
        return int(self.points.shape[1])

    @property
    def box(self) -> Box:
        """The bounding box of the candidates (degenerate axes widened by 1)."""
        lo = self.points.min(axis=0)
        hi = self.points.max(axis=0)
        hi = np.where(hi > lo, hi, lo + 1.0)
        return Box(lo, hi, names=self.names)

    def to_unit(self, X: Any | None = None) -> np.ndarray:
        """Scale points (default: the candidates) by the bounding box to the unit cube."""
        return self.box.to_unit(self.points if X is None else X)

    def index_of(self, X: Any, atol: float = 1e-9) -> np.ndarray:
        """Index (n,) of the candidate each row of ``X`` names, or -1 where there is none: every
        value of the row names one of its column's values (:func:`axis_index`, within ``atol``
        times the largest ``|value|`` of the candidates, at least 1, or as a person writes it)
        and the candidate with these values exists; or else, as before values written to fewer
        digits were taken, the nearest candidate (max-norm over the row) lies within that
        tolerance -- a table whose column holds values closer than the tolerance (0.1 and
        0.1 + 1e-12) may snap a value to the other row's one."""
        X = as_points(X, "X", dim=self.dim, allow_empty=True)
        out = np.full(X.shape[0], -1, dtype=np.int64)
        axes, tols = self.axis_values(), self._tolerances(atol)
        rows = self._row_index()
        for i, x in enumerate(X):
            snapped = _snap(x, axes, tols)
            if snapped is None:  # a value names none of its column's: no row is within tol
                continue
            j = rows.get(tuple(snapped.tolist()))
            if j is None:
                j = _nearest_within(self.points, x, tols[0])
            if j is not None:
                out[i] = j
        return out

    def _row_index(self) -> dict[tuple[float, ...], int]:
        """The first index of each distinct candidate (computed once: the points never change)."""
        rows: dict[tuple[float, ...], int] | None = getattr(self, "_rows", None)
        if rows is None:
            rows = self._rows = _row_index(self.points)
        return rows

    def __getstate__(self) -> dict[str, Any]:
        return _without_row_index(self.__dict__)

    def _tolerances(self, atol: float = 1e-9) -> list[float]:
        """How far (per parameter) a value may be from a column's value and be that value."""
        scale: float | None = getattr(self, "_scale", None)  # computed once: points never change
        if scale is None:
            scale = self._scale = max(1.0, float(np.max(np.abs(self.points))))
        return [atol * scale] * self.dim

    def axis_values(self) -> list[np.ndarray]:
        """The sorted distinct values of each column (computed once: the points never change)."""
        axes: list[np.ndarray] | None = getattr(self, "_axes", None)
        if axes is None:
            axes = self._axes = _axis_values(self.points)
        return axes

    def contains(self, X: Any) -> np.ndarray:
        return self.index_of(X) >= 0

    def is_grid(self) -> bool:
        """Whether the candidates are a full grid: every combination of the values each axis
        takes (as :meth:`grid` builds), rather than a table of chosen options."""
        return _is_full_grid(_axis_values(self.points), self.n)

    def describe_miss(self, x: Any) -> str:
        """Why the point ``x`` (d,) is not a candidate, in parameter names: each parameter whose
        value no candidate takes, with the nearest values it can take (below and above); for a
        table whose every value occurs but not in this combination, the nearest option."""
        pt = as_points(x, "x", dim=self.dim)[0]
        scale = self.box.width

        def nearest(p: np.ndarray) -> np.ndarray:
            return self.points[int(np.argmin(np.max(np.abs(self.points - p) / scale, axis=1)))]

        return _describe_miss(
            pt, self.names, self.axis_values(), self._tolerances(), self.n, nearest
        )

    def validate(self, X: Any, name: str = "x") -> np.ndarray:
        X = as_points(X, name, dim=self.dim)
        idx = self.index_of(X)
        if np.any(idx < 0):
            raise OutOfSpaceError(f"{name} has a point that is not a candidate: {X[idx < 0][0]}")
        return self.points[idx]

    def __repr__(self) -> str:
        return f"CandidateSet(n={self.n}, dim={self.dim})"


class SafeSpace:
    """Actions ``(s, x)`` on a grid, with ``s`` the monotone axis (M-SafeOpt, Sec. 2).

    ``s_values`` (n_s,) are increasing with ``s_values[0]`` the safe starting level (``s = 0`` in
    the paper); ``x_points`` (n_x, d_x). Action ``(s_j, x_i)`` has flat index ``i * n_s + j``:
    values over actions reshape to ``(n_x, n_s)`` so that reductions over ``s`` for every ``x``
    are one vectorised call on axis 1. :attr:`points` is (n_x * n_s, 1 + d_x), column 0 being s.
    """

    kind = "safe"

    def __init__(self, s_values: Any, x_points: Any, names: Sequence[str] | None = None) -> None:
        s = np.asarray(s_values, dtype=np.float64).reshape(-1)
        if s.size < 1 or not np.all(np.isfinite(s)) or np.any(np.diff(s) <= 0):
            raise InvalidInputError("s_values must be finite and strictly increasing")
        X = as_points(x_points, "x_points")
        self.s_values = s
        self.x_points = X
        self.names = _check_names(names, 1 + X.shape[1])
        self._points: np.ndarray | None = None

    @classmethod
    def grid(
        cls,
        s_bounds: tuple[float, float],
        n_s: int,
        x_bounds: Any,
        n_x_per_dim: int | Sequence[int],
        names: Sequence[str] | None = None,
    ) -> SafeSpace:
        s = np.linspace(float(s_bounds[0]), float(s_bounds[1]), int(n_s))
        X = CandidateSet.grid(x_bounds, n_x_per_dim).points
        return cls(s, X, names=names)

    @property
    def n_s(self) -> int:
        return int(self.s_values.size)

    @property
    def n_x(self) -> int:
        return int(self.x_points.shape[0])

    @property
    def n(self) -> int:
        return self.n_s * self.n_x

    @property
    def dim(self) -> int:
        return 1 + int(self.x_points.shape[1])

    @property
    def points(self) -> np.ndarray:
        """All actions, (n_x * n_s, 1 + d_x), built once on first use."""
        if self._points is None:
            S = np.tile(self.s_values, self.n_x)[:, None]
            X = np.repeat(self.x_points, self.n_s, axis=0)
            self._points = np.hstack([S, X])
            self._points.flags.writeable = False
        return self._points

    def rows(self, x_index: np.ndarray | slice) -> np.ndarray:
        """Actions of the given x rows only, ((k * n_s), 1 + d_x): for streaming large grids."""
        X = self.x_points[x_index]
        S = np.tile(self.s_values, X.shape[0])[:, None]
        return np.hstack([S, np.repeat(X, self.n_s, axis=0)])

    def map_rows(
        self, fn: Callable[[np.ndarray], tuple[np.ndarray, ...]], max_points: int = 65536
    ) -> tuple[np.ndarray, ...]:
        """Apply ``fn`` to the actions in x-row chunks of at most ``max_points`` actions.

        ``fn`` takes actions (k, 1 + d_x) and returns a tuple of arrays of shape (k,); the result is
        the tuple of (n_x, n_s) matrices, without ever holding all actions at once.
        """
        rows_per_chunk = max(1, int(max_points) // self.n_s)
        out: list[np.ndarray] | None = None
        for start in range(0, self.n_x, rows_per_chunk):
            sl = slice(start, min(self.n_x, start + rows_per_chunk))
            parts = fn(self.rows(sl))
            if out is None:
                out = [np.empty((self.n_x, self.n_s)) for _ in parts]
            for o, part in zip(out, parts):
                o[sl] = np.asarray(part).reshape(-1, self.n_s)
        assert out is not None
        return tuple(out)

    def flat_index(self, x_index: Any, s_index: Any) -> np.ndarray:
        return np.asarray(x_index) * self.n_s + np.asarray(s_index)

    def unflat_index(self, index: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(x_index, s_index)`` of flat action indices."""
        return np.divmod(np.asarray(index), self.n_s)

    def as_matrix(self, values: Any) -> np.ndarray:
        """Values over actions (n,) as an (n_x, n_s) view."""
        v = np.asarray(values)
        if v.shape[0] != self.n:
            raise InvalidInputError(f"values must have {self.n} entries, got {v.shape[0]}")
        return v.reshape(self.n_x, self.n_s, *v.shape[1:])

    def seeds(self) -> np.ndarray:
        """Flat indices of the safe starting actions ``(s_values[0], x)`` for every x, (n_x,)."""
        return np.arange(self.n_x) * self.n_s

    @property
    def box(self) -> Box:
        lo = np.concatenate([[self.s_values[0]], self.x_points.min(axis=0)])
        hi = np.concatenate([[self.s_values[-1]], self.x_points.max(axis=0)])
        hi = np.where(hi > lo, hi, lo + 1.0)
        return Box(lo, hi, names=self.names)

    def index_of(self, X: Any, atol: float = 1e-9) -> np.ndarray:
        """Flat index (n,) of the action each row ``(s, x)`` of ``X`` names, or -1 where there
        is none: ``s`` names a grid level (:func:`axis_index`, within ``atol`` times the largest
        ``|s|`` of the grid, at least 1, or as a person writes it), each value of ``x`` one of
        its column's values (likewise, with the largest ``|x|``), and that row of
        :attr:`x_points` exists."""
        X = as_points(X, "X", dim=self.dim, allow_empty=True)
        out = np.full(X.shape[0], -1, dtype=np.int64)
        axes, tols = self.axis_values(), self._tolerances(atol)
        rows: dict[tuple[float, ...], int] | None = getattr(self, "_rows", None)
        if rows is None:
            rows = self._rows = _row_index(self.x_points)
        for r, p in enumerate(X):
            snapped = _snap(p, axes, tols)
            if snapped is None:
                continue
            j = int(np.searchsorted(self.s_values, snapped[0]))
            i = rows.get(tuple(snapped[1:].tolist()))
            if i is None:  # a table of x whose columns hold values closer than the tolerance
                i = _nearest_within(self.x_points, p[1:], tols[1])
            if i is not None:
                out[r] = i * self.n_s + j
        return out

    def __getstate__(self) -> dict[str, Any]:
        return _without_row_index(self.__dict__)

    def axis_values(self) -> list[np.ndarray]:
        """The levels of ``s``, then the sorted distinct values of each column of ``x``
        (computed once: the actions never change)."""
        axes: list[np.ndarray] | None = getattr(self, "_axes", None)
        if axes is None:
            axes = self._axes = [self.s_values, *_axis_values(self.x_points)]
        return axes

    def _tolerances(self, atol: float = 1e-9) -> list[float]:
        """How far (per parameter) a value may be from a grid value and be that value."""
        scales: tuple[float, float] | None = getattr(self, "_scales", None)  # computed once
        if scales is None:
            scales = self._scales = (
                max(1.0, float(np.max(np.abs(self.s_values)))),
                max(1.0, float(np.max(np.abs(self.x_points)))),
            )
        return [atol * scales[0]] + [atol * scales[1]] * (self.dim - 1)

    def contains(self, X: Any) -> np.ndarray:
        """Boolean (n,): which rows are actions of the grid (:meth:`index_of`); a point between
        grid values is not, although it lies in the bounds."""
        return self.index_of(X) >= 0

    def describe_miss(self, x: Any) -> str:
        """Why ``x`` (d,) is not an action, in parameter names, as
        :meth:`CandidateSet.describe_miss` says it: the parameters whose value is off the grid
        with the nearest grid values, or (``x_points`` a table) the nearest action."""
        pt = as_points(x, "x", dim=self.dim)[0]
        scale = self.box.width[1:]

        def nearest(p: np.ndarray) -> np.ndarray:
            s = self.s_values[int(np.argmin(np.abs(self.s_values - p[0])))]
            d = np.max(np.abs(self.x_points - p[1:]) / scale, axis=1)
            return np.concatenate([[s], self.x_points[int(np.argmin(d))]])

        return _describe_miss(
            pt, self.names, self.axis_values(), self._tolerances(), self.n, nearest
        )

    def __repr__(self) -> str:
        return f"SafeSpace(n_s={self.n_s}, n_x={self.n_x}, d_x={self.dim - 1})"


Space = Box | CandidateSet | SafeSpace


def grid_points_per_axis(n_max: int, d: int) -> int:
    """The most points per axis of a ``d``-dimensional grid (:meth:`CandidateSet.grid`) of at
    most ``n_max`` points; 1 when not even 2 per axis fit."""
    k = max(1, int(round(max(n_max, 1) ** (1.0 / d))))
    while k > 1 and k**d > n_max:
        k -= 1
    while (k + 1) ** d <= n_max:
        k += 1
    return k


def format_value(value: Any) -> str:
    """A value as people write it: a number to 6 significant digits (``35``, ``0.25``,
    ``231.5``), anything else (a bool, None, a name) as its text."""
    if isinstance(value, bool) or value is None:
        return str(value)
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    return f"{v:.6g}"


def params_text(params: Mapping[str, Any], units: Mapping[str, str] | None = None) -> str:
    """A point in parameter names as people read it: ``temperature=35.2 °C, ratio=0.4``
    (:func:`format_value`; a parameter's unit after its value where ``units`` gives one)."""
    units = units or {}
    return ", ".join(
        f"{k}={format_value(v)}" + (f" {units[k]}" if units.get(k) else "")
        for k, v in params.items()
    )


def axis_values(space: Any) -> list[np.ndarray] | None:
    """The sorted distinct values each parameter takes in a finite space (a
    :class:`CandidateSet`'s columns; a :class:`SafeSpace`'s levels of ``s``, then its ``x``
    columns), or None for a continuous :class:`Box`."""
    if isinstance(space, CandidateSet | SafeSpace):
        return space.axis_values()
    return None


#: A value written with fewer digits names a grid value only when the precision it is written to
#: is at least this many times finer than the distance to the grid value's nearest neighbour.
WRITTEN_PRECISION_RATIO = 100.0


def _half_unit(v: float) -> float:
    """Half a unit in the last significant digit of ``v`` as written (its shortest decimal,
    ``repr``): 0.0005 for 193.333, 0.5 for 190 and 193 (a whole number's last digit is its
    units), 5e-08 for 1.5e-07."""
    text = repr(float(v))
    if text.endswith(".0"):
        text = text[:-2]
    exponent = decimal.Decimal(text).as_tuple().exponent
    assert isinstance(exponent, int)  # v is finite
    return 0.5 * 10.0**exponent


def axis_index(axis: np.ndarray, v: float, atol: float) -> int:
    """The index of the value of ``axis`` (sorted, distinct) that ``v`` names, or -1.

    ``v`` names the value ``a`` of ``axis`` nearest to it when it is within ``atol`` of ``a`` (the
    float of a grid value, or one an ulp or so off: ``numpy.linspace`` gives 0.6000000000000001
    for 0.6), or when it is ``a`` written to fewer digits, as a person types a grid value they
    read: ``v`` within half a unit of its own last significant digit of ``a`` (193.333 and
    193.3333 for 580/3 = 193.33333333333334), with that precision at least
    :data:`WRITTEN_PRECISION_RATIO` times finer than the distance from ``a`` to its nearest
    neighbouring value, so that ``v`` is far closer to ``a`` than to any other value. On a grid
    of step 10/3, 193.33 names 580/3; 193.3 and 193 do not (they may be settings of their own).
    """
    v = float(v)
    if axis.size == 0 or not math.isfinite(v):
        return -1
    k = int(np.searchsorted(axis, v))
    near = [i for i in (k - 1, k) if 0 <= i < axis.size]
    k = min(near, key=lambda i: abs(float(axis[i]) - v))
    d = abs(float(axis[k]) - v)
    if d <= atol:
        return k
    gaps = [abs(float(axis[i]) - float(axis[k])) for i in (k - 1, k + 1) if 0 <= i < axis.size]
    gap = min(gaps) if gaps else math.inf
    half = _half_unit(v)
    if d <= half and half * WRITTEN_PRECISION_RATIO <= gap:
        return k
    return -1


def written_value(axis: np.ndarray, k: int, atol: float) -> str:
    """``axis[k]`` as a person writes it: the fewest significant digits, at least the 6 of
    :func:`format_value`, whose value names ``axis[k]`` (:func:`axis_index`) -- ``193.333`` for
    580/3 on a grid of step 10/3, more digits on a grid whose neighbours differ only further
    down. Typed back, it is taken as ``axis[k]``."""
    a = float(axis[k])
    for digits in range(6, 18):
        text = f"{a:.{digits}g}"
        if axis_index(axis, float(text), atol) == k:
            return text
    return repr(a)  # pragma: no cover - 17 digits give the float itself


def written_params(space: CandidateSet | SafeSpace, x: Any) -> dict[str, str]:
    """A point (d,) of the finite ``space`` in parameter names, each value as
    :func:`written_value` writes it (``temperature=193.333``; ``x=1000.001`` where six digits
    would print 1000): typed back, it names the same point."""
    pt = as_points(x, "x", dim=space.dim)[0]
    out = {}
    for name, axis, tol, v in zip(space.names, space.axis_values(), space._tolerances(), pt):
        k = axis_index(axis, float(v), tol)
        out[name] = written_value(axis, k, tol) if k >= 0 else format_value(v)
    return out


def _typed_text(v: float) -> str:
    """A value that was typed, shown as :func:`format_value` writes it when that is the same
    number, else in full (1000.0015, not 1000, beside the grid values 1000.001 or 1000.002)."""
    text = format_value(v)
    return text if float(text) == float(v) else repr(float(v))


def _snap(x: np.ndarray, axes: Sequence[np.ndarray], tols: Sequence[float]) -> np.ndarray | None:
    """``x`` (d,) with every value replaced by the value of its axis it names
    (:func:`axis_index`), or None when one names none."""
    out = np.empty(len(axes), dtype=np.float64)
    for c, (axis, v, tol) in enumerate(zip(axes, x, tols)):
        k = axis_index(axis, float(v), tol)
        if k < 0:
            return None
        out[c] = axis[k]
    return out


def grid_point(space: CandidateSet | SafeSpace, x: Any) -> np.ndarray:
    """The point (d,) of the finite ``space`` that ``x`` (d,) names (:meth:`CandidateSet.index_of`:
    each value within a tolerance of a grid value or written to fewer digits) -- the grid's own
    values, not the ones given -- or :class:`~boloop.errors.OutOfSpaceError` saying which values
    are off the grid and the nearest ones (:meth:`CandidateSet.describe_miss`)."""
    pt = as_points(x, "x", dim=space.dim)[0]
    i = int(space.index_of(pt[None, :])[0])
    if i < 0:
        raise OutOfSpaceError(space.describe_miss(pt))
    return points_at(space, np.array([i]))[0]


def points_at(space: CandidateSet | SafeSpace, index: Any) -> np.ndarray:
    """The points (k, d) of the finite ``space`` at the indices (k,) that
    :meth:`CandidateSet.index_of` gives (flat action indices ``i_x * n_s + j_s`` for a
    :class:`SafeSpace`, whose actions are not all built): the grid's own values, a new array."""
    idx = np.asarray(index, dtype=np.int64).reshape(-1)
    if np.any((idx < 0) | (idx >= space.n)):
        raise InvalidInputError(f"indices must be in [0, {space.n}), got {idx.tolist()}")
    if isinstance(space, SafeSpace):
        xi, sj = space.unflat_index(idx)
        return np.column_stack([space.s_values[sj], space.x_points[xi]])
    return np.array(space.points[idx], dtype=np.float64)


def _row_index(points: np.ndarray) -> dict[tuple[float, ...], int]:
    """The first index of each distinct row of ``points`` (n, d), keyed by its values."""
    out: dict[tuple[float, ...], int] = {}
    for i, row in enumerate(points.tolist()):
        out.setdefault(tuple(row), i)
    return out


def _without_row_index(state: dict[str, Any]) -> dict[str, Any]:
    """A space's attributes to pickle (a policy snapshot holds its space): without the lookup
    table of its rows, rebuilt on the first :meth:`CandidateSet.index_of` after loading (it
    takes as many bytes as the points again)."""
    return {k: v for k, v in state.items() if k != "_rows"}


def _nearest_within(points: np.ndarray, x: np.ndarray, tol: float) -> int | None:
    """The row of ``points`` (n, d) nearest to ``x`` (d,) in the max-norm (the first of equals)
    when it is within ``tol``, else None: a whole row within the tolerance."""
    d = np.max(np.abs(points - x), axis=1)
    j = int(np.argmin(d))
    return j if d[j] <= tol else None


def _axis_values(points: np.ndarray) -> list[np.ndarray]:
    """The sorted distinct values each column of ``points`` (n, d) takes."""
    return [np.unique(points[:, j]) for j in range(points.shape[1])]


def _is_full_grid(axes: Sequence[np.ndarray], n: int) -> bool:
    """Whether ``n`` points whose columns take the values ``axes`` are every combination."""
    return int(np.prod([a.size for a in axes], dtype=np.float64)) == n


def _describe_miss(
    pt: np.ndarray,
    names: Sequence[str],
    axes: Sequence[np.ndarray],
    tols: Sequence[float],
    n: int,
    nearest: Callable[[np.ndarray], np.ndarray],
) -> str:
    """Why ``pt`` (d,) is not one of the ``n`` points of a finite space whose columns take the
    values ``axes`` (sorted; ``tols`` as :func:`axis_index` takes them): each parameter whose
    value names none of its axis's, with the nearest values below and above; when every value
    occurs but not in this combination (a table), the point ``nearest(pt)`` of the space. The
    values suggested are written so that, typed back, they are taken (:func:`written_value`)."""
    shown = ", ".join(f"{name}={_typed_text(v)}" for name, v in zip(names, pt))
    grid = _is_full_grid(axes, n)
    kind = "on the grid" if grid else f"one of the {n} options"
    value = "a grid value" if grid else "a value of any option"
    parts = []
    for name, axis, tol, v in zip(names, axes, tols, pt):
        if axis_index(axis, float(v), tol) >= 0:
            continue
        k = int(np.searchsorted(axis, v))
        near = [i for i in (k - 1, k) if 0 <= i < axis.size]
        parts.append(
            f"{name}={_typed_text(v)} is not {value} (nearest: "
            + " or ".join(written_value(axis, i, tol) for i in near)
            + ")"
        )
    if parts:
        return f"{shown} is not {kind}: " + "; ".join(parts)
    best = nearest(pt)
    near_text = ", ".join(
        f"{name}={written_value(axis, int(np.searchsorted(axis, b)), tol)}"
        for name, axis, tol, b in zip(names, axes, tols, best)
    )
    return f"{shown} is not {kind}: no option has this combination (nearest: {near_text})"


def _check_names(names: Sequence[str] | None, d: int) -> list[str]:
    if names is None:
        return [f"x{i}" for i in range(d)]
    names = [str(n) for n in names]
    if len(names) != d or len(set(names)) != d:
        raise InvalidInputError(f"names must be {d} distinct strings, got {names!r}")
    return names
