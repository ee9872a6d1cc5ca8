// Package rows holds the values the store takes and hands out: rows (users,
// tokens, versions, probes, job runs), inputs and outcomes of its operations,
// roles and the sentinel errors. It holds no queries, so the console handlers
// can name these values while they reach storage only through the interfaces
// they declare.
package rows
