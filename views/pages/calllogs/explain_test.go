package calllogs

import (
	"encoding/json"
	"strings"
	"testing"

	"switchyard/routing"
)

func TestExplainSkipSaysWhyInWords(t *testing.T) {
	tests := []struct{ reason, want string }{
		{"parked (weight 0)", "skipped: parked — weight 0 keeps the deployment in the configuration without traffic"},
		{"candidate parked (weight 0)", "the candidate is parked — weight 0 keeps it in the tier's chain"},
		{"disabled", "disabled by an operator"},
		{"provider openai disabled", "provider openai disabled by an operator"},
		{"provider openai has no active key", "add or enable a key"},
		{"lacks thinking", "needs thinking (reasoning)"},
		{"lacks vision", "needs vision (image input)"},
		{"unhealthy", "health checker marked the deployment down"},
		{"breaker open", "circuit breaker is open"},
		{"at max concurrency (8)", "at max concurrency of 8"},
		{"all keys quarantined", "all keys are quarantined"},
		{"all keys cooling", "all keys are cooling"},
		{"already in the chain", "already earlier in the chain"},
		{"is a embedding model; this is a chat request", "never stand in for each other"},
		{"something new", "skipped: something new"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			if got := ExplainSkip(tt.reason); !strings.Contains(got, tt.want) {
				t.Errorf("ExplainSkip(%q) = %q, want it to contain %q", tt.reason, got, tt.want)
			}
		})
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
		{"run-time skip", routing.Attempt{Outcome: "skipped", Reason: "breaker open"}, nil, "circuit breaker is open"},
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
		Skips:    []routing.Skip{{Model: "m", Deployment: "p/x", Reason: "parked (weight 0)"}},
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
