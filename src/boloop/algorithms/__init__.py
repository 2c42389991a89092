"""Policies, one module per family; methods are found by id through :func:`build_policy` (from a
:class:`boloop.queries.PolicySpec`) or :func:`make_policy` (from a problem)."""

from boloop.algorithms.registry import build_policy, list_methods, make_policy, register_method

__all__ = ["build_policy", "list_methods", "make_policy", "register_method"]
