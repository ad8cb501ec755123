# %% [markdown]
# # 08 · Reviewing a protocol design (KIP drafts)
#
# A KIP that adds or changes an RPC comes with schema files: Kafka's JSON message definitions. A
# reviewer has to answer the same questions every time: *does the file even load? which versions are
# new, which existing ones does it touch? can a peer built from the released definition still read the
# bytes? is the api key free? is a tag number reused?* `kipviz.review` answers them from the schema file
# alone and writes one self-contained HTML page for the review thread. The same call is the
# `kipviz review DRAFT.json` command.
#
# **Learning objectives** — after this notebook you can
# 1. run a review of a draft schema and read its findings (severity, field, versions, line);
# 2. explain why an api-key clash, a deleted field, a field added to an existing version and a reused
#    tag break peers, and what the draft should say instead;
# 3. tell a change to the bytes from a change to generated code only, and a released version from a proposed one;
# 4. produce the HTML report for a review thread, from Python or the command line.
#
# **Prerequisites:** `01_wire_format` (flexible versions, tagged fields); `05_txn_offset_commit_v6` helps.
# **Time to complete:** about 30 minutes.
# **Sources:** [KIP-1289](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1289+Support+Transactional+Acknowledgments+for+Share+Groups) (proposed), [KIP-1319](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1319:+Align+TxnOffsetCommit+API+with+OffsetCommit+API) (released in Kafka 4.4);
# background: [KIP-482](https://cwiki.apache.org/confluence/display/KAFKA/KIP-482%3A+The+Kafka+Protocol+should+Support+Optional+Tagged+Fields) (tagged fields).

# %%
import json
import tempfile
from pathlib import Path

from IPython.display import HTML, SVG, display

from kipviz import cli
from kipviz.course.exercises import exercise
from kipviz.draw import diff_diagram, to_svg
from kipviz.review import RULES, review
from kipviz.schema import jsonc, registry
from kipviz.schema.check import reference_root
from kipviz.table import Table


def findings(r):
    """A review's findings as a table."""
    return Table([{"severity": f.severity, "rule": f.rule, "field": f.path, "versions": f.versions_text,
                   "line": f.line or "", "what": f.message} for f in r.findings],
                 columns=["severity", "rule", "field", "versions", "line", "what"])


# %% [markdown]
# ## 1. What a reviewer checks
#
# Each rule returns findings with a severity. **error**: peers break (or the file does not load) — the
# review fails. **warning**: legal, but someone must decide (a change to a version that is only
# *proposed*, a tag added to old versions without `"ignorable": true`). **info**: worth a sentence in
# the thread.

# %%
Table([{"rule": k, "usual severity": sev, "catches": what} for k, (what, sev) in RULES.items()])

# %% [markdown]
# ## 2. KIP-1289's TxnShareAcknowledge, numbered as the KIP page numbers it
#
# KIP-1289 (*proposed*, under vote) adds the TxnShareAcknowledge RPC. Its api key has moved three times:
# the KIP page gives the request **93**, the draft pull request uses 94, and a later draft in the
# author's fork 95. The kit's definition records all three (`apiKeyCandidates` in
# `kipviz/defs/messages/TxnShareAcknowledgeRequest.json`) and uses the one still free. The kit's key
# table knows, for each Kafka release, who holds each key; `registry.api_key_history` puts the two
# together (the `trunk only` column: an RPC that held the key on trunk but never shipped):

# %%
Table(registry.api_key_history("TxnShareAcknowledge"))

# %% [markdown]
# We review the kit's file with the KIP page's key.
#
# ### Exercise 1 — read the table
# Which RPC holds api key 93 in Kafka 4.4, the newest release? (a string, e.g. `"Produce"`)

# %% kipviz={"exercise": "08-1"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "08-1"}
exercise('08-1').check(answer)

# %%
kit_text = (registry.DEFS_DIR / "TxnShareAcknowledgeRequest.json").read_text()
default_key = registry.api_key(registry.get("TxnShareAcknowledgeRequest"))
as_on_kip_page = kit_text.replace(f'"apiKey": {default_key}', '"apiKey": 93')
r93 = review(as_on_kip_page)
print(r93.summary())
findings(r93)

# %% [markdown]
# A broker dispatches on the api key alone, so a second RPC on 93 could never be served. The
# explanation names the first free key and the candidates the kit has recorded for this RPC. The kit's
# registry gives the same answer when you switch the kit to 93 or to the draft PR's 94. The clash is
# checked against the release the cluster plays (`release=`, default the newest): a 4.3 cluster has
# neither key taken, since GetReplicaLogInfo, which held 93 on trunk in 2025, never shipped.

# %%
for key in (93, 94):
    print(key, "on Kafka 4.4:", registry.configure_api_key("TxnShareAcknowledge", key, release="4.4"))
    print(key, "on Kafka 4.3:", registry.configure_api_key("TxnShareAcknowledge", key, release="4.3"))
registry.configure_api_key("TxnShareAcknowledge", None)      # back to the definition's key
print("default:", registry.api_key(registry.get("TxnShareAcknowledgeRequest")))
print(review(kit_text).summary())

# %% [markdown]
# The report carries everything the thread needs: the verdict, the findings, every version's
# label (*proposed*, KIP-1289), the wire diagram of the version under review, and an example encoded
# with the draft, decoded back, and shown as an annotated hex dump (hover a byte, click a field).

# %%
HTML(r93._repr_html_())

# %% [markdown]
# Kafka's own draft of this schema (apache/kafka PR #22357) can be reviewed the same way when the
# reference files are present (`../shared/kafka`, or `KIPVIZ_KAFKA_REF`). It has the kit's fields in the
# kit's order and leaves out `mapKey`, which changes generated code, not bytes; but it numbers the RPC
# 94, which Kafka 4.4 gave to UnregisterController, so its review fails on the api key alone.

# %%
root = reference_root()
if root is None:
    print("Kafka's draft files (../shared/kafka/proposed) are not here; set KIPVIZ_KAFKA_REF to review them.")
else:
    kafka_draft = review(next((root / "proposed").glob("TxnShareAcknowledgeRequest.*.json")))
    print(kafka_draft.summary())
    print([f.message for f in kafka_draft.errors])
    print("the kit's definition reads the draft's example bytes:", kafka_draft.examples[0].base_reading)

# %% [markdown]
# ## 3. A broken draft: precise errors
#
# Drafts are typed by hand. The review names the file, the field path and the **line**. Here is an
# invented RPC whose `Partitions` field has a `tag` but no `taggedVersions`.
#
# ### Exercise 2 — predict
# On which line of `broken` (counting from 1) will the review point?

# %%
from kipviz.course.exercises import BROKEN_DRAFT as broken  # the draft the check reviews too

for number, line in enumerate(broken.splitlines(), 1):
    print(f"{number:2}  {line}")

# %% kipviz={"exercise": "08-2"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "08-2"}
exercise('08-2').check(answer)

# %% kipviz={"outcome": "08-2"}
bad = review(broken)
print(bad.summary())
HTML(bad._repr_html_())

# %% [markdown]
# A JSON mistake (here a missing comma) is reported with the line and column where the parser
# stopped — usually the line after the missing comma. Once both are fixed the draft loads, and the
# review moves on to compatibility.

# %% kipviz={"outcome": "08-2"}
print(review(broken.replace('"about": "The share group." },', '"about": "The share group." }')).summary())
fixed = review(broken.replace('"tag": 0,', '"tag": 0, "taggedVersions": "0+",'))
print(fixed.summary())

# %% [markdown]
# ## 4. Changing a released RPC: a TxnOffsetCommit v7 draft
#
# Existing versions are a contract: v0–6 are released (v6 in Kafka 4.4, KIP-1319). We write v7 drafts by
# editing the kit's definition and review each against it.

# %%
toc = jsonc.loads((registry.DEFS_DIR / "TxnOffsetCommitRequest.json").read_text())


def draft_v7(change):
    obj = json.loads(json.dumps(toc))
    del obj["kipviz"]                              # a KIP author's file has no kit labels
    obj["validVersions"], obj["latestVersionUnstable"] = "0-7", True
    change(obj)
    return json.dumps(obj, indent=2)


def delete_group_instance_id(obj):
    obj["fields"] = [f for f in obj["fields"] if f["name"] != "GroupInstanceId"]


deleted = review(draft_v7(delete_group_instance_id))

# %% [markdown]
# ### Exercise 3 — predict
# Deleting the field's entry removes it from **every** version that had it. Which versions does the
# finding name? (a string like `"1-4"`)

# %% kipviz={"exercise": "08-3"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "08-3"}
exercise('08-3').check(answer)

# %% kipviz={"outcome": "08-3"}
print(deleted.summary())

# %% [markdown]
# The review proves the point with bytes: the draft's example for v5 is decoded with the released
# definition, which expects a GroupInstanceId that is not there.

# %% kipviz={"outcome": "08-3"}
for ex in deleted.examples:
    print(f"v{ex.version}:", ex.base_reading or "(no released v%d to compare)" % ex.version)


# %% [markdown]
# The fix is a version bound: keep the field for the versions the finding names and leave it out of
# v7. Existing versions keep their bytes, and the diff of v6 and v7 shows the one intended change.

# %% kipviz={"outcome": "08-3"}
def bound_group_instance_id(obj):
    f = next(f for f in obj["fields"] if f["name"] == "GroupInstanceId")
    f["versions"] = f["nullableVersions"] = deleted.errors[0].versions_text     # the versions that had it


bounded = review(draft_v7(bound_group_instance_id))
print(bounded.summary())
SVG(to_svg(diff_diagram(bounded.spec, 6, 7)))


# %% [markdown]
# Adding a field is the mirror image. A regular field declared `"versions": "5+"` lands inside
# released v5 and v6: a peer built from the released definition reads its byte as the start of
# the next field.

# %% kipviz={"outcome": "08-3"}
def add_to_old_versions(obj):
    obj["fields"].insert(4, {"name": "TransactionVersion", "type": "int8", "versions": "5+",
                             "about": "Transaction version of the producer."})


added = review(draft_v7(add_to_old_versions))
display(findings(added))
print(next(e for e in added.examples if e.version == 5).base_reading)

# %% [markdown]
# ## 5. Tags are forever
#
# Tagged fields can be added to existing flexible versions, because readers skip unknown tags. That is
# exactly why a tag number must never mean two things. ZooKeeper is gone in Kafka 4.0, so a draft
# ends ApiVersions' `ZkMigrationReady` (tag 3) at v5 (Kafka 4.4's newest) and gives tag 3 to a new field in v6.
#
# ### Exercise 4 — predict
# Which rule fires? (a rule id from section 1)

# %% kipviz={"exercise": "08-4"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "08-4"}
exercise('08-4').check(answer)

# %% kipviz={"outcome": "08-4"}
from kipviz.course.exercises import tag_reuse_draft  # the draft the check reviews too

draft = tag_reuse_draft()
print([f for f in json.loads(draft)["fields"] if f.get("tag") == 3])   # the two fields that share tag 3
tags = review(draft)
findings(tags)

# %% [markdown]
# ## 6. The report for the review thread
#
# `to_html()` gives one file: styles, SVG pictures and the hex view's few lines of script are inline,
# so it opens offline and can be attached to a mail thread or a pull request. From a shell:
#
# ```bash
# kipviz review TxnShareAcknowledgeRequest.json --html review.html   # exit 1: an error-level finding
# kipviz review draft.json --against TxnOffsetCommitRequest          # or a schema file / directory, or none
# ```
#
# Exit status 0 means no error-level finding, 1 means at least one, 2 means the file could not be read.

# %%
import contextlib
import sys

work = Path(tempfile.mkdtemp())
(work / "TxnShareAcknowledgeRequest.json").write_text(as_on_kip_page)       # the KIP page's api key 93
with contextlib.redirect_stderr(sys.stdout):     # the CLI says "wrote ..." on stderr: shown as plain output here
    status = cli.main(["review", str(work / "TxnShareAcknowledgeRequest.json"), "--html", str(work / "review.html")])
print("exit status", status, "-", (work / "review.html").stat().st_size, "bytes in review.html")

# %% [markdown]
# ## Summary
#
# * `review(file_or_text)` validates a draft and names the file, field path and line of the first error.
# * It compares the draft with the kit's definition of the same name (or Kafka's file, or `against=`):
#   existing versions must keep their bytes; new versions are diffed against the released one before them.
# * Errors: an api key already taken (KIP-1289's 93 and 94 are Kafka 4.4's StreamsGroupTopologyDescriptionUpdate
#   and UnregisterController; `registry.api_key_history` tells the story), a field deleted instead of
#   bounded, a regular field added to an existing version, a reused tag, any other change to an existing
#   version's bytes. Changes to *proposed* versions are warnings.
# * Every review encodes an example with the draft, decodes it back, and lets the released definition read
#   the same bytes — the proof a reviewer can paste.
# * `to_html()` / `kipviz review --html` write one self-contained page for the thread.
#
# Further reading: [KIP-1289](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1289+Support+Transactional+Acknowledgments+for+Share+Groups), [KIP-1319](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1319:+Align+TxnOffsetCommit+API+with+OffsetCommit+API), [KIP-482](https://cwiki.apache.org/confluence/display/KAFKA/KIP-482%3A+The+Kafka+Protocol+should+Support+Optional+Tagged+Fields).
