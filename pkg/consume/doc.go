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
//			return err // a *DecodeError may be skipped instead
//		}
//		d := ev.Object.(*appsv1.Deployment)
//		…
//	}
//
// The consumer is ephemeral by default; Durable makes it durable, with
// every event acknowledged after the loop body is done with it (at least
// once). A message that is not an event of the contract is a *DecodeError,
// never silently dropped.
//
// # State
//
// Client.NewState rebuilds the current objects of one or more types and
// keeps them current: State.Run bootstraps, either from the last message
// per subject (LastPerSubject, the default: fast) or by a full replay
// from the latest complete snapshot with mark-and-sweep (FullReplay), then
// follows new messages. Each type has a client-go cache.Indexer holding
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
// for an object (uid), an event of a uid after its delete, an end marker
// without its begin, an event id applied twice, an undecodable message.
// Events that break the contract are not applied. A delete of an object
// not held is fine: it was swept, or its name holds a newer object.
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
package consume
