package informers

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// loggingRelists wraps tweak, which client-go applies to every list and
// watch request of the type, so that a relist is logged at V(2) with the
// resourceVersion it lists from: the last one the informer's watch
// delivered. A relist shows only each object's newest version, so the
// versions made after that one and changed again before the list are
// never seen. client-go's reflector logs when a list ends ("Caches
// populated") but not where it resumes from, and an operator reading why
// a version was not published, or the robustness test accounting for
// one, needs both.
//
// A request is a list when it asks for no bookmarks (the reflector asks
// for them on every watch; the API serves them only to watches), or when
// it is a watch that sends the initial events (client-go's watch-list).
// The first list of an informer, from resourceVersion "" or "0", and the
// later pages of a list are not relists from a position.
func (s *Source) loggingRelists(tweak func(*metav1.ListOptions)) func(*metav1.ListOptions) {
	return func(o *metav1.ListOptions) {
		lists := !o.AllowWatchBookmarks || (o.SendInitialEvents != nil && *o.SendInitialEvents)
		if lists && o.Continue == "" && o.ResourceVersion != "" && o.ResourceVersion != "0" {
			s.logger.V(2).Info("Relisting: the watch ended; the list shows each object's newest version, not those made since this resourceVersion", "fromResourceVersion", o.ResourceVersion)
		}
		tweak(o)
	}
}
