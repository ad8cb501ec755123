"""kipviz's analyses through Spark Connect: a thin client in this process, the JVM (and the Python
workers that run kipviz's decoders) in the Connect server's.

    spark = kipviz.spark.session(remote="sc://127.0.0.1:15002")     # or KIPVIZ_SPARK_REMOTE
    kipviz analyze sample_data/share_eos --remote sc://127.0.0.1:15002

The server must be able to import kipviz in its Python workers (the same environment, or kipviz
installed next to it) and read the paths the client names (a sample directory is read by the
server). Needs the `connect` extra (pyspark[connect]'s grpcio, grpcio-status,
googleapis-common-protos, zstandard)."""
from __future__ import annotations

import re
import socket

from ..errors import KipvizError

# sc://host:port[/;param=value;...] (Spark Connect's client connection string)
_REMOTE = re.compile(r"sc://(\[[0-9a-fA-F:]+\]|[^\s/:;\[\]]+)(?::(\d+))?(/;\S*)?")
DEFAULT_PORT = 15002
CONNECT_TIMEOUT_S = 5.0
# runtime SQL settings of kipviz's defaults that a Connect session may set for itself (the
# server's static settings -- UI, worker reuse -- are the server's own)
_RUNTIME_PREFIX = "spark.sql."

__all__ = ["remote_session", "check_remote", "is_connect"]


def check_remote(remote: str) -> tuple[str, int]:
    """(host, port) of a Connect URL whose server accepts a connection within CONNECT_TIMEOUT_S;
    KipvizError otherwise, or when the client packages are missing."""
    m = _REMOTE.fullmatch(remote)
    if not m:
        raise KipvizError(f"Spark Connect address {remote!r} is not sc://HOST:PORT")
    host, port = m.group(1).strip("[]"), int(m.group(2) or DEFAULT_PORT)
    try:
        import grpc  # noqa: F401
        import pyspark.sql.connect.session  # noqa: F401
    except ImportError as e:
        raise KipvizError(f"Spark Connect needs the connect extra (pip install 'kipviz[connect]'): {e}") from None
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise KipvizError(f"Spark Connect server {remote!r} does not answer ({host}:{port}: {why})") from None
    return host, port


def remote_session(remote: str, *, app_name: str = "kipviz", conf: dict | None = None, defaults: dict | None = None):
    """A Spark Connect session on `remote` with the runtime SQL settings of `defaults` (kipviz's,
    kipviz.spark.session.DEFAULTS: UTC, Arrow, small splits) set for this session, then `conf`."""
    import warnings

    from pyspark.sql import SparkSession
    check_remote(remote)
    # the Connect client repeats, as a Python warning, a JVM log line kipviz's local sessions keep
    # out of sight (errors-only logging): the analyses' windows over a whole (small) frame are meant
    warnings.filterwarnings("ignore", message="WARN WindowExpression: No Partition Defined", category=UserWarning)
    spark = SparkSession.builder.remote(remote).appName(app_name).getOrCreate()
    for k, v in (defaults or {}).items():
        if k.startswith(_RUNTIME_PREFIX):      # this session's own: the same answers as on local[2]
            spark.conf.set(k, v)
    for k, v in (conf or {}).items():
        spark.conf.set(k, str(v))
    return spark


def is_connect(spark) -> bool:
    """Is `spark` a Spark Connect session (no JVM in this process)?"""
    return type(spark).__module__.startswith("pyspark.sql.connect")
