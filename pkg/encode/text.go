package encode

import (
	"strings"
	"time"

	"github.com/kubebridge/kubebridge/pkg/informers"
)

// objectText holds the header values an object event builds rather than
// takes from its object, all slices of one string: one allocation per
// event instead of one per value.
type objectText struct {
	// msgID is the Nats-Msg-Id: the cluster, a slash, and id.
	msgID, id string
	source    string
	// subject is the subject attribute: namespace/name, or the name.
	subject string
	time    string
}

// objectText builds c's id, Nats-Msg-Id, source, subject attribute and
// time.
func (e *Encoder) objectText(c informers.Change, ns, name, uid, rv, term string) objectText {
	r, cluster := c.Resource, e.Subjects.Cluster
	g := r.GVR
	var b strings.Builder
	b.Grow(2*len(cluster) + 2*len(g.Resource) + 2*len(g.Version) + 2*len(g.Group) + len(uid) + len(rv) +
		len(c.SnapshotID) + len(term) + 2*len(ns) + len(name) + 96)
	b.WriteString(cluster)
	b.WriteByte('/')
	idStart := b.Len()
	// The resource is part of the id: one object served under two
	// resources (HPA v1 and v2, a CRD at two versions) is two event
	// streams, and JetStream must not drop one as a duplicate of the other.
	writeResourceName(&b, r)
	for _, s := range [...]string{uid, rv, string(c.Verb)} {
		b.WriteByte('/')
		b.WriteString(s)
	}
	if c.Verb == informers.SnapshotItem {
		b.WriteByte('/')
		b.WriteString(c.SnapshotID)
	} else if term != "" {
		// A change a deposed leader stored late, which consumers ignore,
		// must not make JetStream drop the same change from the new
		// leader as a duplicate: the term is part of the id. (A snapshot
		// id is unique to its term already.)
		b.WriteByte('/')
		b.WriteString(term)
	}
	idEnd := b.Len()
	writeSource(&b, cluster, r, ns)
	sourceEnd := b.Len()
	if ns != "" {
		b.WriteString(ns)
		b.WriteByte('/')
		b.WriteString(name)
	}
	subjectEnd := b.Len()
	var scratch [len(time.RFC3339Nano) + 8]byte
	b.Write(c.ObservedAt.UTC().AppendFormat(scratch[:0], time.RFC3339Nano))

	s := b.String()
	t := objectText{msgID: s[:idEnd], id: s[idStart:idEnd], source: s[idEnd:sourceEnd], subject: s[sourceEnd:subjectEnd], time: s[subjectEnd:]}
	if ns == "" {
		t.subject = name
	}
	return t
}

// writeResourceName writes what r.String() returns.
func writeResourceName(b *strings.Builder, r *informers.Resource) {
	b.WriteString(r.GVR.Resource)
	b.WriteByte('.')
	b.WriteString(r.GVR.Version)
	if r.GVR.Group != "" {
		b.WriteByte('.')
		b.WriteString(r.GVR.Group)
	}
}

// source is the cluster plus the API path of the collection the object is
// listed from, e.g. k8s://prod/apis/apps/v1/namespaces/web/deployments.
func source(cluster string, r *informers.Resource, namespace string) string {
	var b strings.Builder
	writeSource(&b, cluster, r, namespace)
	return b.String()
}

func writeSource(b *strings.Builder, cluster string, r *informers.Resource, namespace string) {
	g := r.GVR
	b.WriteString("k8s://")
	b.WriteString(cluster)
	if g.Group == "" {
		b.WriteString("/api/")
	} else {
		b.WriteString("/apis/")
		b.WriteString(g.Group)
		b.WriteByte('/')
	}
	b.WriteString(g.Version)
	if namespace != "" {
		b.WriteString("/namespaces/")
		b.WriteString(namespace)
	}
	b.WriteByte('/')
	b.WriteString(g.Resource)
}
