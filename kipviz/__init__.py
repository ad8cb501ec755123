"""kipviz: a teaching kit for Kafka's wire protocol and coordinators (docs/architecture.md)."""
