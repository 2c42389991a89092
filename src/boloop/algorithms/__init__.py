"""Policies, one module per family; methods are found by id through :func:`build_policy` (from a
:class:`boloop.queries.PolicySpec`) or :func:`make_policy` (from a problem). Your own method:
subclass :class:`boloop.queries.BasePolicy` and register its factory with :func:`register_method`
and its options as :class:`Option` rows (``docs/methods.md``)."""

from boloop.algorithms.registry import (
    Option,
    build_policy,
    list_methods,
    make_policy,
    register_method,
)

__all__ = ["Option", "build_policy", "list_methods", "make_policy", "register_method"]
