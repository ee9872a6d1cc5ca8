package storetest

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The local cluster starts, serves keys on every master, agrees with our
// slot function, and its processes are gone after Stop.
func TestLocalCluster(t *testing.T) {
	c := NewCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb := c.Client()
	defer rdb.Close()
	keys := []string{"a", "b", "{c1}:x", "p:{c42}:rpm:t", "p:{}:x", "p:{keypool}:state", "{", "}{x}", "foo{bar}{zap}", "ünï"}
	for _, k := range keys {
		want, err := rdb.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := Slot(k); int64(got) != want {
			t.Errorf("Slot(%q) = %d, CLUSTER KEYSLOT says %d", k, got, want)
		}
	}
	// A cross-slot script is refused by the cluster, as GuardSlots predicts.
	err := rdb.Eval(ctx, "return 1", []string{"a", "b"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Errorf("cross-slot EVAL: %v, want CROSSSLOT", err)
	}
	if OneSlot([]string{"a", "b"}) == nil || OneSlot([]string{"x:{t}:1", "y:{t}:2"}) != nil {
		t.Error("OneSlot disagrees")
	}
	reps, err := c.Replicas(ctx)
	if err != nil || len(reps) != 3 {
		t.Fatalf("replicas %v, %v", reps, err)
	}
	c.Stop()
	for _, a := range c.Addrs {
		if err := waitPing(a, 100*time.Millisecond); err == nil {
			t.Errorf("%s still answers after Stop", a)
		}
	}
}

func TestCommandKeys(t *testing.T) {
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"evalsha", "abc", 2, "k1", "k2", "arg"}, "k1 k2"},
		{[]any{"eval", "return 1", 0, "arg"}, ""},
		{[]any{"mget", "a", "b"}, "a b"},
		{[]any{"mset", "a", 1, "b", 2}, "a b"},
		{[]any{"hset", "h", "f", "v"}, "h"},
		{[]any{"ping"}, ""},
		{[]any{"scan", 0, "match", "x*"}, ""},
	} {
		if got := strings.Join(CommandKeys(tc.args), " "); got != tc.want {
			t.Errorf("%v: keys %q, want %q", tc.args, got, tc.want)
		}
	}
}
