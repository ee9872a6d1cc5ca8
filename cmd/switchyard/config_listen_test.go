package main

import (
	"strings"
	"testing"
)

func TestDatabaseListenURL(t *testing.T) {
	t.Setenv("SWITCHYARD_SECRET_KEY", strings.Repeat("ab", 32))
	const pooled = "postgres://u:p@pgbouncer:6432/sy?sslmode=disable"
	const direct = "postgres://u:p@pg:5432/sy?sslmode=disable"
	t.Setenv("SWITCHYARD_DATABASE_URL", pooled)
	t.Setenv("SWITCHYARD_DATABASE_LISTEN_URL", "")
	c, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseListenURL != pooled {
		t.Fatalf("unset listen URL: %q, want the main URL", c.DatabaseListenURL)
	}
	t.Setenv("SWITCHYARD_DATABASE_LISTEN_URL", direct)
	if c, err = loadConfig(); err != nil {
		t.Fatal(err)
	}
	if c.DatabaseURL != pooled || c.DatabaseListenURL != direct {
		t.Fatalf("set: %q / %q", c.DatabaseURL, c.DatabaseListenURL)
	}
}
