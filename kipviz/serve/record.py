"""`kipviz serve --record DIR` / Server(record=DIR): the live session in the sample-data layout
(kipviz.sampledata's RunWriter: events, request log, Kafka-source-shaped topic files, manifest.json)
plus `traffic.pcap`, the real TCP traffic of every connection (kipviz.capture's PcapWriter), so
`kipviz analyze DIR` and Wireshark read what real clients did.

Events reach the writer when the cluster's bounded event buffer spills (ClusterConfig.events_spill)
and at the end. The pcap is written as the traffic comes (its last WINDOW seconds are held to keep
it in time order), so a long session holds no more of it in memory than a short one."""
from __future__ import annotations

import time
from pathlib import Path

PCAP = "traffic.pcap"
WINDOW = 1.0          # seconds of packets held back; the server's threads add theirs within it


class Recorder:
    def __init__(self, out, cluster):
        from ..capture import PcapWriter
        from ..sampledata.writer import RunWriter
        self.out = Path(out)
        self.cluster = cluster
        self.writer = RunWriter(self.out, offload=False)    # no forked helpers inside a threaded server
        self.pcap = PcapWriter(self.out / PCAP, window=WINDOW)
        self._conns: dict = {}
        self.closed = False

    # called with the server's lock held
    def spill(self, events) -> None:
        if not self.closed:
            self.writer.drain(events, self.cluster)

    def opened(self, key, client: tuple, server: tuple) -> None:
        try:
            self._conns[key] = self.pcap.connection(client[:2], server[:2])
        except Exception:  # noqa: BLE001 - an address the pcap cannot hold (e.g. a unix socket)
            pass

    def sent(self, key, to_server: bool, data: bytes) -> None:
        c = self._conns.get(key)
        if c is not None and data:
            c.send(to_server, data, time.time())

    def gone(self, key) -> None:
        c = self._conns.pop(key, None)
        if c is not None:
            c.close(time.time())

    def close(self, meta_extra: dict | None = None) -> dict:
        """Write the rest (the events still in the cluster stay there too) and the manifest."""
        from ..sampledata.generate import sample_meta
        self.closed = True
        c = self.cluster
        self.writer.drain(list(c.events), c)
        data = sum(1 for t in c.topics.by_id.values() if not t.internal
                   for log in t.partitions for e in log.entries if e.control is None)
        meta = sample_meta("live", "serve", 0, data, c, "proposed" if c.config.share_version >= 2 else "released",
                     None, None, None)
        meta["generator"]["command"] = "kipviz serve --record"
        meta["summary"] = dict(meta_extra or {})
        manifest = self.writer.close(c, meta)
        for key in list(self._conns):
            self.gone(key)
        self.pcap.close()
        return manifest
