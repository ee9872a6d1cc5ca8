// Package migrations holds the append-only SQL migrations, embedded in the
// binary and applied at start with golang-migrate.
package migrations

import "embed"

// FS holds every NNNN_name.up.sql file.
//
//go:embed *.sql
var FS embed.FS
