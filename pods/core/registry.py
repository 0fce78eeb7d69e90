"""Name lookup shared by the hook registries (rollout rules, prompt rules, allocations, token masks, m schedules).

    rule = registrar(RULES, NEEDS)                      # then, where a rule is implemented: @rule("cppo")
    fn = lookup("rollout rule", "gfpo_lenght", RULES)   # ValueError: ... did you mean 'gfpo_length'? ...
    require("rollout rule", "gfpo_length", NEEDS["gfpo_length"], lengths=None)  # ValueError: needs lengths

Contract: a registry is a plain dict filled where its entries are implemented; a name registered twice with
different objects raises ValueError naming both; an unknown name raises ValueError naming the nearest names
(difflib) and every valid one; a missing input names the rule and the input.
"""

from __future__ import annotations

import difflib


def registrar(registry: dict, inputs: dict | None = None):
    """A decorator factory: `@register(name, needs=(...))` puts the object in `registry` under `name`, sets its
    `name`, and records in `inputs` the optional inputs it cannot do without. A name already taken by another
    object is refused (ValueError naming both); the same object again (a reloaded module's) replaces it."""
    def under(name: str, needs: tuple[str, ...] = ()):
        def register(obj):
            if name in registry and _where(registry[name]) != _where(obj):
                raise ValueError(f"{name!r} is registered twice: {_where(registry[name])} and {_where(obj)}; "
                                 "rename one of them")
            obj.name = name
            registry[name] = obj
            if inputs is not None:
                inputs[name] = needs
            return obj
        return register
    return under


def _where(obj) -> str:
    """'pods.core.downsample.max_variance': an object's module and qualified name."""
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"


def lookup(kind: str, name: str, registry: dict):
    """registry[name], or a ValueError that names the closest valid names."""
    if name in registry:
        return registry[name]
    near = difflib.get_close_matches(str(name), list(registry), n=3, cutoff=0.5)
    hint = f"did you mean {' or '.join(repr(x) for x in near)}? " if near else ""
    raise ValueError(f"unknown {kind} {name!r}; {hint}valid: {', '.join(registry)}")


def require(kind: str, name: str, needs: tuple[str, ...], **given) -> None:
    """Raise ValueError if one of `needs` was not given (is None)."""
    missing = [k for k in needs if given.get(k) is None]
    if missing:
        raise ValueError(f"{kind} {name!r} needs {' and '.join(missing)} (pass {', '.join(f'{k}=...' for k in missing)}), "
                         "which were not given")
