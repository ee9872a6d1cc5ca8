package gateway

import (
	"testing"

	"switchyard/web/metrics"
)

// Every scrape-time gauge the gateway registers is one the metrics package
// knows, so the alerting rules' check against it sees them all.
func TestGaugesAreDocumented(t *testing.T) {
	for name := range (&Gateway{}).gauges(nil) {
		if !metrics.Documented(name) {
			t.Errorf("gauge %s is not in metrics' gaugeHelp", name)
		}
	}
}
