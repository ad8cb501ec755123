"""KIP-1242 (ApiVersions v5, released in Kafka 4.4): detection of misrouted connections, and
DeleteGroups (v3 in Kafka 4.4, KIP-1331) as an admin client calls it.

    kip1242.misrouted_connection   a connection meant for one node lands on another, or on another
                                   cluster: REBOOTSTRAP_REQUIRED at v5; v4 cannot tell
    groups.delete_groups           a group with a member cannot be deleted (NON_EMPTY_GROUP); once
                                   empty it is deleted with its offsets (tombstones); then it is gone

Frames are hand-built (kipviz.scenarios.kip516.Wire) so each check is about the bytes answered."""
from __future__ import annotations

import uuid

from ..schema import events as ev
from ..schema.coordinators import GROUP_KEY
from ..schema.error_codes import name_of
from . import Trace, scenario
from .kip516 import Wire, newest

KIP = "KIP-1242"


def _api_versions(w: Wire, version: int, broker: int, cluster_id=None, node_id: int = -1) -> str:
    body = {"ClientSoftwareName": "kipviz-client", "ClientSoftwareVersion": "1.0"}
    if version >= 5:
        body.update({"ClusterId": cluster_id, "NodeId": node_id})
    r = w("ApiVersions", version, body, broker=broker)
    return name_of(r["ErrorCode"]), len(r["ApiKeys"])


@scenario("kip1242.misrouted_connection", kip=KIP, status="released", brokers=3,
          title="A misrouted connection: ApiVersions v5 names the cluster and node it expects (Kafka 4.4)",
          summary="After bootstrapping, a client knows the cluster id and every node's id. When DNS or a load "
                  "balancer sends its connection for node 2 to broker 1, or to a broker of another cluster, "
                  "ApiVersions v5 is answered REBOOTSTRAP_REQUIRED, so the client starts again from its "
                  "bootstrap servers instead of sending requests to the wrong broker. At v4 (any client "
                  "before 4.4) the broker cannot tell, and serves the connection.")
def misrouted_connection(trace: Trace) -> None:
    c = trace.cluster
    w = Wire(trace, "client-1")
    top = newest(trace, "ApiVersions")
    trace.expect("the brokers (Kafka 4.4) serve ApiVersions up to v5", top == 5, str(top))
    err, keys = _api_versions(w, 5, 0)
    trace.expect("bootstrap connection: no cluster or node id yet, so nothing to check: NONE",
                 err == "NONE" and keys > 0, f"{err}, {keys} api keys")
    meta = w("Metadata", newest(trace, "Metadata"), {"Topics": None, "AllowAutoTopicCreation": False})
    cid, nodes = meta["ClusterId"], sorted(b["NodeId"] for b in meta["Brokers"])
    trace.expect("Metadata tells the client the cluster id and the node ids", cid == c.cluster_id and nodes == [0, 1, 2],
                 f"{cid} {nodes}")
    err, _ = _api_versions(w, 5, 1, cid, 1)
    trace.expect("connection for node 1 reaches broker 1: NONE", err == "NONE", err)
    err, keys = _api_versions(w, 5, 1, cid, 2)
    refused = err
    trace.expect("connection for node 2 reaches broker 1: REBOOTSTRAP_REQUIRED, no api keys",
                 err == "REBOOTSTRAP_REQUIRED" and keys == 0, f"{err}, {keys}")
    other = str(uuid.UUID(int=c.rng.getrandbits(128), version=4))
    err, _ = _api_versions(w, 5, 1, other, 1)
    trace.expect("a connection that reaches another cluster's broker 1: REBOOTSTRAP_REQUIRED",
                 err == "REBOOTSTRAP_REQUIRED", err)
    err, keys = _api_versions(w, 5, 1, None, 1)
    trace.expect("a node id without a cluster id is malformed: INVALID_REQUEST, no api keys",
                 err == "INVALID_REQUEST" and keys == 0, f"{err}, {keys}")
    err, _ = _api_versions(w, 4, 1)
    trace.expect("the same misrouted connection at v4 (a client before 4.4) is served: the broker cannot tell",
                 err == "NONE", err)
    trace.result.update(cluster_id=cid, refused=2)
    trace.find(f"A connection meant for node 2 that lands on broker 1 is answered {refused} at ApiVersions v5, but "
               f"the same misrouted connection at v4 is answered {err} and served.",
               "A Kafka 4.4 client (client-1) gets REBOOTSTRAP_REQUIRED and starts again from its bootstrap "
               "servers; a client before 4.4 talks to the wrong broker and only learns it from later errors "
               "such as NOT_LEADER_OR_FOLLOWER.",
               "KIP-1242: ApiVersions v5 carries ClusterId and NodeId and the broker checks both (Kafka 4.4, "
               "apache/kafka PR #22187, KAFKA-20246).")


@scenario("groups.delete_groups", kip="KIP-229", status="released", brokers=3,
          title="DeleteGroups: only an empty group can be deleted, and its offsets go with it",
          summary="An admin client deletes a KIP-848 consumer group. While a member is in it the answer is "
                  "NON_EMPTY_GROUP; once the member has left, the group and its committed offsets are deleted "
                  "(tombstones in __consumer_offsets), and a second delete finds nothing: GROUP_ID_NOT_FOUND. "
                  "Kafka 4.4's v3 adds a readable ErrorMessage per group.")
def delete_groups(trace: Trace) -> None:
    c = trace.cluster
    c.create_topic("in", 2)
    gid = "billing"
    coord = c.coordinator_broker(GROUP_KEY, gid)
    w = Wire(trace, "consumer-1")
    member = str(uuid.UUID(int=c.rng.getrandbits(128), version=4))
    hb_v = newest(trace, "ConsumerGroupHeartbeat")
    r = w("ConsumerGroupHeartbeat", hb_v, {
        "GroupId": gid, "MemberId": member, "MemberEpoch": 0, "InstanceId": None, "RackId": None,
        "RebalanceTimeoutMs": 30000, "SubscribedTopicNames": ["in"], "SubscribedTopicRegex": None,
        "ServerAssignor": None, "TopicPartitions": []}, broker=coord)
    epoch = r["MemberEpoch"]
    oc_v = newest(trace, "OffsetCommit")
    topic = {"TopicId": c.topics.get("in").topic_id} if oc_v >= 10 else {"Name": "in"}
    r = w("OffsetCommit", oc_v, {"GroupId": gid, "GenerationIdOrMemberEpoch": epoch, "MemberId": member,
                                  "GroupInstanceId": None, "Topics": [{**topic, "Partitions": [
                                      {"PartitionIndex": p, "CommittedOffset": 10 + p} for p in (0, 1)]}]},
          broker=coord)
    admin = Wire(trace, "admin")
    v = newest(trace, "DeleteGroups")
    trace.expect("the brokers (Kafka 4.4) serve DeleteGroups up to v3", v == 3, str(v))

    def delete(why: str, want: str, broker: int = coord):
        res = admin("DeleteGroups", v, {"GroupsNames": [gid]}, broker=broker)["Results"][0]
        got = name_of(res["ErrorCode"])
        trace.expect(f"DeleteGroups v{v} {why}: {want}", got == want, f"{got}: {res.get('ErrorMessage')}")
        return res
    delete("sent to a broker that does not coordinate the group", "NOT_COORDINATOR", (coord + 1) % c.config.brokers)
    res = delete("while consumer-1 is a member", "NON_EMPTY_GROUP")
    trace.expect("v3 says why in ErrorMessage", bool(res.get("ErrorMessage")), repr(res.get("ErrorMessage")))
    w("ConsumerGroupHeartbeat", hb_v, {"GroupId": gid, "MemberId": member, "MemberEpoch": -1, "InstanceId": None,
                                       "RackId": None, "RebalanceTimeoutMs": -1, "SubscribedTopicNames": None,
                                       "SubscribedTopicRegex": None, "ServerAssignor": None,
                                       "TopicPartitions": None}, broker=coord)
    trace.expect("consumer-1 left: the group is Empty", c.groups.group_state(gid) == "Empty",
                 str(c.groups.group_state(gid)))
    delete("once the group is empty", "NONE")
    gone = c.groups.group_state(gid) is None and not c.groups.offsets.by_group.get(gid)
    trace.expect("the group and its two committed offsets are gone", gone)
    deleted = [e for e in c.events if isinstance(e, ev.GroupDeleted) and e.group == gid]
    trace.expect("the coordinator wrote a tombstone per committed offset", [e.tombstones for e in deleted] == [2],
                 repr([e.text for e in deleted]))
    again = delete("a second time", "GROUP_ID_NOT_FOUND")
    trace.find(f"DeleteGroups refuses '{gid}' with {name_of(res['ErrorCode'])} while consumer-1 is a member, deletes "
               f"it with its {deleted[0].tombstones if deleted else 'no'} committed offsets (tombstones) once it is "
               f"empty, "
               f"and a second delete is answered {name_of(again['ErrorCode'])}.",
               "The admin client (kafka-consumer-groups.sh --delete): it must wait until every member has left, "
               "and after the delete a consumer that rejoins has no committed offsets on in-0 and in-1 "
               "(auto.offset.reset decides where it starts).",
               "KIP-229: only an empty group can be deleted, and its offsets go with it "
               "(GroupMetadataManager.java, deleteGroups); Kafka 4.4's DeleteGroups v3 adds an ErrorMessage per "
               "group (KIP-1331, PR #22397).")
