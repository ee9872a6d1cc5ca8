package store_test

import (
	"database/sql"
	"testing"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"switchyard/migrations"
	_ "switchyard/store" // registers the postgres migration driver
	"switchyard/store/storetest"
)

// Migration 0025 marks the providers onboarded from the sandbox template
// before the mark existed (their notes begin with the words the console
// used to look for), and only those.
func TestMigrationMarksExistingSandboxProviders(t *testing.T) {
	dsn := storetest.NewDatabase(t)
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Migrate(24); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO providers (name, protocol, base_url, notes) VALUES
		('sandbox', 'openai', 'http://127.0.0.1:9090/v1', 'LOCAL SANDBOX: fake vendor with canned replies. Onboarded from template Local sandbox.'),
		('real', 'openai', 'https://api.openai.com/v1', 'Onboarded from template OpenAI.'),
		('mentions', 'openai', 'https://api.openai.com/v1', 'not a LOCAL SANDBOX')`); err != nil {
		t.Fatal(err)
	}
	if err := m.Migrate(25); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	rows, err := db.Query(`SELECT name, sandbox FROM providers`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var sandbox bool
		if err := rows.Scan(&name, &sandbox); err != nil {
			t.Fatal(err)
		}
		got[name] = sandbox
	}
	if want := map[string]bool{"sandbox": true, "real": false, "mentions": false}; len(got) != 3 || got["sandbox"] != want["sandbox"] || got["real"] || got["mentions"] {
		t.Errorf("sandbox marks after 0025 = %v, want %v", got, want)
	}
	if err := m.Migrate(24); err != nil {
		t.Fatalf("down to 24: %v", err)
	}
}
