package informers

import (
	"strings"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// packChunkBytes is the size of the chunks the blocks of an initial list
// are packed into; a block larger than a quarter of it gets its own.
const packChunkBytes = 64 << 10

// packChunkObjects is how many Compact values a chunk of them holds.
const packChunkObjects = 64

// packer packs the Compact objects of an informer's initial list, and
// their blocks (JSON and metadata strings), into shared chunks rather
// than one allocation each.
//
// The initial list comes as a watch-list stream, and each event's copy
// of the object's JSON (RawExtension.UnmarshalJSON) is garbage of the
// same size class as the compact block made from it right after, so
// block and garbage alternate in the same spans: after the list, half of
// each span is free and stays mapped. The Compact values likewise sit
// among the decoded trees' map groups (docs/memory.md, custom
// resources). Packed, the list's objects fill their chunks.
//
// Only the initial list is packed (packing reports whether it is still
// going on): a chunk lives until every object in it has been replaced,
// so packing live changes too could keep many chunks alive for a few
// objects each. Objects that come after the list get their own
// allocations, and the chunks of the list hold at most what the list
// took.
type packer struct {
	// packing reports whether the informer is still on its initial list.
	packing func() bool

	mu      sync.Mutex
	blocks  strings.Builder
	objects []Compact
}

// compact returns a zero Compact: the next of the current chunk, or a
// new one when p is nil (not packing).
func (p *packer) compact() *Compact {
	if p == nil {
		return &Compact{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.objects) == 0 {
		p.objects = make([]Compact, packChunkObjects)
	}
	c := &p.objects[0]
	p.objects = p.objects[1:]
	return c
}

// block returns a string of n bytes that write fills: the next n bytes of
// the current chunk, or an allocation of its own when p is nil (not
// packing) or n is large.
func (p *packer) block(n int, write func(*strings.Builder)) string {
	if p == nil || n > packChunkBytes/4 {
		var b strings.Builder
		b.Grow(n)
		write(&b)
		return b.String()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blocks.Cap()-p.blocks.Len() < n {
		// A new chunk; the strings already handed out keep the old one.
		p.blocks = strings.Builder{}
		p.blocks.Grow(packChunkBytes)
	}
	from := p.blocks.Len()
	write(&p.blocks)
	// The builder only appends within its capacity, so the bytes handed
	// out before stay as they are.
	return p.blocks.String()[from:]
}

// packerOf packs the initial list of inf: until it has synced.
func packerOf(inf cache.SharedIndexInformer) *packer {
	return &packer{packing: packingOf(inf)}
}

// packingOf reports whether inf is on its initial list; a packer made
// before its informer is told this before the informer runs.
func packingOf(inf cache.SharedIndexInformer) func() bool {
	return func() bool { return !inf.HasSynced() }
}

// ifPacking is p while its informer is on its initial list, else nil:
// asked once per object (HasSynced takes the informer's locks).
func (p *packer) ifPacking() *packer {
	if p == nil || p.packing == nil || !p.packing() {
		return nil
	}
	return p
}
