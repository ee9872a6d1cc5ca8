package config

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"switchyard/routing/reason"
)

var testEnv = Env{Implemented: map[Protocol]ProtocolSupport{
	ProtocolOpenAI:    {Chat: true, Embeddings: true},
	ProtocolAnthropic: {Chat: true},
	ProtocolGemini:    {Chat: true, Embeddings: true},
}}

// validSnapshot is a small configuration that passes every blocking check.
func validSnapshot() Snapshot {
	tier := func(name TierName, cands ...Candidate) Tier {
		return Tier{ID: int64(len(name)), Name: name, TimeoutMS: DefaultTierTimeoutMS[name], FirstChunkTimeoutMS: DefaultFirstChunkTimeoutMS[name], Candidates: cands}
	}
	return Snapshot{
		Format: FormatV1,
		Providers: []Provider{
			{ID: 1, Name: "openai", Protocol: ProtocolOpenAI, BaseURL: "https://api.openai.com/v1", Enabled: true, TimeoutMS: 60000,
				Keys: []ProviderKey{{ID: 11, Label: "a", Fingerprint: "sk-…abcd", Status: KeyActive}}},
			{ID: 2, Name: "claude", Protocol: ProtocolAnthropic, BaseURL: "https://api.anthropic.com", Enabled: true, TimeoutMS: 60000,
				Keys: []ProviderKey{{ID: 21, Label: "b", Fingerprint: "sk-…wxyz", Status: KeyActive}}},
		},
		LogicModels: []LogicModel{
			{ID: 1, Code: "small", Kind: KindChat, Deployments: []Deployment{
				{ID: 101, Provider: "openai", UpstreamModel: "gpt-4o-mini", Weight: 70, Enabled: true},
				{ID: 102, Provider: "claude", UpstreamModel: "claude-haiku", Weight: 30, Enabled: true},
			}},
			{ID: 2, Code: "big", Kind: KindChat, Deployments: []Deployment{
				{ID: 201, Provider: "openai", UpstreamModel: "gpt-4o", Weight: 100, Enabled: true, Capabilities: Capabilities{Thinking: true}},
			}},
			{ID: 3, Code: "embed", Kind: KindEmbedding, EmbeddingDimension: 1536, Deployments: []Deployment{
				{ID: 301, Provider: "openai", UpstreamModel: "text-embedding-3-small", Weight: 100, Enabled: true},
			}},
		},
		RouteGroups: []RouteGroup{{ID: 1, Name: "default", Tiers: []Tier{
			tier(TierFast, Candidate{ID: 1, LogicModel: "small", Priority: 1, Weight: 100}, Candidate{ID: 4, LogicModel: "embed", Priority: 1, Weight: 100}),
			tier(TierStandard, Candidate{ID: 2, LogicModel: "small", Priority: 1, Weight: 90}, Candidate{ID: 3, LogicModel: "big", Priority: 1, Weight: 10}),
			tier(TierDeep, Candidate{ID: 5, LogicModel: "big", Priority: 1, Weight: 100}),
		}}},
		Callers: []Caller{{ID: 1, Name: "contracts", RouteGroup: "default", PriorityClass: ClassInteractive, Enabled: true,
			Limits: []TierLimit{{Tier: TierFast, RPM: 60}}, Keys: []CallerKey{{ID: 1, Prefix: "sy-abc"}}}},
	}
}

func TestEightChecksEachFailAndPass(t *testing.T) {
	cases := []struct {
		check  string
		mutate func(s *Snapshot)
		want   string // a fragment of the message
	}{
		{"tier_timeout", func(s *Snapshot) { s.RouteGroups[0].Tiers[0].TimeoutMS = 0 }, "timeout 0 ms"},
		{"tier_timeout", func(s *Snapshot) { s.RouteGroups[0].Tiers[2].FirstChunkTimeoutMS = -5 }, "first-chunk timeout -5 ms"},
		{"tier_empty", func(s *Snapshot) { s.RouteGroups[0].Tiers[2].Candidates = nil }, "tier deep of route group default has no candidates"},
		{"tier_empty", func(s *Snapshot) { s.RouteGroups[0].Tiers = s.RouteGroups[0].Tiers[:2] }, "tier deep"},
		{"no_usable_deployment", func(s *Snapshot) {
			for i := range s.Providers { // a broken provider, not a deployment taken out of service
				s.Providers[i].Enabled = s.Providers[i].Name != s.LogicModels[1].Deployments[0].Provider
			}
		}, "is disabled"},
		{"no_usable_deployment", func(s *Snapshot) { s.LogicModels[1].Deployments = nil }, "has no deployments"},
		{"no_usable_deployment", func(s *Snapshot) { s.Providers[0].Keys[0].Status = KeyDisabled }, "no active key"},
		{"weights_sum", func(s *Snapshot) { s.LogicModels[0].Deployments[1].Weight = 20 }, "sum to 90"},
		{"unknown_provider", func(s *Snapshot) { s.LogicModels[2].Deployments[0].Provider = "ghost" }, `provider "ghost"`},
		{"protocol_unimplemented", func(s *Snapshot) { s.Providers[1].Protocol = "cohere" }, `protocol "cohere"`},
		{"protocol_unimplemented", func(s *Snapshot) { s.LogicModels[2].Deployments[0].Provider = "claude" }, "no embeddings API"},
		{"embedding_dimension_missing", func(s *Snapshot) { s.LogicModels[2].EmbeddingDimension = 0 }, "embed has no dimension"},
		{"embedding_dimension_mismatch", func(s *Snapshot) {
			s.LogicModels = append(s.LogicModels, LogicModel{ID: 4, Code: "embed-big", Kind: KindEmbedding, EmbeddingDimension: 3072,
				Deployments: []Deployment{{ID: 401, Provider: "openai", UpstreamModel: "text-embedding-3-large", Weight: 100, Enabled: true}}})
			s.RouteGroups[0].Tiers[0].Candidates = append(s.RouteGroups[0].Tiers[0].Candidates, Candidate{ID: 9, LogicModel: "embed-big", Priority: 2, Weight: 100})
		}, "embed (1536), embed-big (3072)"},
	}
	base := DryRun(validSnapshot(), testEnv)
	if base.Blocking() {
		t.Fatalf("the valid snapshot must pass, got %+v", base.Errors())
	}
	for _, tc := range cases {
		t.Run(tc.check, func(t *testing.T) {
			s := validSnapshot()
			tc.mutate(&s)
			r := DryRun(s, testEnv)
			if !r.Blocking() {
				t.Fatalf("expected a blocking finding")
			}
			var found bool
			for _, f := range r.Errors() {
				if f.Check == tc.check && strings.Contains(f.Message, tc.want) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no %s finding containing %q in %+v", tc.check, tc.want, r.Errors())
			}
		})
	}
}

func TestCheckIDsAreStableAndTheEightComeFirst(t *testing.T) {
	want := []string{"tier_timeout", "tier_empty", "no_usable_deployment", "weights_sum", "unknown_provider", "protocol_unimplemented", "embedding_dimension_missing", "embedding_dimension_mismatch"}
	for i, id := range want {
		if Checks[i].ID != id || Checks[i].Severity != SeverityError {
			t.Errorf("check %d = %s/%s, want %s/error", i, Checks[i].ID, Checks[i].Severity, id)
		}
	}
}

func TestWarningsDoNotBlock(t *testing.T) {
	s := validSnapshot()
	s.LogicModels = append(s.LogicModels, LogicModel{ID: 9, Code: "spare", Kind: KindChat})
	r := DryRun(s, testEnv)
	if r.Blocking() {
		t.Fatalf("warnings must not block: %+v", r.Unacknowledged(nil))
	}
	got := map[string]bool{}
	for _, f := range r.Findings {
		got[f.Check] = true
	}
	for _, id := range []string{"unused_logic_model", "mixed_kinds"} {
		if !got[id] {
			t.Errorf("missing warning %s in %+v", id, r.Findings)
		}
	}
}

func TestUnknownReferenceBlocks(t *testing.T) {
	s := validSnapshot()
	s.Callers[0].RouteGroup = "nowhere"
	s.RouteGroups[0].Tiers[1].Candidates[0].LogicModel = "ghost"
	r := DryRun(s, testEnv)
	var n int
	for _, f := range r.Errors() {
		if f.Check == "unknown_reference" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("want 2 unknown_reference findings, got %+v", r.Errors())
	}
}

func TestEncodeIsDeterministicAndRoundTrips(t *testing.T) {
	a := validSnapshot()
	b := validSnapshot()
	// Same configuration, lists in another order.
	b.Providers[0], b.Providers[1] = b.Providers[1], b.Providers[0]
	b.LogicModels[0].Deployments[0], b.LogicModels[0].Deployments[1] = b.LogicModels[0].Deployments[1], b.LogicModels[0].Deployments[0]
	b.RouteGroups[0].Tiers[0], b.RouteGroups[0].Tiers[2] = b.RouteGroups[0].Tiers[2], b.RouteGroups[0].Tiers[0]
	ta, err := Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ta, tb) {
		t.Fatalf("same configuration gave different text:\n%s\n---\n%s", ta, tb)
	}
	d, err := Decode(ta)
	if err != nil {
		t.Fatal(err)
	}
	tc, _ := Encode(d)
	if !bytes.Equal(ta, tc) {
		t.Fatalf("decode/encode changed the text:\n%s\n---\n%s", ta, tc)
	}
	if !strings.HasPrefix(string(ta), "format: switchyard/v1\n") {
		t.Fatalf("text should start with the format line, got %q", ta[:40])
	}
}

func TestDecodeRefusesBadText(t *testing.T) {
	cases := map[string]string{
		"empty":          "",
		"unknown field":  "format: switchyard/v1\nproviders: []\nsurprise: 1\n",
		"wrong format":   "format: switchyard/v9\n",
		"no format":      "providers: []\n",
		"wrong type":     "format: switchyard/v1\nproviders: 5\n",
		"two documents":  "format: switchyard/v1\n---\nformat: switchyard/v1\n",
		"not yaml":       "{{{{",
		"bad weight":     "format: switchyard/v1\nlogic_models:\n  - code: x\n    kind: chat\n    deployments:\n      - provider: p\n        weight: heavy\n",
		"json bad field": `{"format":"switchyard/v1","callers":[{"nam":"x"}]}`,
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode([]byte(text)); !errors.Is(err, ErrFormat) {
				t.Fatalf("want ErrFormat, got %v", err)
			}
		})
	}
	if _, err := Decode([]byte(`{"format":"switchyard/v1","tenants":[]}`)); err != nil {
		t.Fatalf("JSON input should decode: %v", err)
	}
}

func TestCompile(t *testing.T) {
	s := validSnapshot()
	creds := Credentials{
		ProviderKeySecrets: map[int64]string{11: "sk-secret-one", 21: "sk-secret-two"},
		CallerKeys:         LiveKeys{HashCallerKey("sy-live-key"): {ID: 1, Caller: "contracts"}, HashCallerKey("sy-gone-key"): {ID: 2, Caller: "gone"}},
	}
	rt, err := Compile(7, s, creds)
	if err != nil {
		t.Fatal(err)
	}
	if c, k := rt.Authenticate("sy-live-key"); c == nil || c.Name != "contracts" || c.Group.Name != "default" || k.ID != 1 {
		t.Fatalf("authenticate: %+v %+v", c, k)
	}
	if c, k := rt.Authenticate("sy-other"); c != nil || k.ID != 0 {
		t.Fatal("unknown key authenticated")
	}
	// A key of a caller this version does not have is suspended, and says whose it is.
	if c, k := rt.Authenticate("sy-gone-key"); c != nil || k.Caller != "gone" {
		t.Fatalf("key of an absent caller: %+v %+v", c, k)
	}
	std := rt.Groups["default"].Tier(TierStandard)
	if len(std.Levels) != 1 || len(std.Levels[0].Candidates) != 2 || std.Timeout.Milliseconds() != 60000 {
		t.Fatalf("standard tier compiled wrong: %+v", std)
	}
	if rt.Deployments[102].Provider.Key(21).Secret != "sk-secret-two" {
		t.Fatal("secret not attached")
	}
	if rt.Callers[1].Limit(TierFast).RPM != 60 {
		t.Fatal("limits not compiled")
	}

	s2 := validSnapshot()
	s2.LogicModels[1].Deployments[0].Parked = true
	rt2, err := Compile(8, s2, creds)
	if err != nil {
		t.Fatal(err)
	}
	if got := rt2.Deployments[201].StaticSkip; got != reason.Of(reason.Parked) || !rt2.Deployments[201].Parked || rt2.Deployments[201].Weight != s2.LogicModels[1].Deployments[0].Weight {
		t.Fatalf("static skip = %+v", got)
	}

	delete(creds.ProviderKeySecrets, 21)
	if _, err := Compile(9, validSnapshot(), creds); err == nil {
		t.Fatal("a key without a secret must refuse to compile")
	}
	bad := validSnapshot()
	bad.Callers[0].RouteGroup = "nowhere"
	creds.ProviderKeySecrets[21] = "x"
	if _, err := Compile(10, bad, creds); err == nil {
		t.Fatal("an unresolved reference must refuse to compile")
	}
}

func TestValidators(t *testing.T) {
	if f := ValidateProvider(Provider{Name: "ok", Protocol: ProtocolOpenAI, BaseURL: "https://x.example/v1", TimeoutMS: 1000}); len(f) != 0 {
		t.Fatalf("valid provider refused: %v", f)
	}
	f := ValidateProvider(Provider{Name: "bad name!", Protocol: "cohere", BaseURL: "ftp://x", TimeoutMS: 0})
	for _, field := range []string{"name", "protocol", "base_url", "timeout_ms"} {
		if f[field] == "" {
			t.Errorf("provider field %s not refused", field)
		}
	}
	d := ValidateDeployment(Deployment{Provider: "p", UpstreamModel: "m", Weight: 0, Parked: true, Prices: Prices{InputMicros: -1, Currency: "usd"}})
	if d["price_input"] == "" || d["currency"] == "" || d["weight"] != "" {
		t.Errorf("deployment validation: %v (weight 0 must be allowed while parked)", d)
	}
	// A weight never parks: 0 unparked and any negative weight are refused,
	// on deployments and candidates alike, naming the Park control.
	for _, w := range []int{0, -30, 10001} {
		for name, msg := range map[string]string{
			"deployment": ValidateDeployment(Deployment{Provider: "p", UpstreamModel: "m", Weight: w})["weight"],
			"candidate":  ValidateCandidate(Candidate{LogicModel: "m", Priority: 1, Weight: w})["weight"],
		} {
			if !strings.Contains(msg, "park it") {
				t.Errorf("%s weight %d: %q, want a refusal naming park", name, w, msg)
			}
		}
	}
	if msg := ValidateCandidate(Candidate{LogicModel: "m", Priority: 1, Weight: -5, Parked: true})["weight"]; msg == "" {
		t.Error("a negative weight is refused even when parked")
	}
	if m := ValidateLogicModel(LogicModel{Code: "fast", Kind: KindChat}); m["code"] == "" {
		t.Error("a tier name must not be usable as a logic model code")
	}
	tf := ValidateTier(Tier{Name: TierFast, TimeoutMS: 1000, FirstChunkTimeoutMS: 2000})
	if tf["first_chunk_timeout_ms"] == "" {
		t.Error("first-chunk timeout above tier timeout accepted")
	}
	if c := ValidateCaller(Caller{Name: "c", RouteGroup: "g", PriorityClass: ClassBatch, MonthlyBudgetMicros: -1}); c["monthly_budget"] == "" {
		t.Error("a negative budget must be refused")
	}
	if c := ValidateCaller(Caller{Name: "c", RouteGroup: "g", PriorityClass: ClassBatch, MonthlyBudgetMicros: 12_345_601}); len(c) != 0 {
		t.Errorf("valid budget refused: %v", c)
	}
	if c := ValidateCaller(Caller{Name: "c", RouteGroup: "g", PriorityClass: "vip", Limits: []TierLimit{{Tier: TierFast, RPM: -1}}}); c["priority_class"] == "" || c["limits.fast.rpm"] == "" {
		t.Errorf("caller validation: %v", c)
	}
}

func TestCloudSettingsCheck(t *testing.T) {
	s := Snapshot{Providers: []Provider{
		{ID: 1, Name: "az", Protocol: ProtocolAzure, BaseURL: "https://r.openai.azure.com"},
		{ID: 2, Name: "az-ok", Protocol: ProtocolAzure, BaseURL: "https://r.openai.azure.com", APIVersion: "2024-10-21"},
		{ID: 3, Name: "br", Protocol: ProtocolBedrock, BaseURL: "https://bedrock-runtime.us-east-1.amazonaws.com"},
		{ID: 4, Name: "br-ok", Protocol: ProtocolBedrock, BaseURL: "https://bedrock-runtime.us-east-1.amazonaws.com", Region: "us-east-1"},
		{ID: 5, Name: "vx-no-project", Protocol: ProtocolVertex, Region: "us-central1"},
		{ID: 6, Name: "vx-no-location", Protocol: ProtocolVertex, Project: "p1"},
		{ID: 7, Name: "vx-ok", Protocol: ProtocolVertex, Project: "p1", Region: "us-central1"},
	}}
	got := checkCloudSettings(&s, Env{})
	if len(got) != 4 || got[0].Object.Field != "api_version" || got[1].Object.Field != "region" ||
		got[2].Object.Field != "project" || got[2].Object.Name != "vx-no-project" || got[3].Object.Field != "location" || got[3].Object.Name != "vx-no-location" {
		t.Fatalf("findings = %+v, want api_version of az, region of br, project and location of the Vertex providers", got)
	}
}

// TestVertexProviderFields: a Vertex provider may leave its base URL to
// its location; its key is a service account's key file (spaces and line
// breaks allowed), shown by its key id only; anything else that looks like
// JSON is refused without being quoted.
func TestVertexProviderFields(t *testing.T) {
	if f := ValidateProvider(Provider{Name: "vx", Protocol: ProtocolVertex, Project: "p1", Region: "us-central1", TimeoutMS: 1000}); len(f) != 0 {
		t.Fatalf("a Vertex provider without base URL: %v", f)
	}
	if f := ValidateProvider(Provider{Name: "g", Protocol: ProtocolGemini, TimeoutMS: 1000}); f["base_url"] == "" {
		t.Fatal("another kind without base URL was accepted")
	}
	file := "{\n  \"type\": \"service_account\",\n  \"private_key_id\": \"0123456789abcdef\",\n  \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n\",\n  \"client_email\": \"svc@p1.iam.gserviceaccount.com\"\n}"
	if f := ValidateProviderKey("sa", file, true); len(f) != 0 {
		t.Fatalf("a service-account key file: %v", f)
	}
	if fp := KeyFingerprint(file); fp != SecretSet+" …cdef" || strings.Contains(fp, "PRIVATE") {
		t.Fatalf("fingerprint %q", fp)
	}
	for _, bad := range []string{`{"type":"authorized_user","client_secret":"s3cret-value"}`, `{"type":"service_account", "private_key":`} {
		f := ValidateProviderKey("sa", bad, true)
		if f["secret"] == "" || strings.Contains(f["secret"], "s3cret") {
			t.Errorf("%s: %v", bad, f)
		}
	}
}
