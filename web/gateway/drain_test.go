package gateway

import (
	"testing"
	"time"

	"switchyard/routing/config"
)

func TestDefaultGraceIsTheLongestTierTimeoutCapped(t *testing.T) {
	tiers := func(ds ...time.Duration) *config.RGroup {
		g := &config.RGroup{}
		for i, d := range ds {
			g.Tiers[i] = &config.RTier{Timeout: d}
		}
		return g
	}
	cases := []struct {
		name string
		rt   *config.Runtime
		want time.Duration
	}{
		{"nothing loaded", nil, minDefaultGrace},
		{"short tiers take the floor", &config.Runtime{Groups: map[string]*config.RGroup{"a": tiers(time.Second, 2*time.Second)}}, minDefaultGrace},
		{"the longest tier of any group", &config.Runtime{Groups: map[string]*config.RGroup{"a": tiers(15 * time.Second), "b": tiers(15*time.Second, 60*time.Second)}}, 60 * time.Second},
		{"capped", &config.Runtime{Groups: map[string]*config.RGroup{"a": tiers(15*time.Second, 60*time.Second, 180*time.Second)}}, MaxDefaultGrace},
	}
	for _, c := range cases {
		if got := DefaultGrace(c.rt); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
