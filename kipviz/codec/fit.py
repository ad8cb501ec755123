"""Fit a body to one version of a message: exactly that version's fields, values taken from the
given dict (keys the version lacks are dropped, nested structs fitted too), the rest Kafka's defaults.
One function for the broker's responses and the clients' requests."""
from __future__ import annotations

from ..schema import registry
from ..schema.resolve import resolve
from .defaults import default_value


def fit_body(message, version: int, values: dict, *, fill_nulls: bool = True) -> dict:
    """`values` fitted to `message` at `version`. With fill_nulls (a broker's response), a null where
    the version does not allow one becomes the field's default, "" for a string (as Kafka's
    getErrorResponse does) and a nested struct that is not a dict is filled with defaults; without it
    (a client's request) nulls and non-dict struct values pass through as given. `message` is a name
    or a MessageSpec (the coordinator records' definitions are not in the registry)."""
    return _fit(resolve(registry.get(message), version).fields, values, fill_nulls)


def _fit(fields, given, fill_nulls: bool) -> dict:
    # module level, not a closure: a recursive closure is a reference cycle left for the collector
    out = {}
    for f in fields:
        if isinstance(given, dict) and f.name in given:
            x = given[f.name]
            if f.is_struct and x is not None:
                if fill_nulls:
                    x = [_fit(f.fields, e, True) for e in x] if f.is_array else _fit(f.fields, x, True)
                elif f.is_array and isinstance(x, list):
                    x = [_fit(f.fields, e, False) if isinstance(e, dict) else e for e in x]
                elif not f.is_array and isinstance(x, dict):
                    x = _fit(f.fields, x, False)
            elif x is None and fill_nulls and not f.nullable:
                x = "" if f.elem == "string" and not f.is_array else default_value(f)
            out[f.name] = x
        else:
            out[f.name] = default_value(f)
    return out


def complete_body(message: str, version: int, values: dict) -> dict:
    """A request body for `message` at `version` (fit_body without filling nulls)."""
    return fit_body(message, version, values, fill_nulls=False)
