package rows

import "switchyard/routing/config"

// TierRef identifies a tier for the console.
type TierRef struct {
	ID      int64           `db:"id"`
	GroupID int64           `db:"route_group_id"`
	Group   string          `db:"group_name"`
	Name    config.TierName `db:"name"`
}
