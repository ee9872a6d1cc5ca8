// Package calllog records one row per data-plane request and answers the
// console's questions about them.
//
// The request path hands a Record to a Writer, which never blocks: records are
// queued in a bounded channel, batched by one background goroutine, and
// copied into PostgreSQL by WriterOptions.Workers others (default 2), so one
// batch's rows are copied while another's commit is flushed. Each batch is
// streamed into call_logs with COPY and, in the same transaction, the daily
// cost_rollups, hourly call_stats and the other roll-ups are incremented by
// one statement from the rows the COPY stored. A row already stored, keyed
// by (at, request_id), makes the COPY fail; the batch is then stored without
// the rows already present. Replaying a batch is therefore always safe:
// duplicates are neither stored nor counted twice.
//
// When PostgreSQL cannot take a batch, or the queue is full, records go to an
// append-only JSON-lines spill file in WriterOptions.SpillDir and are replayed
// when PostgreSQL answers again. A record is never dropped: the only records
// not stored are invalid ones (an unknown status), which are appended to a
// dead-letter file next to the spill and logged.
//
// call_logs is partitioned by UTC day. EnsurePartitions and DropPartitions are
// the worker's maintenance jobs; Search, Get, Series and Costs serve the
// console.
package calllog
