package handlers

import "switchyard/routing"

// verdicts is every route group × tier's servability on this instance's
// live version and runtime state: what a request arriving here now gets.
// Nil without a data plane or before the first publish.
func (h *Handler) verdicts() []routing.TierVerdict {
	if h.Ops == nil {
		return nil
	}
	return routing.Servability(h.Ops.Runtime(), h.Ops.State())
}
