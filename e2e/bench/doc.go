// Package bench holds the end-to-end benchmark of `make bench`: the real
// gateway binary against the fake vendor, with the fake vendor called
// directly as the baseline in the same run. Its test file only builds with
// the "bench" tag so `go test ./...` never runs it.
package bench
