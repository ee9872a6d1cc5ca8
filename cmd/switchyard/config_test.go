package main

import (
	"strings"
	"testing"
	"time"

	"switchyard/web/guard"
)

func TestSlowClientSettings(t *testing.T) {
	t.Setenv("SWITCHYARD_SECRET_KEY", strings.Repeat("ab", 32))
	c, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if want := (guard.Limits{ReadTimeout: 10 * time.Second, ConnsPerIP: 2048, PendingPerIP: 64,
		MaxConns: int(defaultMaxConns()), IdlePerIP: DefaultIdlePerIP, IdleTimeout: guard.DefaultIdleTimeout}); c.Clients() != want {
		t.Fatalf("defaults: %+v, want %+v", c.Clients(), want)
	}

	t.Setenv("SWITCHYARD_READ_TIMEOUT", "3s")
	t.Setenv("SWITCHYARD_MAX_CONNS_PER_IP", "0")
	t.Setenv("SWITCHYARD_MAX_PENDING_PER_IP", "5")
	t.Setenv("SWITCHYARD_MAX_CONNS", "1000")
	t.Setenv("SWITCHYARD_MAX_IDLE_CONNS", "600")
	t.Setenv("SWITCHYARD_MAX_IDLE_CONNS_PER_IP", "8")
	t.Setenv("SWITCHYARD_IDLE_TIMEOUT", "5s")
	if c, err = loadConfig(); err != nil {
		t.Fatal(err)
	}
	if want := (guard.Limits{ReadTimeout: 3 * time.Second, ConnsPerIP: 0, PendingPerIP: 5, MaxConns: 1000, MaxIdleConns: 600, IdlePerIP: 8, IdleTimeout: 5 * time.Second}); c.Clients() != want {
		t.Fatalf("set: %+v, want %+v", c.Clients(), want)
	}

	t.Setenv("SWITCHYARD_READ_TIMEOUT", "0s")
	t.Setenv("SWITCHYARD_MAX_PENDING_PER_IP", "-1")
	_, err = loadConfig()
	if err == nil || !strings.Contains(err.Error(), "SWITCHYARD_READ_TIMEOUT must be a positive duration") || !strings.Contains(err.Error(), "SWITCHYARD_MAX_PENDING_PER_IP must be a non-negative integer") {
		t.Fatalf("bad values: %v", err)
	}
}
