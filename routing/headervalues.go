package routing

import (
	"net/http"
	"strconv"
	"sync"
)

// Header values that are the same for many requests — a tier, a model code,
// a provider's name, a content type, a small count — are kept as one-element
// slices shared by every answer that sends them, so setting a header costs
// no allocation. Nothing modifies a header value in place (Add appends to a
// slice of capacity 1, which copies it), so sharing is safe.

// maxSharedValues bounds the cache (the names of one configuration are far
// fewer); when full it starts over.
const maxSharedValues = 4096

var shared struct {
	mu sync.RWMutex
	m  map[string][]string
}

// sharedValue returns a one-element header value holding v.
func sharedValue(v string) []string {
	shared.mu.RLock()
	s, ok := shared.m[v]
	shared.mu.RUnlock()
	if ok {
		return s
	}
	s = []string{v}
	shared.mu.Lock()
	if shared.m == nil || len(shared.m) >= maxSharedValues {
		shared.m = make(map[string][]string)
	}
	shared.m[v] = s
	shared.mu.Unlock()
	return s
}

// smallCounts are the header values of the counts 0 to 31.
var smallCounts = func() [32][]string {
	var c [32][]string
	for i := range c {
		c[i] = []string{strconv.Itoa(i)}
	}
	return c
}()

// countValue is a one-element header value holding n.
func countValue(n int) []string {
	if n >= 0 && n < len(smallCounts) {
		return smallCounts[n]
	}
	return []string{strconv.Itoa(n)}
}

// setShared sets header key (canonical) to the shared value v.
func setShared(h http.Header, key, v string) { h[key] = sharedValue(v) }
