package informers

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// bigWidget is fullWidget with about 2.5 KB of data, as the benchmark's
// Widgets, and a name of its own.
func bigWidget(i int) *unstructured.Unstructured {
	u := fullWidget()
	u.SetName(fmt.Sprintf("w%d", i))
	u.Object["data"] = map[string]any{"k": strings.Repeat(string(rune('a'+i%26)), 2500)}
	return u
}

// While the initial list is on, objects are packed: their blocks share
// chunks, several Compact values one allocation, and each object reads
// exactly as it does unpacked, across chunk boundaries. After the list,
// each has allocations of its own.
func TestPackerPacksTheInitialListOnly(t *testing.T) {
	var listing atomic.Bool
	listing.Store(true)
	p := &packer{packing: listing.Load}
	transform := compacting(nil, widgets, p)
	const n = 100 // about four chunks of blocks, two of Compact values
	var packed []*Compact
	for i := range n {
		out, err := transform(bigWidget(i))
		if err != nil {
			t.Fatal(err)
		}
		packed = append(packed, out.(*Compact))
	}
	for i, c := range packed {
		want, err := NewCompact(bigWidget(i))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c, want) {
			t.Fatalf("object %d packed reads\n%+v\nwant\n%+v", i, c, want)
		}
	}
	blockChunks, objectChunks := chunksOf(packed)
	if blockChunks > n/20 || objectChunks != (n+packChunkObjects-1)/packChunkObjects {
		t.Errorf("%d objects packed in %d chunks of blocks and %d of Compact values; want at most %d and %d", n, blockChunks, objectChunks, n/20, (n+packChunkObjects-1)/packChunkObjects)
	}

	// Each object packed saves its block's allocation and its Compact
	// value's, but for the chunks' share.
	src := bigWidget(0)
	allocs := func() float64 {
		return testing.AllocsPerRun(200, func() {
			if _, err := transform(src.DeepCopy()); err != nil {
				t.Fatal(err)
			}
		})
	}
	whilePacking := allocs()
	listing.Store(false)
	after := allocs()
	if after-whilePacking < 1.9 {
		t.Errorf("%.2f allocations per object while packing, %.2f after the list; want about 2 fewer while packing", whilePacking, after)
	}
}

// chunksOf counts the distinct allocations the objects' blocks and
// Compact values are in: a block or value within packChunkBytes (or a
// chunk of Compact values) of the first of a run counts as the same.
func chunksOf(cs []*Compact) (blocks, objects int) {
	var lastBlock, lastObject uintptr
	for _, c := range cs {
		b := uintptr(unsafe.Pointer(unsafe.StringData(c.raw)))
		if lastBlock == 0 || b < lastBlock || b-lastBlock >= packChunkBytes {
			blocks++
			lastBlock = b
		}
		o := uintptr(unsafe.Pointer(c))
		if lastObject == 0 || o < lastObject || o-lastObject >= packChunkObjects*unsafe.Sizeof(Compact{}) {
			objects++
			lastObject = o
		}
	}
	return blocks, objects
}

// Informers of one type run their transforms concurrently; a packer may
// be shared by them (the race detector watches).
func TestPackerIsSafeForConcurrentUse(t *testing.T) {
	p := &packer{packing: func() bool { return true }}
	transform := compacting(nil, widgets, p)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				u := fullWidget()
				u.SetName(fmt.Sprintf("g%d-%d", g, i))
				out, err := transform(u)
				if err != nil {
					t.Error(err)
					return
				}
				if c := out.(*Compact); c.Name != u.GetName() || c.RawJSON() == "" {
					t.Errorf("packed %s as %s", u.GetName(), c.Name)
				}
			}
		})
	}
	wg.Wait()
}
