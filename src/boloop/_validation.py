"""Input validation helpers shared by every layer (private)."""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from boloop.errors import InvalidInputError


def as_points(x: Any, name: str, dim: int | None = None, allow_empty: bool = False) -> np.ndarray:
    """Return ``x`` as a float64 array of shape (n, d), rejecting NaN/inf and wrong shapes.

    A 1-D input of length ``dim`` is read as a single point when ``dim`` is given and > 1, and as
    ``n`` one-dimensional points when ``dim`` is 1 or None.
    """
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be numeric, got {type(x).__name__}") from exc
    if arr.ndim == 0:
        arr = arr.reshape(1, 1)
    elif arr.ndim == 1:
        if dim is not None and dim > 1 and arr.shape[0] == dim:
            arr = arr.reshape(1, dim)
        else:
            arr = arr.reshape(-1, 1)
    elif arr.ndim != 2:
        raise InvalidInputError(f"{name} must have shape (n, d), got shape {arr.shape}")
    if dim is not None and arr.shape[1] != dim:
        raise InvalidInputError(f"{name} must have {dim} columns, got shape {arr.shape}")
    if arr.shape[0] == 0 and not allow_empty:
        raise InvalidInputError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} contains NaN or infinite values")
    return arr


def as_values(y: Any, name: str, n: int | None = None) -> np.ndarray:
    """Return ``y`` as a finite float64 array of shape (n,)."""
    try:
        arr = np.asarray(y, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be numeric, got {type(y).__name__}") from exc
    if n is not None and arr.shape[0] != n:
        raise InvalidInputError(f"{name} must have {n} values, got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} contains NaN or infinite values")
    return arr


def as_rng(seed: Any) -> np.random.Generator:
    """A Generator from a seed, a Generator (returned as is) or None (fresh entropy).

    A seed is a non-negative integer (or what :func:`numpy.random.default_rng` takes besides:
    a sequence of them, a SeedSequence, a BitGenerator); anything else raises
    :class:`~boloop.errors.InvalidInputError` (a boolean too: ``True`` is not a seed)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool | np.bool_):
        raise InvalidInputError(f"seed must be a non-negative integer, got {seed!r}")
    try:
        return np.random.default_rng(seed)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"seed must be a non-negative integer, got {seed!r}") from exc


def positive(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a number, got {value!r}") from exc
    if not np.isfinite(v) or v <= 0:
        raise InvalidInputError(f"{name} must be positive and finite, got {value!r}")
    return v


def finite_real(value: Any, name: str, low: float = 0.0, strict: bool = False) -> float:
    """``value`` as a finite float at least ``low`` (above it when ``strict``); anything else
    (a string that is not a number, a bool, NaN, infinity, a value out of range) is an
    :class:`InvalidInputError` naming the option, raised before a policy stores anything."""
    bound = f"> {low:g}" if strict else f">= {low:g}"
    try:
        v = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        v = math.nan
    if not math.isfinite(v) or v < low or (strict and v == low):
        raise InvalidInputError(f"{name} must be a finite number {bound}, got {value!r}")
    return v


def integer_at_least(value: Any, name: str, low: int) -> int:
    """``value`` as an integer at least ``low`` (an integral float such as ``256.0`` is
    accepted, numpy's too); anything else is an :class:`InvalidInputError` naming the option."""
    ok = not isinstance(value, bool | np.bool_) and isinstance(value, numbers.Real)
    if not ok or not math.isfinite(value) or int(value) != value or value < low:
        raise InvalidInputError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _meant(key: str, valid: Sequence[str]) -> list[str]:
    """The valid keys ``key`` is short for (``noise``: ``noise_f`` and ``noise_g``; ``L_g``:
    ``L_g_prime``, not the nearer spelling ``L_f``), else its nearest near miss, else none."""
    names = [str(v) for v in valid]
    longer = [v for v in names if v.startswith(key) and v != key] if key else []
    if 0 < len(longer) <= 3:  # more: the start of too many to name them (an 'n')
        return longer
    return difflib.get_close_matches(key, names, 1)


def meant_keys(unknown: Sequence[str], valid: Sequence[str]) -> str:
    """`` (did you mean 'threshold' for 'treshold'?)``: the valid key each ``unknown`` key is a
    near miss of, or all those it is the start of (a misspelt option says the same), or ``""``
    when none is near."""
    pairs = []
    for key in unknown:
        meant = " or ".join(repr(m) for m in _meant(str(key), valid))
        if meant:
            pairs.append((meant, key))
    if not pairs:
        return ""
    if len(unknown) == 1:
        return f" (did you mean {pairs[0][0]}?)"
    return f" (did you mean {', '.join(f'{m} for {k!r}' for m, k in pairs)}?)"


def known_keys(table: Any, valid: Sequence[str], where: str, hint: str = "") -> None:
    """Refuse a mapping ``table`` with keys outside ``valid``, naming them (and the valid key
    each is a near miss of), the valid ones and a ``hint`` (e.g. what a near miss means), as an
    :class:`InvalidInputError` about ``where``."""
    extra = sorted(set(table) - set(valid))
    if extra:
        raise InvalidInputError(
            f"{where} has unknown keys {extra}{meant_keys(extra, valid)}; valid: {list(valid)}"
            + (f" {hint}" if hint else "")
        )
