package config

import "slices"

// The weights rule (check weights_sum): a logic model's deployment weights
// split its traffic, and they must add up to 100 over the deployments in
// service — enabled and not parked. Taking a deployment out of service
// never forces re-weighting the others: a disabled or parked deployment
// keeps its weight (parking is its own flag, see Deployment.Parked), so
// the rule also passes when the deployments in service and those taken
// out of service add up to 100. The weighted draw shares the
// out-of-service part among the rest in proportion. Console forms, the
// admin API and the dry-run all use these functions.

// normalizeParked reads the old encoding of parking, a weight of 0 or
// less, into the Parked flag: a weight of −30 becomes parked with weight
// 30 (the share it remembered), a weight of 0 parked with weight 0.
// Snapshots published or exported before the flag existed, and imports of
// them, keep their meaning; a snapshot written now never has a weight
// below 0, and weight 0 is always parked.
func normalizeParked(weight *int, parked *bool) {
	if *weight <= 0 {
		*parked = true
		*weight = -*weight
	}
}

// NormalizeParked reads a weight of 0 or less as parked (normalizeParked),
// for the store's writers, which take deployments from Go code and the
// admin API as the codec takes them from text.
func (d *Deployment) NormalizeParked() { normalizeParked(&d.Weight, &d.Parked) }

// NormalizeParked reads a weight of 0 or less as parked (normalizeParked).
func (c *Candidate) NormalizeParked() { normalizeParked(&c.Weight, &c.Parked) }

// InService reports whether the deployment takes traffic by configuration:
// enabled and not parked.
func (d Deployment) InService() bool { return d.Enabled && !d.Parked }

// Share is the deployment's configured share of its logic model's traffic:
// its weight, also while parked or disabled.
func (d Deployment) Share() int { return d.Weight }

// WeightSums are a logic model's deployment weights added up for the rule.
type WeightSums struct {
	InService    int // weights of the enabled, unparked deployments
	OutOfService int // remembered shares of the disabled or parked ones
	Active       int // how many are in service
}

// SumWeights adds the weights of ds.
func SumWeights(ds []Deployment) WeightSums {
	var w WeightSums
	for _, d := range ds {
		if d.InService() {
			w.InService += d.Weight
			w.Active++
		} else {
			w.OutOfService += d.Share()
		}
	}
	return w
}

// Balanced reports whether the weights rule holds: nothing in service (the
// check no_usable_deployment speaks then), the deployments in service sum
// to 100, or they do together with the shares taken out of service.
func (w WeightSums) Balanced() bool {
	return w.Active == 0 || w.InService == 100 || w.InService+w.OutOfService == 100
}

// WeightProposal is what a new deployment's form proposes: a weight, and
// when the others already take the whole 100, new weights for them that
// keep the sum (nil when they can stay).
type WeightProposal struct {
	Weight    int
	Rebalance map[int64]int // deployment id → proposed weight
}

// ProposeWeight proposes the weight of a deployment added to a logic model
// with deployments ds: 100 when none is in service, else what the others
// leave of 100, else an even share with the others scaled down in
// proportion (largest remainder, so the result sums to exactly 100).
func ProposeWeight(ds []Deployment) WeightProposal {
	w := SumWeights(ds)
	switch rest := 100 - w.InService - w.OutOfService; {
	case w.Active == 0:
		return WeightProposal{Weight: 100}
	case rest > 0:
		return WeightProposal{Weight: rest}
	}
	share := (100 + (w.Active+1)/2) / (w.Active + 1)
	return WeightProposal{Weight: share, Rebalance: scaleWeights(ds, 100-share)}
}

// Rebalance is the new weights of ds's in-service deployments that keep
// the sum at 100 beside a new deployment of weight w, or nil when they
// can stay (the rule already holds with w, or w is no share of 100).
func Rebalance(ds []Deployment, w int) map[int64]int {
	with := append(slices.Clone(ds), Deployment{ID: -1, Weight: w, Enabled: true})
	if w <= 0 || w >= 100 || SumWeights(with).Balanced() || SumWeights(ds).Active == 0 {
		return nil
	}
	return scaleWeights(ds, 100-w)
}

// scaleWeights scales the in-service deployments' weights to sum to total
// by the largest-remainder method (ties go to the earlier deployment). A
// weight the rounding would take to 0 is kept at 1, so no deployment is
// parked by a proposal.
func scaleWeights(ds []Deployment, total int) map[int64]int {
	sum := SumWeights(ds).InService
	out := map[int64]int{}
	if sum <= 0 {
		return out
	}
	var ids []int64
	var fracs []int
	given := 0
	for _, d := range ds {
		if !d.InService() {
			continue
		}
		out[d.ID] = d.Weight * total / sum
		given += out[d.ID]
		ids, fracs = append(ids, d.ID), append(fracs, d.Weight*total%sum)
	}
	for ; given < total; given++ { // fewer rounds than deployments
		best := 0
		for i := range fracs {
			if fracs[i] > fracs[best] {
				best = i
			}
		}
		out[ids[best]]++
		fracs[best] = -1
	}
	for id, v := range out {
		out[id] = max(v, 1)
	}
	return out
}
