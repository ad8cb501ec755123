"""ACLs on the transactional path: which authorization error a TxnOffsetCommit meets first.

KafkaApis.handleTxnOffsetCommitRequest (core/src/main/scala/kafka/server/KafkaApis.scala) asks the
authorizer, in this order: WRITE on the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED
for every partition), READ on the group (else GROUP_AUTHORIZATION_FAILED), then READ on each topic.
The scenario runs a read-process-write producer whose ACLs grant its transactional ids and topics
but not its consumer group, an outsider with no ACLs at all, and an administrator who fixes the
ACLs with CreateAcls (kipviz.broker.authorizer: StandardAuthorizer's semantics)."""
from __future__ import annotations

from ..broker import Acl
from ..clients import AbortableError, Producer
from ..schema.coordinators import GROUP_KEY
from . import Trace, scenario
from .kip516 import Wire, part_errors

APP, OUTSIDER, ADMIN = "User:app", "User:outsider", "User:admin"
GROUP = "orders-app"


def _commit_frame(w: Wire, p: Producer, principal_note: str = "") -> dict:
    return w("TxnOffsetCommit", 5, {
        "TransactionalId": p.transactional_id, "GroupId": GROUP, "ProducerId": p.producer_id,
        "ProducerEpoch": p.producer_epoch, "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None,
        "Topics": [{"Name": "in", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 3, "CommittedLeaderEpoch": -1,
                                                  "CommittedMetadata": principal_note}]}]},
        broker=w.cluster.coordinator_broker(GROUP_KEY, GROUP))


@scenario("acls.txn_offset_commit_order", kip=None, status="released",
          title="TxnOffsetCommit's ACLs: the transactional id first, then the group, then the topics",
          summary="User:app may write its transactional ids (tx-* prefixed) and its topics, but was never "
                  "granted its consumer group. An outsider with no ACL sends a TxnOffsetCommit for app's "
                  "transaction; then app sends its offsets itself; then an administrator grants the group with "
                  "CreateAcls and app's next transaction commits. Which error does each meet, and why that one?",
          acls=[Acl(APP, "TRANSACTIONAL_ID", "tx-", "WRITE", pattern="PREFIXED"),
                Acl(APP, "TOPIC", "in", "READ"), Acl(APP, "TOPIC", "out", "WRITE")],
          super_users=(ADMIN,))
def txn_offset_commit_order(trace: Trace) -> None:
    c = trace.cluster
    for name, n in (("in", 1), ("out", 1)):
        c.create_topic(name, n)
    p = Producer(c, "tx-app", client_id="app", principal=APP)
    p.init_transactions()
    p.begin_transaction()
    p.send("out", b"k", b"processed")
    # 1. the outsider: neither WRITE on tx-app nor READ on the group
    outsider = part_errors(_commit_frame(Wire(trace, "outsider", principal=OUTSIDER), p))
    trace.expect("1. an outsider with no ACL: TRANSACTIONAL_ID_AUTHORIZATION_FAILED (the transactional id is "
                 "checked before the group)", outsider == {("in", 0): "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"},
                 repr(outsider))
    # 2. app itself: its transactional id is granted, its group is not
    try:
        p.send_offsets_to_transaction({("in", 0): 3}, {"group_id": GROUP, "generation_id": -1, "member_id": "",
                                                       "group_instance_id": None})
        app_error = "NONE"
    except AbortableError as e:
        app_error = e.error
    trace.expect("2. app (WRITE on tx-*, no READ on the group): GROUP_AUTHORIZATION_FAILED, an abortable error",
                 app_error == "GROUP_AUTHORIZATION_FAILED" and p.state == "ABORTABLE_ERROR", f"{app_error} {p.state}")
    p.abort_transaction()
    # 3. the administrator grants the group (CreateAcls: GROUP orders-app, READ, ALLOW)
    admin = Wire(trace, "admin", principal=ADMIN)
    created = admin("CreateAcls", 3, {"Creations": [
        {"ResourceType": 3, "ResourceName": GROUP, "ResourcePatternType": 3, "Principal": APP, "Host": "*",
         "Operation": 3, "PermissionType": 3}]})
    trace.expect("3. CreateAcls by a super user adds the binding", created["Results"][0]["ErrorCode"] == 0,
                 repr(created))
    p.begin_transaction()
    p.send("out", b"k", b"processed again")
    p.send_offsets_to_transaction({("in", 0): 3}, {"group_id": GROUP, "generation_id": -1, "member_id": "",
                                                   "group_instance_id": None})
    p.commit_transaction()
    committed = c.groups.committed(GROUP, "in", 0)
    trace.expect("4. with READ on the group the next transaction commits its offset",
                 committed is not None and committed.offset == 3, repr(committed))
    outsider_again = part_errors(_commit_frame(Wire(trace, "outsider", principal=OUTSIDER), p))
    trace.expect("5. the outsider still meets the transactional id first, although the group check would now "
                 "refuse it too", outsider_again == {("in", 0): "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"},
                 repr(outsider_again))
    trace.find("The outsider, lacking both ACLs, is told TRANSACTIONAL_ID_AUTHORIZATION_FAILED; app, lacking only the "
               "group, GROUP_AUTHORIZATION_FAILED -- and only after its transactional id passed.",
               "The application's operator: each error names one missing ACL, the first one KafkaApis checks; fixing "
               "it can reveal the next (a deny on the topic would come third, per topic).",
               "KafkaApis.scala (handleTxnOffsetCommitRequest): WRITE on the transactional id, then READ on the "
               "group, then READ per topic; StandardAuthorizerData.java: no ACL on a resource means denied unless "
               "allow.everyone.if.no.acl.found.")
    trace.result.update(outsider=outsider[("in", 0)], app=app_error,
                        committed=None if committed is None else committed.offset)
