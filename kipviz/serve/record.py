"""`kipviz serve --record DIR` / Server(record=DIR): the live session in the sample-data layout
(kipviz.sampledata's RunWriter: events, request log, Kafka-source-shaped topic files, manifest.json)
plus `traffic.pcap`, the real TCP traffic of every connection (kipviz.capture's PcapWriter), so
`kipviz analyze DIR` and Wireshark read what real clients did.

Events reach the writer when the cluster's bounded event buffer spills (ClusterConfig.events_spill)
and at the end. The pcap is written as the traffic comes (its last WINDOW seconds are held to keep
it in time order), so a long session holds no more of it in memory than a short one.

The pcap holds every byte the clients sent, so the folder is private: 0700, its files 0600, each
created new and never through a link (kipviz.sampledata.files). DIR must be new, empty, or an
earlier recording -- its manifest says `kipviz serve --record`, or an unfinished one (the server was
killed: .parts or traffic.pcap and no manifest) -- whose files are replaced; anything else, a
sample written by `kipviz sample-data` included, is refused with one line (KipvizError)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..errors import KipvizError

PCAP = "traffic.pcap"
WINDOW = 1.0          # seconds of packets held back; the server's threads add theirs within it
COMMAND = "kipviz serve --record"      # the manifest's generator command: what makes a folder a recording


def check_folder(out: Path) -> None:
    """KipvizError unless `out` may hold a new recording: missing, empty, or an earlier recording of
    this user's (never another user's folder, nor one that is not a recording)."""
    if not out.exists() and not out.is_symlink():
        return
    if not out.is_dir():
        raise KipvizError(f"--record {out}: exists and is not a folder")
    if hasattr(os, "getuid") and out.stat().st_uid != os.getuid():
        raise KipvizError(f"--record {out}: the folder belongs to another user")
    names = {p.name for p in out.iterdir()}
    if not names:
        return
    manifest = out / "manifest.json"
    if "manifest.json" in names:
        try:
            if manifest.is_symlink():
                raise ValueError("a link")
            command = json.loads(manifest.read_bytes()).get("generator", {}).get("command", "")
        except (ValueError, AttributeError, OSError):
            command = None
        if command != COMMAND:
            what = f"a sample written by `{command}`" if isinstance(command, str) and command else "a manifest.json"
            raise KipvizError(f"--record {out}: holds {what}, not a kipviz recording: give a new or empty folder, "
                              "or an earlier recording")
    elif not {".parts", PCAP} & names:
        raise KipvizError(f"--record {out}: not empty and holds no kipviz recording (no manifest.json): give a "
                          "new or empty folder, or an earlier recording")


class Recorder:
    def __init__(self, out, cluster):
        from ..capture import PcapWriter
        from ..sampledata import files
        from ..sampledata.writer import RunWriter
        self.out = Path(out)
        self.cluster = cluster
        check_folder(self.out)
        files.remove(self.out / PCAP)
        # no forked helpers inside a threaded server; 0700 folders and 0600 files
        self.writer = RunWriter(self.out, offload=False, private=True)
        self._file = files.new_file(self.out / PCAP, private=True, buffered=False)   # on disk as written
        self.pcap = PcapWriter(self._file, format="pcap", window=WINDOW)
        self._conns: dict = {}
        self.closed = False

    # called with the server's lock held
    def spill(self, events) -> None:
        """Write events the cluster let go of to the recording."""
        if not self.closed:
            self.writer.drain(events, self.cluster)

    def opened(self, key, client: tuple, server: tuple) -> None:
        """A connection opened: start its stream in the capture."""
        try:
            self._conns[key] = self.pcap.connection(client[:2], server[:2])
        except Exception:  # noqa: BLE001 - an address the pcap cannot hold (e.g. a unix socket)
            pass

    def sent(self, key, to_server: bool, data: bytes) -> None:
        """Bytes sent on a connection, to the server or from it: add them to the capture."""
        c = self._conns.get(key)
        if c is not None and data:
            c.send(to_server, data, time.time())

    def gone(self, key) -> None:
        """A connection closed: end its stream in the capture."""
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
        meta = sample_meta("live", "serve", c.seed, data, c,
                           "proposed" if c.features.on("KIP-1289") else "released", None, None, None)
        meta["generator"]["command"] = COMMAND
        meta["summary"] = dict(meta_extra or {})
        manifest = self.writer.close(c, meta)
        for key in list(self._conns):
            self.gone(key)
        self.pcap.close()
        self._file.close()
        return manifest
