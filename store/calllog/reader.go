package calllog

import (
	"context"
	"time"

	"switchyard/routing"
)

// Reader runs the call-log queries over one database. The console holds it
// behind the interface it declares (handlers.CallLogReader), so a handler
// never carries a database handle and a test can replace the reads.
type Reader struct {
	DB Queryer
}

// Search runs Search over r.DB.
func (r Reader) Search(ctx context.Context, f Filter) (Page, error) { return Search(ctx, r.DB, f) }

// Get runs Get over r.DB.
func (r Reader) Get(ctx context.Context, requestID string, at time.Time) (Record, error) {
	return Get(ctx, r.DB, requestID, at)
}

// Costs runs Costs over r.DB.
func (r Reader) Costs(ctx context.Context, from, to time.Time) ([]CostRow, error) {
	return Costs(ctx, r.DB, from, to)
}

// Series runs Series over r.DB.
func (r Reader) Series(ctx context.Context, q SeriesQuery) ([]Point, error) {
	return Series(ctx, r.DB, q)
}

// QueueSeries runs QueueSeries over r.DB.
func (r Reader) QueueSeries(ctx context.Context, from, to time.Time, step time.Duration) ([]QueuePoint, error) {
	return QueueSeries(ctx, r.DB, from, to, step)
}

// OutcomeSeries runs OutcomeSeries over r.DB.
func (r Reader) OutcomeSeries(ctx context.Context, q OutcomeQuery) ([]OutcomePoint, error) {
	return OutcomeSeries(ctx, r.DB, q)
}

// LadderSeries runs LadderSeries over r.DB.
func (r Reader) LadderSeries(ctx context.Context, q LadderQuery) ([]LadderPoint, error) {
	return LadderSeries(ctx, r.DB, q)
}

// Shapes runs Shapes over r.DB.
func (r Reader) Shapes(ctx context.Context, from, to time.Time) ([]routing.TrafficShape, bool, error) {
	return Shapes(ctx, r.DB, from, to)
}

// Usage runs UsageOf over r.DB.
func (r Reader) Usage(ctx context.Context, q UsageQuery) (UsageSummary, error) {
	return UsageOf(ctx, r.DB, q)
}
