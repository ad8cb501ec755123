"""What the real-client tests share: a logging handler that keeps a client's error-level lines (a
client error line fails a test), librdkafka's and kafka-python's loggers wired to it, and the
served cluster the aiokafka and KafkaJS tests run against."""
from __future__ import annotations

import contextlib
import logging
import uuid

USERS = {"alice": "alice-secret", "bob": "bob-secret"}


class ErrorLines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        if record.levelno >= logging.ERROR:
            self.lines.append(f"{record.name}: {record.getMessage()}")


@contextlib.contextmanager
def rdkafka_and_kafka_python_logs(prefix: str = "rdkafka"):
    """{"logger": a librdkafka `logger`, "errors": a list for `error_cb`, "lines": ErrorLines that
    also hears kafka-python}; the handler is removed afterwards."""
    h = ErrorLines()
    rd = logging.getLogger(f"{prefix}.{uuid.uuid4().hex[:6]}")
    rd.propagate = False
    rd.addHandler(h)
    kp = logging.getLogger("kafka")
    kp.addHandler(h)
    try:
        yield {"logger": rd, "errors": [], "lines": h}
    finally:
        kp.removeHandler(h)


@contextlib.contextmanager
def users_server():
    """Three brokers with both listeners and USERS; no binding but one giving alice her prefix, so every
    authenticated user may do everything (allow.everyone.if.no.acl.found true) except on "alice."."""
    from kipviz.broker import Acl
    from kipviz.serve import Server
    with Server(brokers=3, users=USERS, acls=[Acl("User:alice", "TOPIC", "alice.", "ALL", pattern="PREFIXED")],
                allow_everyone_if_no_acl_found=True) as srv:
        yield srv
    assert srv.cluster.internal_errors == []
