package adapter

import "testing"

// TestVendorCancelledIsAnUpstreamFailure: a vendor that answers 499 or
// reports google.rpc CANCELLED (in the HTTP answer or mid-stream) failed the
// call itself; it is an upstream failure class, never invalid_request.
func TestVendorCancelledIsAnUpstreamFailure(t *testing.T) {
	gem := []byte(`{"error":{"code":499,"message":"The operation was cancelled.","status":"CANCELLED"}}`)
	for name, e := range map[string]*Error{
		"openai HTTP 499":           ClassifyHTTP(499, nil, []byte(`{"error":{"message":"Client Closed Request","type":"cancelled"}}`)),
		"openai in-band code 499":   classifyErrorEnvelope(200, gem),
		"openai in-band CANCELLED":  classifyErrorEnvelope(200, []byte(`{"error":{"message":"cancelled","code":"CANCELLED"}}`)),
		"gemini HTTP 499":           ClassifyGemini(499, nil, gem),
		"gemini mid-stream":         ClassifyGemini(200, nil, gem),
		"gemini CANCELLED, no code": ClassifyGemini(0, nil, []byte(`{"error":{"message":"cancelled","status":"CANCELLED"}}`)),
		"anthropic HTTP 499":        ClassifyAnthropic(499, nil, []byte(`{"type":"error","error":{"type":"cancelled","message":"cancelled"}}`)),
	} {
		if e.Class != ClassServer {
			t.Errorf("%s: class %q, want %q", name, e.Class, ClassServer)
		}
		if p := e.Class.Policy(); p.Code == "invalid_request" || !p.NextCandidate {
			t.Errorf("%s: policy %+v", name, p)
		}
	}
}
