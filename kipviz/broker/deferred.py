"""The sentinel a handler returns when Kafka holds a request (answered later through cluster.complete)."""
DEFERRED = object()
