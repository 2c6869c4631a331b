// Package consume reads a kubebridge stream back: the events it holds, and
// the live state of the objects it describes. It is the public consumer
// side of the contract in the kubebridge README (subjects, CloudEvents
// types and extensions, snapshot framing, mark-and-sweep, terms).
//
// # Connecting
//
// A Client reads one cluster's subjects of one stream. The defaults are
// the bridge's: stream KUBEBRIDGE, subject prefix kubebridge, cluster
// default.
//
//	nc, _ := nats.Connect(url)
//	js, _ := jetstream.New(nc)
//	client, err := consume.New(js, consume.WithCluster("prod"))
//
// A Filter names a type as kubectl does, without a version
// ("configmaps", "deployments.apps", "widgets.example.com"), and
// optionally a namespace and a name.
//
// # Events
//
// Client.Events iterates over the events of some filters in stream order,
// each with its CloudEvent attributes, its verb, its stream sequence and
// its object and old object decoded: into their client-go types
// (*corev1.ConfigMap, *appsv1.Deployment, …) when the scheme knows the
// kind, into *unstructured.Unstructured otherwise.
//
//	for ev, err := range client.Events(ctx, []consume.Filter{{Resource: "deployments.apps"}}, consume.DeliverNew()) {
//		if err != nil {
//			return err // a *DecodeError or a Foreign *Violation may be skipped instead
//		}
//		d := ev.Object.(*appsv1.Deployment)
//		…
//	}
//
// The consumer is ephemeral by default; Durable makes it durable, with
// every event acknowledged after the loop body is done with it (at least
// once). A message that is not an event of the contract is a *DecodeError,
// and an event whose term no term marker backs (published by something
// other than a bridge of the cluster) a *Violation of kind Foreign: never
// applied, never silently dropped.
//
// A type the bridge publishes with rules (contract 1.3, §11 to §14) has
// its ignored fields removed from every object; an update may carry its
// RFC 6902 JSON Patch (Event.Patch) and leave out the old object
// (OldObject nil). Object is always complete, and is all a State needs. A
// begin marker's Scope says the type's match and ignored fields.
//
// # State
//
// Client.NewState rebuilds the current objects of one or more types and
// keeps them current: State.Run bootstraps, either by a full replay from
// the latest complete snapshot with mark-and-sweep (FullReplay, the
// default) or from the last message per subject (LastPerSubject: fewer
// messages, but see its caveat), then follows new messages. Each type has a client-go cache.Indexer holding
// the typed objects, so client-go listers work on it, and takes
// cache.ResourceEventHandlers as a shared informer does.
//
//	st, _ := client.NewState([]consume.Filter{{Resource: "configmaps"}})
//	_ = st.AddEventHandler("configmaps", cache.ResourceEventHandlerFuncs{…})
//	go st.Run(ctx)
//	_ = st.WaitForSync(ctx)
//	cm, err := listersv1.NewConfigMapLister(st.Indexer("configmaps")).ConfigMaps("web").Get("app")
//
// # Contract checks and terms
//
// While it applies events a State checks the contract and reports what
// breaks it, through Hooks.OnViolation and Stats, without stopping
// (StopOnViolation makes a breach fatal): a resourceVersion that goes back
// for an object (uid), an event of a uid after its delete at no newer
// resourceVersion (a newer one is the object entering the type's match
// again, contract §12), an end marker
// without its begin, an event id applied twice, an undecodable message.
// Events that break the contract are not applied. A delete of an object
// not held is fine: it was swept, or its name holds a newer object. A
// delete of a newer object than the one a name holds removes the one held
// (as a DeletedFinalStateUnknown): its own delete was rolled up by a later
// delete at that name before this reader got to it.
//
// Every event carries the term it was written in: the stream sequence of
// its bridge's term marker (subject <prefix>.<cluster>._term). An event
// whose term is lower than one already seen in stream order comes from a
// deposed leader and is ignored (counted, Hooks.OnFenced); that is fencing
// at work, not a violation. Events of bridges older than terms count as
// term 0.
//
// # Building on it
//
// An Applier is a State without NATS: it applies decoded events, in
// stream order, to the indexers and calls the handlers, with the same
// checks. Informers and tools that read the stream their own way can feed
// it.
//
// # Informers
//
// A ListWatch is a client-go cache.ListerWatcher of one type backed by the
// stream, so that controller code written for the API server runs on NATS
// unchanged: NewSharedIndexInformer returns a cache.SharedIndexInformer
// with listers, AddEventHandler, WaitForCacheSync and indexers
// (LabelIndexFunc indexes by a label); NewFilteredSharedIndexInformer
// takes a label selector, or a field selector on metadata.name and
// metadata.namespace, as client-go's filtered informers do.
//
//	inf, _ := client.NewSharedIndexInformer(consume.Filter{Resource: "configmaps", Namespace: "web"}, &corev1.ConfigMap{}, 0,
//		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, "app": consume.LabelIndexFunc("app")})
//	go inf.RunWithContext(ctx)
//	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
//	cm, err := listersv1.NewConfigMapLister(inf.GetIndexer()).ConfigMaps("web").Get("app")
//
// Objects keep the API server's resourceVersions; a list's
// resourceVersion is the stream sequence it is consistent at. The
// ListWatch keeps its own resume position, since a reflector resumes from
// the resourceVersion of the last object it received (see ListWatch).
// examples/controller runs one sample-controller on either source.
//
// What the handlers see, compared with an informer on the API server:
// per object (uid), take the states the handlers take it through (an add
// or update: the object at its resourceVersion; a delete: gone; an update
// to the same resourceVersion is no new state). The informer over NATS
// goes through the API server informer's states with some left out, and
// ends in the same state. That is what "modulo coalescing" means here. A
// state is left out when
//
//   - the bridge coalesced it: changes waited while publishing was behind
//     and were merged (the coalesced extension says how many);
//   - the stream no longer held it when the informer read it: the
//     informer was behind the object by more than the stream keeps per
//     subject (BRIDGE_STREAM_MAX_MSGS_PER_SUBJECT), or the object's delete
//     rolled its subject up;
//   - the informer listed again meanwhile, which shows each object's
//     current state only, as on the API server.
//
// (An object whose snapshot item compaction removed is not swept when its
// newer messages are still to be read; see ListWatch.) So an object may
// be seen in fewer states, or not at all if it came and went while left
// out; its delete may carry its last known state rather
// than the deleting one (a delete the bridge inferred, a sweep). Under a
// label selector an object that stops matching is deleted and one that
// starts matching is added, as on the API server; whether it is seen to
// leave and come back depends on the states left out. Client-go itself
// adds to this on both sources: after a relist it reports an unchanged
// object as an update to the same resourceVersion, and a name now held by
// another object as an update across uids. With a stream that keeps
// every message, an informer that does not list again sees exactly the
// states a State reading the same stream sees. TestInformerSideBySide
// checks all of this against a real kube-apiserver.
//
// One case waits for a snapshot: an informer behind an object whose name
// is deleted, created again and deleted again reads only the last delete
// (it rolled the subject up), which is of another uid than the one held
// and so changes nothing (see Applier); the next snapshot's end marker
// sweeps the object held.
//
// A ListWatch serves client-go's watch-list streaming (its reflector's
// default), so that the informer's cache holds the ListWatch's objects
// rather than copies made from a list. It does not serve bookmarks other
// than the one that ends the initial events, paging (a list comes whole)
// or field selectors on other fields.
//
// # Dependencies
//
// This package is the consumer's side of pkg/ (docs/architecture.md). Of
// this module it imports pkg/contract, pkg/cenats and pkg/streamread only:
// never the producer's side (pkg/informers, pkg/encode, pkg/sink) and
// nothing under internal/, so that a consumer compiles no part of the
// bridge. Its tests use the test helpers under internal/.
package consume
