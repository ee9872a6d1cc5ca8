package routing

import (
	"net/http"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/reason"
)

// refusedField is the first field of r that deployment d cannot carry (the
// field policy for its protocol, capabilities and strictness), or "".
func refusedField(d *config.RDeployment, r *adapter.ChatRequest) string {
	return adapter.Refusal(d.Wire(), r, d.Capabilities, d.StrictFields)
}

// recordDrops puts on the call what the deployment that served did not get
// of the request (the field policy's drops), for the call log and the
// metrics.
func (x *exchange) recordDrops(d *config.RDeployment, r *adapter.ChatRequest) {
	if d == nil || r == nil {
		return
	}
	x.trail.ServedProtocol = string(d.Provider.Protocol)
	if v := adapter.Judge(d.Wire(), r, d.Capabilities, d.StrictFields); len(v.Dropped) > 0 {
		x.rec.DroppedFields = v.Dropped
	}
}

// unsupportedParameter is the answer to a request that no deployment could
// take because each one's protocol refuses a field it set: 400
// unsupported_parameter naming the field (param) and, in the chain, the
// deployments and their protocols, instead of a vendor silently ignoring
// the field. Nil when the plan skipped nothing for that reason.
func unsupportedParameter(p *Plan, tr *Trail) *Failure {
	field := ""
	for _, s := range p.Skips {
		if s.Reason.Code == reason.UnsupportedParameter {
			field = s.Reason.Param
			break
		}
	}
	if field == "" {
		return nil
	}
	t := Told{Code: ToldUnsupportedParameter, Class: adapter.ClassBadRequest, Param: field, Steps: toldSteps(tr)}
	t.Model, t.Tier = toldTarget(p)
	return &Failure{
		Status: http.StatusBadRequest, Code: adapter.CodeUnsupportedParameter, Class: adapter.ClassBadRequest,
		Told: t, Param: field, NoRetry: true,
	}
}
