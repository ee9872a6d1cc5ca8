package calllog

import (
	"testing"
	"time"
)

// BenchmarkRollupJSON measures building one batch's roll-up arguments (the
// JSON json_to_recordset reads) for 1,000 records over a day, eight
// callers: what the writer does per batch besides the statements.
func BenchmarkRollupJSON(b *testing.B) {
	ru := newRollups()
	now := time.Now()
	callers := []string{"web", "search", "support", "batch-etl", "billing", "mobile", "ads", "docs"}
	for i := range 1000 {
		r := sampleRecord(now.Add(-time.Duration(i)*90*time.Second), callers[i%len(callers)], i)
		ru.add(&r)
	}
	ru.costsByDay()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = ru.appendCostsJSON(buf[:0])
		buf = ru.appendStatsJSON(buf[:0])
		buf = ru.appendQueuesJSON(buf[:0])
		buf = ru.ladder.appendJSON(buf[:0])
		buf = ru.outcomes.appendJSON(buf[:0])
	}
}
