package main

import (
	"strings"
	"testing"
	"time"
)

func TestQueueSettings(t *testing.T) {
	t.Setenv("SWITCHYARD_SECRET_KEY", strings.Repeat("ab", 32))
	c, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.QueueBounds != [3]int{256, 512, 1024} || c.QueuePoll != 10*time.Millisecond {
		t.Fatalf("defaults: bounds %v, poll %s", c.QueueBounds, c.QueuePoll)
	}
	t.Setenv("SWITCHYARD_QUEUE_INTERACTIVE", "40")
	t.Setenv("SWITCHYARD_QUEUE_BATCH", "0") // no queue: refuse at once
	t.Setenv("SWITCHYARD_QUEUE_POLL", "25ms")
	if c, err = loadConfig(); err != nil {
		t.Fatal(err)
	}
	if c.QueueBounds != [3]int{40, 512, -1} || c.QueuePoll != 25*time.Millisecond {
		t.Fatalf("set: bounds %v, poll %s", c.QueueBounds, c.QueuePoll)
	}
	t.Setenv("SWITCHYARD_QUEUE_NORMAL", "-3")
	t.Setenv("SWITCHYARD_QUEUE_BATCH", "5000000")
	t.Setenv("SWITCHYARD_QUEUE_POLL", "soon")
	_, err = loadConfig()
	for _, want := range []string{"SWITCHYARD_QUEUE_NORMAL must be a non-negative integer", "SWITCHYARD_QUEUE_BATCH must be at most 1000000", "SWITCHYARD_QUEUE_POLL must be a positive duration"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad values: %v; want %q", err, want)
		}
	}
}
