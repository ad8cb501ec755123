"""The cluster's finalized feature levels, as state, and the one gate for proposals.

Kafka keeps the finalized levels in the metadata log; the controller changes them only in
UpdateFeatures (metadata/src/main/java/org/apache/kafka/controller/FeatureControlManager.java:
updateFeatures), and ApiVersions answers them as FinalizedFeatures. Here `Features` holds them for
one cluster: they start at the configuration's levels (ClusterConfig.transaction_version,
share_version: the bootstrap metadata) and change only through `Features.finalize`, which records
a FeatureLevelChanged event. Nothing assigns the configuration while a run goes on.

Two questions, two answers:
- may the model run a proposal's code at all in this run? `ClusterConfig.enabled(kip)`, fixed for
  the run (ClusterConfig.proposed_kips);
- is the proposal on now? `cluster.features.on(kip)`: enabled, and the feature level the proposal
  needs finalized (PROPOSAL_LEVELS: KIP-1289 needs share.version >= 2, docs/modelling-a-kip.md). Every
  module asks this, never share_version itself.
"""
from __future__ import annotations

from ..schema import events as ev

# the feature level each proposal the model implements needs before its code runs
PROPOSAL_LEVELS: dict[str, tuple[str, int]] = {"KIP-1289": ("share.version", 2)}
# the APIs whose proposed versions a proposal serves (kipviz.schema.releases.served's `proposals`)
PROPOSAL_APIS: dict[str, frozenset[str]] = {"KIP-1289": frozenset({"TxnShareAcknowledge"})}
# the features ApiVersions lists, in its order
FEATURES = ("transaction.version", "share.version")


class Features:
    """The finalized feature levels of one cluster (FeatureControlManager's finalized versions)."""

    def __init__(self, cluster, levels: dict[str, int]):
        self.cluster = cluster
        self.levels = dict(levels)
        self._on: dict[str, bool] = {}
        self._refresh()

    def level(self, name: str) -> int:
        """The finalized level of feature `name` now (0 when it was never finalized)."""
        return self.levels.get(name, 0)

    def finalized(self) -> list[tuple[str, int]]:
        """(name, level) of the features ApiVersions answers, in its order."""
        return [(n, self.level(n)) for n in FEATURES]

    def finalize(self, name: str, level: int, *, by: str = "operator", how: str = "", status: str = "released",
                 kip: str = "", tell: bool = True) -> None:
        """UpdateFeatures: finalize feature `name` at `level`, recorded as a FeatureLevelChanged
        (`by` and `how` are its sentence). tell=False: the change is part of something another
        event already tells (a fault's FaultInjected, a scenario's probe), so it adds no event."""
        previous = self.level(name)
        self.levels[name] = level
        self._refresh()
        if tell:
            self.cluster.emit(ev.FeatureLevelChanged, feature=name, level=level, previous=previous, by=by, how=how,
                              status=status, kip=kip)

    def on(self, kip: str) -> bool:
        """Whether proposal `kip` runs now: enabled for this run and its feature level finalized."""
        return self._on.get(kip, False)

    def proposed_apis(self) -> frozenset[str]:
        """The APIs whose proposed versions are served now (ApiVersions, the request router)."""
        return self._apis

    def _refresh(self) -> None:
        self._on = proposals_on(self.cluster.config, self.levels)
        self._apis = proposed_apis(self.cluster.config, self.levels)


def proposals_on(config, levels: dict[str, int]) -> dict[str, bool]:
    """{kip: on} at feature `levels`: enabled for the run (config.enabled) and its level reached."""
    return {kip: config.enabled(kip) and levels.get(name, 0) >= at for kip, (name, at) in PROPOSAL_LEVELS.items()}


def proposed_apis(config, levels: dict[str, int]) -> frozenset[str]:
    """The APIs whose proposed versions are served at feature `levels`."""
    return frozenset().union(*(PROPOSAL_APIS.get(k, ()) for k, on in proposals_on(config, levels).items() if on))
