"""Griffe extension for the API pages: the docstrings of jaxsr use reStructuredText roles
(:class:`Expression`, :func:`~jaxsr.symbolic.front.loss_floor`) and literal blocks
introduced by ``::``; mkdocstrings renders docstrings as Markdown, so each role becomes
inline code (``~`` keeps the last dotted component, as in Sphinx), ``::`` a colon, and an
``Example:`` section the ``Examples:`` section that griffe renders as code."""

import re

import griffe

_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj):`(~?)([^`]+)`")
_LITERAL = re.compile(r"(\S)::$", re.MULTILINE)
_EXAMPLE = re.compile(r"^(\s*)Example:$", re.MULTILINE)


def _role(match: re.Match) -> str:
    tilde, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


class RstRoles(griffe.Extension):
    """Rewrite the docstring of every object before it is parsed."""

    def on_object(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None:
            text = _ROLE.sub(_role, obj.docstring.value)
            text = _EXAMPLE.sub(r"\1Examples:", _LITERAL.sub(r"\1:", text))
            obj.docstring.value = text
