package main

import (
	"strings"
	"testing"
	"time"
)

func TestProbeConcurrencySetting(t *testing.T) {
	t.Setenv("SWITCHYARD_SECRET_KEY", strings.Repeat("ab", 32))
	c, err := loadConfig()
	if err != nil || c.ProbeConcurrency != 8 {
		t.Fatalf("default: %d, %v", c.ProbeConcurrency, err)
	}
	t.Setenv("SWITCHYARD_PROBE_CONCURRENCY", "3")
	if c, err = loadConfig(); err != nil || c.ProbeConcurrency != 3 {
		t.Fatalf("set: %d, %v", c.ProbeConcurrency, err)
	}
	for _, bad := range []string{"0", "-2", "many", "5000"} {
		t.Setenv("SWITCHYARD_PROBE_CONCURRENCY", bad)
		if _, err := loadConfig(); err == nil || !strings.Contains(err.Error(), "SWITCHYARD_PROBE_CONCURRENCY must be a whole number between 1 and 1024") {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

func TestWorkerLeaseTTLSetting(t *testing.T) {
	t.Setenv("SWITCHYARD_SECRET_KEY", strings.Repeat("ab", 32))
	if c, err := loadConfig(); err != nil || c.LeaseTTL != 30*time.Second {
		t.Fatalf("default: %s, %v", c.LeaseTTL, err)
	}
	t.Setenv("SWITCHYARD_WORKER_LEASE_TTL", "5s")
	if c, err := loadConfig(); err != nil || c.LeaseTTL != 5*time.Second {
		t.Fatalf("set: %s, %v", c.LeaseTTL, err)
	}
	t.Setenv("SWITCHYARD_WORKER_LEASE_TTL", "10ms")
	if _, err := loadConfig(); err == nil || !strings.Contains(err.Error(), "SWITCHYARD_WORKER_LEASE_TTL") {
		t.Fatalf("10ms accepted: %v", err)
	}
}
