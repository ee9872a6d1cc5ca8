package versions

import "switchyard/views/components"

// RollbackPreview turns the publish page into the preview of a rollback:
// an older version's content checked and replayed against live, published
// as a new version (and the draft reset to it) only on confirm.
type RollbackPreview struct {
	Version int64
	// Removed are the live version's callers the rollback removes.
	Removed []RemovedCaller
	// TrafficKnown is false when the call log could not be replayed; the
	// removed callers' request counts are unknown then.
	TrafficKnown bool
}

// RemovedCaller is a live caller a rollback removes: its traffic in the
// last 24 h and the keys that stop working (suspended, not deleted) until
// a version brings the caller back.
type RemovedCaller struct {
	Name     string
	Requests int64
	Keys     []RemovedKey
}

// RemovedKey is an unrevoked key of a removed caller.
type RemovedKey struct {
	Prefix string
	Name   string
}

// Title is the page's heading.
func (p DryRunPage) Title() string {
	if p.Rollback != nil {
		return "Roll back to v" + components.I64(p.Rollback.Version)
	}
	return "Dry-run"
}

// Subject names what is checked and replayed: the draft, or the content of
// the version a rollback restores.
func (p DryRunPage) Subject() string {
	if p.Rollback != nil {
		return "v" + components.I64(p.Rollback.Version) + "'s content"
	}
	return "the draft"
}

// DiffTo is the other side of the diff against live: "draft" or the
// rollback's version.
func (p DryRunPage) DiffTo() string {
	if p.Rollback != nil {
		return components.I64(p.Rollback.Version)
	}
	return "draft"
}
