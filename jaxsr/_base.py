"""The scikit-learn parameter protocol shared by every jaxsr estimator and transformer.

``get_params`` / ``set_params`` / ``repr`` derived from ``__init__``'s signature, as in
scikit-learn's ``BaseEstimator`` (scikit-learn itself is not imported), so that
``sklearn.base.clone``, grid searches and pipelines work with jaxsr objects.
"""

from __future__ import annotations

import inspect

__all__ = ["ParamsMixin"]


def _same(a, b) -> bool:
    """``a == b`` for hyper-parameter values (tuples vs lists, arrays, objects)."""
    try:
        if isinstance(a, tuple | list) and isinstance(b, tuple | list):
            return tuple(a) == tuple(b)
        return bool(a == b)
    except Exception:  # noqa: BLE001 - e.g. arrays: ambiguous truth value
        return a is b


class ParamsMixin:
    """``get_params``, ``set_params`` and ``__repr__`` from the constructor's signature.

    ``__init__`` must store each argument under its own name and do nothing else
    (scikit-learn's estimator contract). Nested parameters ``name__sub`` reach an
    object-valued parameter that has ``set_params`` itself (e.g. a tree's ``binarizer``).
    """

    @classmethod
    def _get_param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict:
        """The constructor's parameters as a dict; with ``deep``, nested ones as ``a__b``."""
        out = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            out[name] = value
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                for sub, sub_value in value.get_params().items():
                    out[f"{name}__{sub}"] = sub_value
        return out

    def set_params(self, **params):
        """Set constructor parameters (``name__sub`` for nested ones); returns ``self``.

        Raises:
          ValueError: for a name that is not a parameter of this class.
        """
        valid = self._get_param_names()
        nested: dict[str, dict] = {}
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                 f"valid parameters are {valid}")
            if sub:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub_params in nested.items():
            getattr(self, name).set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        changed = [f"{k}={v!r}" for k, v in self.get_params(deep=False).items()
                   if not _same(v, sig.parameters[k].default)]
        return f"{type(self).__name__}({', '.join(changed)})"
