package answercache

import (
	"context"
	"crypto/sha256"
	"strconv"
	"testing"
	"time"

	"switchyard/store/storetest"
)

func k(i int) [32]byte { return sha256.Sum256([]byte(strconv.Itoa(i))) }

func TestPutGetBoundAndTTL(t *testing.T) {
	t.Parallel()
	rdb, prefix := storetest.TestRedis(t, "answercache")
	c := New(rdb, prefix)
	ctx := context.Background()
	if _, _, ok, err := c.Get(ctx, 1, k(0), time.Minute); ok || err != nil {
		t.Fatalf("empty cache answered: %v %v", ok, err)
	}
	for i := range 5 {
		if err := c.Put(ctx, 1, k(i), []byte(`{"answer":`+strconv.Itoa(i)+`}`), time.Minute, 3); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // distinct store times
	}
	if n, _ := c.Size(ctx, 1); n != 3 {
		t.Fatalf("the group holds %d answers, bound 3", n)
	}
	for i, want := range []bool{false, false, true, true, true} { // the oldest went first
		body, age, ok, err := c.Get(ctx, 1, k(i), time.Minute)
		if err != nil || ok != want {
			t.Fatalf("answer %d: kept %v, want %v (%v)", i, ok, want, err)
		}
		if ok && (string(body) != `{"answer":`+strconv.Itoa(i)+`}` || age < 0 || age > 5*time.Second) {
			t.Fatalf("answer %d: %s age %v", i, body, age)
		}
	}
	// Another group is another cache.
	if _, _, ok, _ := c.Get(ctx, 2, k(4), time.Minute); ok {
		t.Fatal("group 2 answered group 1's request")
	}
	// Older than the TTL asked for: not served.
	time.Sleep(30 * time.Millisecond)
	if _, _, ok, _ := c.Get(ctx, 1, k(4), 20*time.Millisecond); ok {
		t.Fatal("an answer older than the TTL was served")
	}
}
