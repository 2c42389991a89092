"""Policies, one module per family; methods are found by id through :func:`make_policy`."""

from boloop.algorithms.registry import list_methods, make_policy, register_method

__all__ = ["list_methods", "make_policy", "register_method"]
