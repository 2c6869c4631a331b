// Rebuilds the current state of one Kubernetes type from kubebridge's
// JetStream stream (the last message of every object's subject), prints
// it, then prints live events, one line each. See docs/consumers.md.
//
//   NATS_URL=nats://127.0.0.1:4222 node consume.mjs kubebridge.prod.core.v1.configmaps
//   NATS_URL=nats://127.0.0.1:4222 node consume.mjs 'kubebridge.*.core.v1.configmaps'
//
// The argument is the type's subject prefix,
// <prefix>.<cluster>.<group>.<version>.<resource>; with * as the cluster it
// reads every cluster of the stream, and prints objects as
// <cluster>:<namespace>/<name>. KUBEBRIDGE_STREAM names the stream
// (default KUBEBRIDGE).
import { connect, nanos } from "@nats-io/transport-node";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { HTTP } from "cloudevents";

const type = process.argv[2] ?? "kubebridge.default.core.v1.configmaps";
const stream = process.env.KUBEBRIDGE_STREAM ?? "KUBEBRIDGE";
// Term markers are on <prefix>.<cluster>._term (drop group, version,
// resource), and a shard's on <prefix>.<cluster>._term.<i>-of-<N>.
const termSubject = type.split(".").slice(0, -3).join(".") + "._term";
const termSubjects = [termSubject, termSubject + ".*"];
const allClusters = type.split(".")[1] === "*";
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
// message whose term is lower than a term of its cluster begun before it
// was stored comes from a deposed leader: ignore it. Terms are per
// cluster: in a stream of several clusters, another cluster's newer term
// says nothing about this one's. Reading the last message per subject,
// that needs every term marker kept (read below; a few: the stream keeps
// the newest N per subject); live ones arrive with the other messages.
//
// A term no marker backs (at or beyond the event's own sequence, or among
// the cluster's markers but none of them) was written by no bridge: the
// event is foreign (published by hand, say). Report it, never apply it.
//
// Shards. A big cluster may be published by N bridge shards, each owning
// some namespaces (docs/design/sharding.md): every event and marker of
// shard i of N carries shard=i/N (absent: 0/1, one bridge). Each shard
// has its own terms and its own snapshots, so everything below that is
// per cluster is per cluster and shard: its "writer".
const terms = new Map(); // writer → sequences of its term markers
const clusterOf = (subject) => subject.split(".")[1];
const writerOf = (subject, ev) => `${clusterOf(subject)} ${ev.shard ?? "0/1"}`;
const termsOf = (cluster) => terms.get(cluster) ?? [];
const addTerm = (cluster, seq) => {
  const ts = termsOf(cluster);
  if (!ts.includes(seq)) terms.set(cluster, [...ts, seq].sort((a, b) => a - b));
};
const fenced = (cluster, term, seq) => termsOf(cluster).some((t) => term < t && t < seq);
const foreign = (cluster, term, seq) => {
  if (term === 0) return false; // from a bridge older than terms
  if (term >= seq) return true;
  const ts = termsOf(cluster);
  // Older than every marker kept: its marker went with the oldest messages.
  return ts.length > 0 && term >= ts[0] && !ts.includes(term);
};
// How an object is named in the output.
const nameOf = (m, ev) => (allClusters ? `${clusterOf(m.subject)}:` : "") + (ev.subject ?? m.subject);

// The state: NATS subject → { subject: "<namespace>/<name>", uid, rv, object,
// writer of its last event }.
const state = new Map();
// The open snapshot of each writer: { id, seen: Set of NATS subjects }.
const snapshots = new Map();
// What each cluster's bridge watches of the type, from its latest begin
// marker (docs/contract.md §1): objects outside it are not in the stream,
// so compare the state with the cluster within it. With rules (§11, §12),
// only objects its match is true for are in the stream, and its ignored
// fields (a JSON array of paths of keys) are removed from every object:
// remove them from a listed object too, and compare without
// metadata.resourceVersion, which lags for changes of ignored fields only.
const scopes = new Map(); // cluster → "namespaces=a,b labels=… fields=… match=… ignoreFields=[…]" or "all"
const scopeOf = (ev) =>
  [ev.scopenamespaces && `namespaces=${ev.scopenamespaces}`, ev.scopelabels && `labels=${ev.scopelabels}`,
    ev.scopefields && `fields=${ev.scopefields}`, ev.scopematch && `match=${ev.scopematch}`,
    ev.scopeignorefields && `ignoreFields=${ev.scopeignorefields}`].filter(Boolean).join(" ") || "all";

// The patch (§14). A type whose rules say patch: true has its updates carry
// "patch", an RFC 6902 JSON Patch that turns the object as the stream last
// published it (the one held) into the new object; with oldObject: false
// the old object is not sent. The state needs only "object", always
// complete; this example checks that the patch says the same.
const unescape = (k) => k.replaceAll("~1", "/").replaceAll("~0", "~");
const pointer = (p) => {
  if (p === "") return [];
  if (!p.startsWith("/")) throw new Error(`pointer ${JSON.stringify(p)} does not start with /`);
  return p.slice(1).split("/").map(unescape);
};
const isContainer = (v) => typeof v === "object" && v !== null;
const indexIn = (arr, k, end) => {
  if (end && k === "-") return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(k) || Number(k) > arr.length - (end ? 0 : 1)) throw new Error(`index ${k} out of range`);
  return Number(k);
};
const valueAt = (root, keys) => keys.reduce((node, k) => {
  if (Array.isArray(node)) return node[indexIn(node, k, false)];
  if (!isContainer(node) || !Object.hasOwn(node, k)) throw new Error(`no field ${k}`);
  return node[k];
}, root);
// canonical is JSON with sorted keys: equal JSON values, equal strings.
const canonical = (v) => JSON.stringify(v, (_, x) =>
  isContainer(x) && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x);
function applyPatch(doc, ops) {
  let root = structuredClone(doc);
  const add = (keys, value) => {
    if (keys.length === 0) return void (root = value);
    const parent = valueAt(root, keys.slice(0, -1)), k = keys.at(-1);
    if (Array.isArray(parent)) parent.splice(indexIn(parent, k, true), 0, value);
    else if (isContainer(parent)) parent[k] = value;
    else throw new Error(`no object at ${k}`);
  };
  const remove = (keys) => {
    if (keys.length === 0) throw new Error("remove of the whole document");
    const parent = valueAt(root, keys.slice(0, -1)), k = keys.at(-1);
    const old = valueAt(parent, [k]);
    if (Array.isArray(parent)) parent.splice(indexIn(parent, k, false), 1);
    else delete parent[k];
    return old;
  };
  for (const op of ops) {
    const path = pointer(op.path);
    switch (op.op) {
      case "add": add(path, structuredClone(op.value)); break;
      case "remove": remove(path); break;
      case "replace": if (path.length) remove(path); add(path, structuredClone(op.value)); break;
      case "move": { const v = remove(pointer(op.from)); add(path, v); break; }
      case "copy": add(path, structuredClone(valueAt(root, pointer(op.from)))); break;
      case "test":
        if (canonical(valueAt(root, path)) !== canonical(op.value)) throw new Error(`test of ${op.path} failed`);
        break;
      default: throw new Error(`unknown op ${op.op}`);
    }
  }
  return root;
}
// patchProblem says what is wrong with the update's patch applied to base:
// undefined when it gives the published object.
function patchProblem(patch, base, object) {
  try {
    const got = applyPatch(base, patch);
    return canonical(got) === canonical(object) ? undefined : "it does not give the published object";
  } catch (e) {
    return `it does not apply: ${e.message}`;
  }
}
let live = false;

function apply(m) {
  const ev = toEvent(m);
  const cluster = clusterOf(m.subject);
  const writer = writerOf(m.subject, ev);
  if (ev.type === T + "term") {
    addTerm(writer, m.seq);
    return live && say(`term ${m.seq} cluster=${cluster} shard=${ev.shard ?? "0/1"} holder=${ev.data?.holder}`);
  }
  const term = Number(ev.term ?? 0);
  if (foreign(writer, term, m.seq)) {
    return say(`foreign ${ev.type.slice(T.length)} ${nameOf(m, ev)} term=${ev.term} seq=${m.seq}`);
  }
  if (fenced(writer, term, m.seq)) {
    return say(`fenced ${ev.type.slice(T.length)} ${nameOf(m, ev)} term=${ev.term} seq=${m.seq}`);
  }
  switch (ev.type) {
    case T + "snapshot.begin": {
      snapshots.set(writer, { id: ev.snapshotid, seen: new Set() });
      const scope = scopeOf(ev);
      if (live && scopes.get(cluster) !== scope) say(`scope ${allClusters ? cluster + ":" : ""}${scope}`);
      scopes.set(cluster, scope);
      return;
    }
    case T + "snapshot.end": {
      // An end whose begin was not read ends nothing (the begin was
      // compacted away, or preceded the first message read).
      const snapshot = snapshots.get(writer);
      if (snapshot?.id !== ev.snapshotid) return;
      // Objects that exist but could not be published have no item: they
      // are listed as <namespace>.<name> subject tokens; never sweep them.
      const typeSubject = m.subject.slice(0, m.subject.indexOf("._snapshot."));
      for (const tok of (ev.unpublished ?? "").split(" ").filter(Boolean)) snapshot.seen.add(`${typeSubject}.${tok}`);
      let swept = 0;
      for (const [subj, o] of state) {
        // A snapshot sweeps only the objects whose last event its own
        // writer (cluster and shard) wrote.
        if (o.writer !== writer || snapshot.seen.has(subj)) continue;
        state.delete(subj);
        swept++;
        if (live) say(`swept ${o.subject} rv=${o.rv}`);
      }
      snapshots.delete(writer);
      return live && say(`snapshot ${ev.snapshotid} complete: ${swept} swept (${state.size} objects)`);
    }
    case T + "object.added": case T + "object.updated": case T + "object.deleted": case T + "snapshot.item":
      break;
    default:
      return; // a type this consumer does not know
  }
  snapshots.get(writer)?.seen.add(m.subject);
  const prev = state.get(m.subject);
  const patch = ev.type === T + "object.updated" ? ev.data?.patch : undefined;
  if (Array.isArray(patch)) {
    // Its base is the object held, the one the subject's last message
    // published; or the oldObject sent with it.
    const base = prev?.uid === ev.uid ? prev.object : ev.data?.oldObject;
    const problem = base === undefined ? undefined : patchProblem(patch, base, ev.data?.object);
    if (problem) say(`patch-mismatch ${nameOf(m, ev)} rv=${ev.resourceversion} seq=${m.seq}: ${problem}`);
  }
  if (ev.type === T + "object.deleted") {
    // A delete is a tombstone: the subject's only message until its TTL.
    // One of another uid than the subject holds (an earlier object of that
    // name) removes nothing.
    if (prev && prev.uid !== ev.uid) return;
    state.delete(m.subject);
  } else {
    // added, updated, snapshot.item: the object's newest state.
    if (prev?.uid === ev.uid && prev.rv === ev.resourceversion) {
      prev.writer = writer; // e.g. an item of an unchanged object, after a resize
      // The same version, projected anew if the type's ignored fields
      // changed: the base of the object's next patch.
      if (ev.data?.object) prev.object = ev.data.object;
      return;
    }
    state.set(m.subject, { subject: nameOf(m, ev), uid: ev.uid, rv: ev.resourceversion, object: ev.data?.object, writer });
  }
  if (!live) return;
  const extra = [ev.coalesced && `coalesced=${ev.coalesced}`, Array.isArray(patch) && `patch=${patch.length}`, ev.finalstateunknown && "finalstateunknown",
    ev.truncated && "truncated (fetch it from the API server)"].filter(Boolean).join(" ");
  say(`${ev.type.split(".").pop()} ${nameOf(m, ev)} rv=${ev.resourceversion} seq=${m.seq} (${state.size} objects)${extra ? " " + extra : ""}`);
}

function say(line) {
  process.stdout.write(line + "\n");
}

function printState() {
  for (const o of [...state.values()].sort((a, b) => a.subject.localeCompare(b.subject))) say(`state ${o.subject} rv=${o.rv}`);
  for (const [cluster, scope] of [...scopes].sort()) say(`scope ${allClusters ? cluster + ":" : ""}${scope}`);
  say(`synced ${state.size} objects`);
  live = true;
}

// A plain pull consumer delivering the last message of every subject of
// the type (objects and every shard's snapshot markers) and of the term
// subjects, then
// every new one. Not an ordered consumer: after a gap it would recreate
// itself from the next stream sequence, which is not the last per subject.
// Ephemeral: this state lives in memory and is rebuilt on every start.
const info = await jsm.consumers.add(stream, {
  filter_subjects: [`${type}.>`, ...termSubjects],
  deliver_policy: DeliverPolicy.LastPerSubject,
  ack_policy: AckPolicy.None,
  inactive_threshold: nanos(60_000),
  mem_storage: true,
});
// After the consumer exists, so that every term marker older than the
// messages it delivers is read.
for (const subject of termSubjects) {
  for (let m, seq = 1; (m = await jsm.streams.getMessage(stream, { seq, next_by_subj: subject })); seq = m.seq + 1) {
    // The shard is the subject's last token, <i>-of-<N>, when it has one.
    const shard = /^(\d+)-of-(\d+)$/.exec(m.subject.split(".").pop());
    addTerm(`${clusterOf(m.subject)} ${shard ? `${shard[1]}/${shard[2]}` : "0/1"}`, m.seq);
  }
}
// The consumer takes no acknowledgement, so what the server wrote into a
// lost link never comes again: on every reconnect, and on a delivery that
// does not follow the last one (the consumer counts what it sent), it is
// created again from the stream sequence after the last message applied,
// as nats.js's ordered consumer does (docs/consumers.md). Its state is held
// in memory: a server restart loses it, and the reconnect replaces it.
let consumer = info.name;
let messages;
let lost = false;
(async () => {
  for await (const s of nc.status()) {
    if (s.type === "reconnect") {
      lost = true;
      messages?.stop();
    }
  }
})();
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, async () => {
    await jsm.consumers.delete(stream, consumer).catch(() => {});
    await nc.close();
    process.exit(0);
  });
}
if (info.num_pending === 0) printState();
for (let lastSeq = 0, delivered = 0; ; ) {
  messages = await (await jetstream(nc).consumers.get(stream, consumer)).consume();
  if (lost) messages.stop(); // a reconnect while it was being made
  for await (const m of messages) {
    if (m.info.deliverySequence !== delivered + 1) {
      lost = true;
      messages.stop();
      break;
    }
    delivered = m.info.deliverySequence;
    apply(m);
    lastSeq = m.seq;
    // Caught up with the stream: the state is the cluster's as of m.
    if (!live && m.info.pending === 0) printState();
  }
  if (!lost) break; // the connection closed
  lost = false;
  say(`consumer lost: reading again from seq ${lastSeq + 1}`);
  await jsm.consumers.delete(stream, consumer).catch(() => {});
  // Before anything was read, from the start again.
  const again = await jsm.consumers.add(stream, {
    filter_subjects: [`${type}.>`, ...termSubjects],
    ...(lastSeq > 0 ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: lastSeq + 1 } : { deliver_policy: DeliverPolicy.LastPerSubject }),
    ack_policy: AckPolicy.None,
    inactive_threshold: nanos(60_000),
    mem_storage: true,
  });
  consumer = again.name;
  delivered = 0;
  if (!live && again.num_pending === 0) printState();
}
