package calllogs

import (
	"encoding/json"
	"strings"
	"testing"

	"switchyard/routing"
	"switchyard/routing/reason"
)

func TestExplainSkipSaysWhyInWords(t *testing.T) {
	tests := []struct {
		r    reason.Reason
		want string
	}{
		{reason.Reason{Code: reason.Parked}, "skipped: parked — the deployment is kept in the configuration without traffic"},
		{reason.Reason{Code: reason.CandidateParked, Weight: -1}, "the candidate is parked — it is kept in the tier's chain"},
		{reason.Of(reason.DisabledByOperator), "disabled by an operator"},
		{reason.Reason{Code: reason.ProviderDisabled, Provider: "openai"}, "provider openai is disabled by an operator"},
		{reason.Reason{Code: reason.NoActiveKey, Provider: "openai"}, "add or enable a key"},
		{reason.Reason{Code: reason.LacksCapability, Capability: "thinking"}, "needs thinking (reasoning)"},
		{reason.Reason{Code: reason.LacksCapability, Capability: "vision"}, "needs vision (image input)"},
		{reason.Of(reason.Unhealthy), "health checker marked the deployment down"},
		{reason.Of(reason.BreakerOpen), "circuit breaker is open"},
		{reason.Reason{Code: reason.OverCapacity, Max: 8}, "at max concurrency of 8"},
		{reason.Reason{Code: reason.ChainFull, Max: 32}, "holds 32 entries"},
		{reason.Of(reason.KeysQuarantined), "all keys are quarantined"},
		{reason.Of(reason.KeysCooling), "all keys are cooling"},
		{reason.Of(reason.AlreadyInChain), "already earlier in the chain"},
		{reason.Reason{Code: reason.WrongKind, Kind: "embedding", Want: "chat"}, "is an embedding model and this is a chat request"},
		{reason.Reason{Code: reason.Legacy, Detail: "something old"}, "skipped: something old"},
	}
	for _, tt := range tests {
		t.Run(string(tt.r.Code), func(t *testing.T) {
			if got := ExplainSkip(tt.r); !strings.Contains(got, tt.want) {
				t.Errorf("ExplainSkip(%+v) = %q, want it to contain %q", tt.r, got, tt.want)
			}
		})
	}
}

// Rows written before reasons were typed hold plain strings: they are shown
// as written, never parsed for meaning.
func TestParseTrailReadsOldStringReasons(t *testing.T) {
	tr, ok := ParseTrail(json.RawMessage(`{"skips":[{"model":"m","reason":"parked (weight 0)"}],"attempts":[{"model":"m","outcome":"skipped","reason":"breaker open","latency_ms":0}]}`))
	if !ok {
		t.Fatal("trail not readable")
	}
	steps := Steps(tr)
	if len(steps) != 2 || steps[0].Words != "skipped: parked (weight 0)" || steps[1].Words != "skipped: breaker open" {
		t.Fatalf("steps = %+v", steps)
	}
}

// A typed reason survives the call log's JSON round trip with its parameters.
func TestTrailRoundTripsTypedReasons(t *testing.T) {
	in := routing.Trail{Skips: []routing.Skip{{Model: "m", Reason: reason.Reason{Code: reason.Parked, Weight: -2}}},
		Attempts: []routing.Attempt{{Model: "m", Outcome: "skipped", Skip: &reason.Reason{Code: reason.OverCapacity, Max: 4}}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := ParseTrail(b)
	if !ok || tr.Skips[0].Reason != in.Skips[0].Reason || *tr.Attempts[0].Skip != *in.Attempts[0].Skip {
		t.Fatalf("round trip: %s -> %+v", b, tr)
	}
}

func TestExplainAttemptSaysWhatHappenedAndWhatCameNext(t *testing.T) {
	a := routing.Attempt{Model: "m", DeploymentID: 1, Deployment: "m on p (x)", Provider: "p", Key: "sk-…abcd", Outcome: "failed", Status: 429, Class: "rate_limited"}
	sameDep := routing.Attempt{Model: "m", DeploymentID: 1, Deployment: "m on p (x)", Outcome: "ok"}
	otherDep := routing.Attempt{Model: "n", DeploymentID: 2, Deployment: "n on q (y)", Outcome: "ok"}
	fallback := routing.Attempt{Model: "n", DeploymentID: 2, Deployment: "n on q (y)", Outcome: "ok", Fallback: true}
	tests := []struct {
		name string
		a    routing.Attempt
		next *routing.Attempt
		want string
	}{
		{"rate limited, next key", a, &sameDep, "the vendor rate-limited key sk-…abcd (HTTP 429); the key cools down until its Retry-After and the next key was tried"},
		{"rate limited, last", a, nil, "nothing was left to try"},
		{"auth", routing.Attempt{Outcome: "failed", Class: "auth", Status: 401, Key: "sk-…1"}, &otherDep, "quarantined until an operator re-enables it, and the next candidate was tried"},
		{"server to fallback", routing.Attempt{Outcome: "failed", Class: "server", Status: 502}, &fallback, "server error (HTTP 502); this counts toward the deployment's circuit breaker and the shared fallback group was tried next"},
		{"timeout", routing.Attempt{Outcome: "failed", Class: "timeout", LatencyMS: 15000}, nil, "no answer within the attempt's timeout (after 15.0 s)"},
		{"content filter", routing.Attempt{Outcome: "failed", Class: "content_filter", Status: 400}, nil, "content filter blocked the request (HTTP 400); a filtered request is not retried"},
		{"ok", routing.Attempt{Outcome: "ok", Key: "sk-…9", LatencyMS: 12}, nil, "answered with key sk-…9 in 12 ms"},
		{"run-time skip", routing.Attempt{Outcome: "skipped", Skip: &reason.Reason{Code: reason.BreakerOpen}}, nil, "circuit breaker is open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExplainAttempt(tt.a, tt.next); !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want it to contain %q", got, tt.want)
			}
		})
	}
}

func TestExplainRejectionCoversOurErrorCodes(t *testing.T) {
	for code, want := range map[string]string{
		"rate_limited":         "reached its rate limit",
		"quota_exceeded":       "daily token quota of caller app on tier fast is used up",
		"budget_exceeded":      "monthly budget of caller app is spent",
		"invalid_api_key":      "unknown or revoked",
		"model_not_found":      "never substitutes another model",
		"invalid_request":      "malformed",
		"idempotency_conflict": "different request body",
		"no_available_model":   "every candidate was skipped",
	} {
		if got := ExplainRejection(code, "", "app", "fast"); !strings.Contains(got, want) {
			t.Errorf("%s: %q does not say %q", code, got, want)
		}
	}
}

func TestParseTrailAndSteps(t *testing.T) {
	tr := routing.Trail{
		Skips:    []routing.Skip{{Model: "m", Deployment: "p/x", Reason: reason.Reason{Code: reason.Parked}}},
		Attempts: []routing.Attempt{{Model: "m", DeploymentID: 2, Outcome: "failed", Class: "server", Status: 500}, {Model: "n", DeploymentID: 3, Outcome: "ok"}},
	}
	raw, _ := json.Marshal(tr)
	got, ok := ParseTrail(raw)
	if !ok || len(got.Skips) != 1 || len(got.Attempts) != 2 {
		t.Fatalf("ParseTrail = %+v, %v", got, ok)
	}
	steps := Steps(got)
	kinds := []string{steps[0].Kind, steps[1].Kind, steps[2].Kind}
	if strings.Join(kinds, ",") != "skip,bad,ok" || steps[0].Phase != "plan" {
		t.Fatalf("steps %v", kinds)
	}
	if _, ok := ParseTrail(json.RawMessage(`[]`)); ok {
		t.Error("an empty trail parses as something")
	}
	if got, ok := ParseTrail(json.RawMessage(`[{"model":"m","outcome":"ok"}]`)); !ok || len(got.Attempts) != 1 {
		t.Error("a bare attempts array is not read")
	}
}
