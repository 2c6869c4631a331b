// Rebuilds the current state of one Kubernetes type from kubebridge's
// JetStream stream (the last message of every object's subject), prints
// it, then prints live events, one line each. See docs/consumers.md.
//
//   NATS_URL=nats://127.0.0.1:4222 node consume.mjs kubebridge.prod.core.v1.configmaps
//
// The argument is the type's subject prefix,
// <prefix>.<cluster>.<group>.<version>.<resource>; KUBEBRIDGE_STREAM names
// the stream (default KUBEBRIDGE).
import { connect, nanos } from "@nats-io/transport-node";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { HTTP } from "cloudevents";

const type = process.argv[2] ?? "kubebridge.default.core.v1.configmaps";
const stream = process.env.KUBEBRIDGE_STREAM ?? "KUBEBRIDGE";
// Term markers are on <prefix>.<cluster>._term: drop group, version, resource.
const termSubject = type.split(".").slice(0, -3).join(".") + "._term";
const T = "io.kubebridge.";

const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
const jsm = await jetstreamManager(nc);

// The CloudEvents NATS binding in binary mode has HTTP's layout: every
// attribute a ce-<name> header, the data the payload. So the SDK's HTTP
// binding decodes it; extensions come out as strings.
function toEvent(m) {
  const headers = {};
  for (const [k, vs] of m.headers ?? []) headers[k.toLowerCase()] = vs[0];
  const body = m.data.length > 0 ? new TextDecoder().decode(m.data) : undefined;
  return HTTP.toEvent({ headers, body });
}

// Fencing. A term is the stream sequence of a term marker, written by a
// bridge when it starts to lead; every event carries its writer's term. A
// message whose term is lower than a term begun before it was stored comes
// from a deposed leader: ignore it. Reading the last message per subject,
// that needs every term marker kept (read below; a few: the stream keeps
// the newest N per subject); live ones arrive with the other messages.
const terms = [];
const fenced = (term, seq) => terms.some((t) => term < t && t < seq);

// The state: NATS subject → { subject: "<namespace>/<name>", uid, rv, object }.
const state = new Map();
let snapshot = null; // the open snapshot: { id, seen: Set of NATS subjects }
let live = false;

function apply(m) {
  const ev = toEvent(m);
  if (ev.type === T + "term") {
    if (!terms.includes(m.seq)) terms.push(m.seq);
    return live && say(`term ${m.seq} holder=${ev.data?.holder}`);
  }
  if (fenced(Number(ev.term ?? 0), m.seq)) {
    return say(`fenced ${ev.type.slice(T.length)} ${ev.subject ?? m.subject} term=${ev.term} seq=${m.seq}`);
  }
  switch (ev.type) {
    case T + "snapshot.begin":
      snapshot = { id: ev.snapshotid, seen: new Set() };
      return;
    case T + "snapshot.end": {
      // An end whose begin was not read ends nothing (the begin was
      // compacted away, or preceded the first message read).
      if (snapshot?.id !== ev.snapshotid) return;
      // Objects that exist but could not be published have no item: they
      // are listed as <namespace>.<name> subject tokens; never sweep them.
      for (const tok of (ev.unpublished ?? "").split(" ").filter(Boolean)) snapshot.seen.add(`${type}.${tok}`);
      let swept = 0;
      for (const [subj, o] of state) {
        if (snapshot.seen.has(subj)) continue;
        state.delete(subj);
        swept++;
        if (live) say(`swept ${o.subject} rv=${o.rv}`);
      }
      snapshot = null;
      return live && say(`snapshot ${ev.snapshotid} complete: ${swept} swept (${state.size} objects)`);
    }
    case T + "object.added": case T + "object.updated": case T + "object.deleted": case T + "snapshot.item":
      break;
    default:
      return; // a type this consumer does not know
  }
  snapshot?.seen.add(m.subject);
  const prev = state.get(m.subject);
  if (ev.type === T + "object.deleted") {
    // A delete is a tombstone: the subject's only message until its TTL.
    // One of another uid than the subject holds (an earlier object of that
    // name) removes nothing.
    if (prev && prev.uid !== ev.uid) return;
    state.delete(m.subject);
  } else {
    // added, updated, snapshot.item: the object's newest state.
    if (prev?.uid === ev.uid && prev.rv === ev.resourceversion) return; // e.g. an item of an unchanged object
    state.set(m.subject, { subject: ev.subject, uid: ev.uid, rv: ev.resourceversion, object: ev.data?.object });
  }
  if (!live) return;
  const extra = [ev.coalesced && `coalesced=${ev.coalesced}`, ev.finalstateunknown && "finalstateunknown",
    ev.truncated && "truncated (fetch it from the API server)"].filter(Boolean).join(" ");
  say(`${ev.type.split(".").pop()} ${ev.subject} rv=${ev.resourceversion} seq=${m.seq} (${state.size} objects)${extra ? " " + extra : ""}`);
}

function say(line) {
  process.stdout.write(line + "\n");
}

function printState() {
  for (const o of [...state.values()].sort((a, b) => a.subject.localeCompare(b.subject))) say(`state ${o.subject} rv=${o.rv}`);
  say(`synced ${state.size} objects`);
  live = true;
}

// A plain pull consumer delivering the last message of every subject of
// the type (objects and snapshot markers) and of the term subject, then
// every new one. Not an ordered consumer: after a gap it would recreate
// itself from the next stream sequence, which is not the last per subject.
// Ephemeral: this state lives in memory and is rebuilt on every start.
const info = await jsm.consumers.add(stream, {
  filter_subjects: [`${type}.*.*`, termSubject],
  deliver_policy: DeliverPolicy.LastPerSubject,
  ack_policy: AckPolicy.None,
  inactive_threshold: nanos(60_000),
});
// After the consumer exists, so that every term marker older than the
// messages it delivers is read.
for (let m, seq = 1; (m = await jsm.streams.getMessage(stream, { seq, next_by_subj: termSubject })); seq = m.seq + 1) {
  terms.push(m.seq);
}
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, async () => {
    await jsm.consumers.delete(stream, info.name).catch(() => {});
    await nc.close();
    process.exit(0);
  });
}
if (info.num_pending === 0) printState();
const messages = await (await jetstream(nc).consumers.get(stream, info.name)).consume();
for await (const m of messages) {
  apply(m);
  // Caught up with the stream: the state is the cluster's as of m.
  if (!live && m.info.pending === 0) printState();
}
