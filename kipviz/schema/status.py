"""The status (released / accepted / proposed) the kit's definitions give a request version."""
from __future__ import annotations

from . import registry


def version_status(api: str, version: int) -> str | None:
    """released / accepted / proposed for a request version the kit defines, else None."""
    try:
        st = registry.get(api + "Request").status(version)
    except Exception:  # noqa: BLE001 - an api or version the kit does not define
        return None
    return st.status if st is not None else None
