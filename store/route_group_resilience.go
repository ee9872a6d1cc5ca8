package store

import (
	"database/sql"
	"encoding/json"
	"fmt"

	"switchyard/routing/config"
)

// A route group's retry budget and degradation ladder are stored as JSON
// objects in route_groups.retry_budget and route_groups.degradation, NULL
// for the defaults (no settings). They travel with the group through the
// draft, publish, export/import and rollback.

// resilienceJSON returns the two column values of g's settings in their
// canonical form (an empty setting is NULL).
func resilienceJSON(g config.RouteGroup) (budget, ladder sql.NullString) {
	c := config.Clone(config.Snapshot{RouteGroups: []config.RouteGroup{g}})
	config.Canonicalize(&c)
	cg := c.RouteGroups[0]
	if cg.RetryBudget != nil {
		b, _ := json.Marshal(cg.RetryBudget)
		budget = sql.NullString{String: string(b), Valid: true}
	}
	if cg.Degradation != nil {
		b, _ := json.Marshal(cg.Degradation)
		ladder = sql.NullString{String: string(b), Valid: true}
	}
	return budget, ladder
}

// readResilience fills g's settings from the two columns.
func readResilience(g *config.RouteGroup, budget, ladder []byte) error {
	if len(budget) > 0 {
		g.RetryBudget = &config.RetryBudget{}
		if err := json.Unmarshal(budget, g.RetryBudget); err != nil {
			return fmt.Errorf("route group %s retry budget: %w", g.Name, err)
		}
	}
	if len(ladder) > 0 {
		g.Degradation = &config.Degradation{}
		if err := json.Unmarshal(ladder, g.Degradation); err != nil {
			return fmt.Errorf("route group %s degradation: %w", g.Name, err)
		}
	}
	return nil
}
