"""The status (released / accepted / proposed) the kit's definitions give a request version."""
from __future__ import annotations

import functools

from . import registry


def version_status(api: str, version: int) -> str | None:
    """released / accepted / proposed for a request version the kit defines, else None."""
    try:
        st = registry.get(api + "Request").status(version)
    except Exception:  # noqa: BLE001 - an api or version the kit does not define
        return None
    return st.status if st is not None else None


@functools.cache
def kip_release(kip: str) -> str | None:
    """The first Kafka release that shipped a version the kit's definitions label with `kip`
    ("KIP-516" -> "2.8"), or None: the KIP has shipped nothing the kit defines."""
    from .releases import release_key
    shipped = [st.since for spec in registry.messages().values() for st in getattr(spec.kit, "statuses", ())
               if st.kip == kip and st.status == "released" and st.since]
    return min(shipped, key=release_key) if shipped else None
