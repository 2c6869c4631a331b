package consume

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kubebridge/kubebridge/pkg/contract"
)

// sweepGuard keeps a reader that is behind the stream from sweeping
// objects that exist. An end marker sweeps every object whose item the
// reader did not see since the begin marker; but the stream keeps a
// limited number of messages per object, so a reader that comes to a
// snapshot late may find the item of an object that changed since
// removed, and would take the object for deleted, and then see it come
// back with its newer messages: a delete and an add that never happened.
// So before a sweep the guard reads the last message of the object's
// subject: when it is newer than the end marker and of the same uid, the
// object is kept, and its newer messages, read later, carry it on (to its
// delete, if that is what the last message is).
type sweepGuard struct {
	c *Client
	// ctx is the context of the ListWatch's relist that made the guard,
	// for its logger and values; see keep for why not its cancellation.
	ctx    context.Context
	stream jetstream.Stream
}

// guardTimeout bounds one read of an object's last message.
const guardTimeout = 30 * time.Second

// keep reports whether the object at key must survive the sweep of end.
// When the stream cannot be read it sweeps: that is the contract's rule,
// and the object comes back with its newer messages if it exists.
func (g *sweepGuard) keep(key string, obj any, end *Event) bool {
	subject := g.c.subjects.ObjectOfKey(typeOf(end.Resource), key)
	// Not the watch's context: whether an object is swept must not depend
	// on when the watch is stopped.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(g.ctx), guardTimeout)
	defer cancel()
	last, err := g.lastMsg(ctx, subject)
	if err != nil {
		if !errors.Is(err, jetstream.ErrMsgNotFound) {
			klog.FromContext(ctx).V(2).Info("Cannot read an object's last message; sweeping it", "subject", subject, "err", err)
		}
		return false
	}
	return last.Sequence > end.Seq && types.UID(last.Header.Get(contract.Header(contract.ExtUID))) == uidOf(obj)
}

func (g *sweepGuard) lastMsg(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	if g.stream == nil {
		s, err := g.c.js.Stream(ctx, g.c.stream)
		if err != nil {
			return nil, err
		}
		g.stream = s
	}
	return g.stream.GetLastMsgForSubject(ctx, subject)
}
