package store_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/storetest"
)

var env = adapter.Support()

func check(s config.Snapshot) config.Result { return config.DryRun(s, env) }

const knownSecret = "sk-test-KNOWN-SECRET-value-0001"

// seed builds a complete, publishable draft through the store's own methods.
type seeded struct {
	openai, claude, small, big int64
	group, caller              int64
	dep70, dep30               int64
	tiers                      map[config.TierName]int64
}

func seed(t *testing.T, st *store.Store) seeded {
	t.Helper()
	ctx := context.Background()
	must := storetest.Must[int64](t)
	var s seeded
	s.openai = must(st.CreateProvider(ctx, config.Provider{Name: "openai", Protocol: config.ProtocolOpenAI, BaseURL: "https://api.openai.com/v1", Enabled: true, TimeoutMS: 60000}))
	s.claude = must(st.CreateProvider(ctx, config.Provider{Name: "claude", Protocol: config.ProtocolAnthropic, BaseURL: "https://api.anthropic.com", Enabled: true, TimeoutMS: 60000}))
	if _, err := st.AddProviderKey(ctx, s.openai, "primary", knownSecret); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddProviderKey(ctx, s.openai, "backup", "sk-test-second-secret-0002"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddProviderKey(ctx, s.claude, "", "sk-ant-test-third-secret-0003"); err != nil {
		t.Fatal(err)
	}
	s.small = must(st.CreateLogicModel(ctx, config.LogicModel{Code: "small", Kind: config.KindChat}))
	s.big = must(st.CreateLogicModel(ctx, config.LogicModel{Code: "big", Kind: config.KindChat}))
	s.dep70 = must(st.CreateDeployment(ctx, s.small, config.Deployment{Provider: "openai", UpstreamModel: "gpt-4o-mini", Weight: 70, Enabled: true, Prices: config.Prices{InputMicros: 150_000, OutputMicros: 600_000, CachedMicros: 75_000, Currency: "USD"}}))
	s.dep30 = must(st.CreateDeployment(ctx, s.small, config.Deployment{Provider: "claude", UpstreamModel: "claude-haiku", Weight: 30, Enabled: true}))
	must(st.CreateDeployment(ctx, s.big, config.Deployment{Provider: "openai", UpstreamModel: "gpt-4o", Weight: 100, Enabled: true, Capabilities: config.Capabilities{Thinking: true, Tools: true}}))
	s.group = must(st.CreateRouteGroup(ctx, config.RouteGroup{Name: "default"}))
	snap, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.tiers = map[config.TierName]int64{}
	for _, tier := range snap.RouteGroups[0].Tiers {
		s.tiers[tier.Name] = tier.ID
	}
	must(st.AddCandidate(ctx, s.tiers[config.TierFast], config.Candidate{LogicModel: "small", Weight: 100}))
	must(st.AddCandidate(ctx, s.tiers[config.TierStandard], config.Candidate{LogicModel: "small", Priority: 1, Weight: 90}))
	must(st.AddCandidate(ctx, s.tiers[config.TierStandard], config.Candidate{LogicModel: "big", Priority: 1, Weight: 10}))
	must(st.AddCandidate(ctx, s.tiers[config.TierDeep], config.Candidate{LogicModel: "big", Weight: 100}))
	s.caller = must(st.CreateCaller(ctx, config.Caller{Name: "contracts", BusinessLine: "legal", RouteGroup: "default", PriorityClass: config.ClassInteractive, Enabled: true,
		Limits: []config.TierLimit{{Tier: config.TierFast, RPM: 60, TPM: 10000, DailyTokens: 1000000}}, MonthlyBudgetMicros: 250 * config.Unit, BudgetCurrency: "USD"}))
	return s
}

func TestDraftRoundTrip(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	seed(t, st)
	snap, rev, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev == 0 {
		t.Fatal("draft revision did not move with edits")
	}
	if len(snap.Providers) != 2 || len(snap.Providers[1].Keys) != 2 {
		t.Fatalf("providers: %+v", snap.Providers)
	}
	small := snap.LogicModels[1]
	if small.Code != "small" || len(small.Deployments) != 2 || small.Deployments[1].Weight != 70 || small.Deployments[1].Prices.CachedMicros != 75_000 {
		t.Fatalf("logic model small: %+v", small)
	}
	std := snap.RouteGroups[0].Tier(config.TierStandard)
	if len(std.Candidates) != 2 || std.Candidates[0].LogicModel != "big" || std.Candidates[0].Weight != 10 {
		t.Fatalf("standard tier: %+v", std)
	}
	c := snap.Callers[0]
	if c.Limit(config.TierFast).TPM != 10000 || c.MonthlyBudgetMicros != 250*config.Unit || c.BusinessLine != "legal" {
		t.Fatalf("caller: %+v", c)
	}
	if r := check(snap); r.Blocking() {
		t.Fatalf("seeded draft should pass the dry-run: %+v", r.Errors())
	}
}

func TestUniqueAndReferenceRefusals(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	s := seed(t, st)

	_, err := st.CreateProvider(ctx, config.Provider{Name: "openai", Protocol: config.ProtocolOpenAI, BaseURL: "https://x.example", Enabled: true, TimeoutMS: 1000})
	var ve *config.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(ve.Fields["name"], "already taken") {
		t.Fatalf("duplicate provider name: %v", err)
	}
	_, err = st.CreateDeployment(ctx, s.small, config.Deployment{Provider: "openai", UpstreamModel: "gpt-4o-mini", Weight: 1, Enabled: true})
	if !errors.As(err, &ve) || ve.Fields["upstream_model"] == "" {
		t.Fatalf("duplicate deployment: %v", err)
	}

	var re *store.ReferencedError
	if err := st.DeleteProvider(ctx, s.openai); !errors.As(err, &re) || !strings.Contains(re.Message, "deployment small (gpt-4o-mini)") {
		t.Fatalf("delete provider in use: %v", err)
	}
	if err := st.DeleteLogicModel(ctx, s.small); !errors.As(err, &re) || !strings.Contains(re.Message, "candidate in default / fast") {
		t.Fatalf("delete logic model in use: %v", err)
	}
	if err := st.DeleteRouteGroup(ctx, s.group); !errors.As(err, &re) || !strings.Contains(re.Message, "caller contracts") {
		t.Fatalf("delete group in use: %v", err)
	}
	if _, err := st.CreateCaller(ctx, config.Caller{Name: "x", RouteGroup: "nope", PriorityClass: config.ClassBatch}); !errors.As(err, &ve) || ve.Fields["route_group"] == "" {
		t.Fatalf("caller with unknown group: %v", err)
	}
	if err := st.DeleteProvider(ctx, 99999); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete missing provider: %v", err)
	}
	// Nothing was lost by the refusals.
	snap, _, _ := st.Draft(ctx)
	if len(snap.Providers) != 2 || len(snap.LogicModels) != 2 || len(snap.Callers) != 1 {
		t.Fatalf("refusals changed the draft: %+v", snap)
	}
}

func TestSecretsAreSealedAndTokensHashed(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	seed(t, st)

	rows, err := st.DB().QueryContext(ctx, `SELECT secret, fingerprint, label FROM provider_keys`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var sealed []byte
		var fp, label string
		if err := rows.Scan(&sealed, &fp, &label); err != nil {
			t.Fatal(err)
		}
		all := append(sealed, fp+label...)
		if bytes.Contains(all, []byte("KNOWN-SECRET")) || bytes.Contains(all, []byte("secret-0002")) {
			t.Fatal("the provider_keys table contains a plaintext secret")
		}
	}
	rows.Close()
	snap, _, _ := st.Draft(ctx)
	var keyID int64
	for _, k := range snap.Providers[1].Keys {
		if k.Label == "primary" {
			keyID = k.ID
			if k.Fingerprint != "sk-…0001" {
				t.Fatalf("fingerprint = %q", k.Fingerprint)
			}
		}
	}
	if got, err := st.ProviderKeySecret(ctx, keyID); err != nil || got != knownSecret {
		t.Fatalf("secret does not decrypt back: %q %v", got, err)
	}

	plain, key, err := st.CreateCallerKey(ctx, "contracts", "ci", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(plain, "sy-") || !strings.HasPrefix(plain, key.Prefix) || len(plain) < 40 {
		t.Fatalf("caller key %q prefix %q", plain, key.Prefix)
	}
	admin, _, err := st.CreateAdminToken(ctx, "ci", store.RoleAdmin, "test")
	if err != nil {
		t.Fatal(err)
	}
	var dump string
	if err := st.DB().QueryRowContext(ctx, `SELECT (SELECT string_agg(encode(hash,'escape') || prefix || name, '|') FROM caller_keys) || (SELECT string_agg(encode(hash,'escape') || prefix || name, '|') FROM admin_tokens)`).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(dump, plain) || strings.Contains(dump, admin) {
		t.Fatal("a token is stored in plaintext")
	}
	keys, err := st.LiveCallerKeys(ctx)
	if err != nil || keys[config.HashCallerKey(plain)].Caller != "contracts" {
		t.Fatalf("caller key not found by hash: %v", err)
	}
	if _, err := st.AuthenticateAdminToken(ctx, admin); err != nil {
		t.Fatalf("admin token: %v", err)
	}
	if _, err := st.AuthenticateAdminToken(ctx, admin+"x"); !errors.Is(err, store.ErrBadLogin) {
		t.Fatalf("wrong admin token accepted: %v", err)
	}
	if err := st.RevokeCallerKey(ctx, key.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	keys, _ = st.LiveCallerKeys(ctx)
	if _, ok := keys[config.HashCallerKey(plain)]; ok {
		t.Fatal("revoked key still live")
	}
	// The console names a revoked key by the fingerprint the data plane
	// records when a request presents it, and the fingerprint hides it.
	listed, err := st.CallerKeys(ctx, "contracts")
	if err != nil || len(listed) == 0 || listed[len(listed)-1].RevokedAt == nil {
		t.Fatalf("caller keys: %+v %v", listed, err)
	}
	if fp := listed[len(listed)-1].Fingerprint(); fp != config.PresentedKeyFingerprint(plain) || strings.Contains(fp, plain[config.CallerKeyShownLen:config.CallerKeyShownLen+4]) {
		t.Fatalf("console fingerprint %q, data plane %q", fp, config.PresentedKeyFingerprint(plain))
	}
}

func TestUsersLogin(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	if _, err := st.CreateUser(ctx, "ops", "short", store.RoleAdmin); err == nil {
		t.Fatal("short password accepted")
	}
	if _, err := st.CreateUser(ctx, "ops", "correct horse battery", store.RoleViewer); err != nil {
		t.Fatal(err)
	}
	u, err := st.Login(ctx, "ops", "correct horse battery")
	if err != nil || u.Role != store.RoleViewer {
		t.Fatalf("login: %+v %v", u, err)
	}
	for _, bad := range [][2]string{{"ops", "wrong password!"}, {"nobody", "correct horse battery"}} {
		if _, err := st.Login(ctx, bad[0], bad[1]); !errors.Is(err, store.ErrBadLogin) {
			t.Fatalf("login %v: %v", bad, err)
		}
	}
	var hash string
	_ = st.DB().QueryRowContext(ctx, `SELECT password_hash FROM users`).Scan(&hash)
	if !strings.HasPrefix(hash, "$2") {
		t.Fatalf("password not bcrypt-hashed: %q", hash)
	}
}

func TestMoveCandidate(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	s := seed(t, st)
	order := func() string {
		snap, _, _ := st.Draft(ctx)
		var parts []string
		for _, c := range snap.RouteGroups[0].Tier(config.TierStandard).Candidates {
			parts = append(parts, c.LogicModel+"@"+string(rune('0'+c.Priority))+"/"+string(rune('0'+c.Weight/10)))
		}
		return strings.Join(parts, " ")
	}
	snap, _, _ := st.Draft(ctx)
	cands := snap.RouteGroups[0].Tier(config.TierStandard).Candidates
	var smallID int64
	for _, c := range cands {
		if c.LogicModel == "small" {
			smallID = c.ID
		}
	}
	if got := order(); got != "big@1/1 small@1/9" {
		t.Fatalf("start: %s", got)
	}
	// Split the canary pair: small becomes its own first level; weights stay.
	if err := st.MoveCandidate(ctx, smallID, true); err != nil {
		t.Fatal(err)
	}
	if got := order(); got != "small@1/9 big@2/1" {
		t.Fatalf("after up: %s", got)
	}
	if err := st.MoveCandidate(ctx, smallID, false); err != nil {
		t.Fatal(err)
	}
	if got := order(); got != "big@1/1 small@2/9" {
		t.Fatalf("after down: %s", got)
	}
	if err := st.MoveCandidate(ctx, smallID, false); err != nil { // already last
		t.Fatal(err)
	}
	if got := order(); got != "big@1/1 small@2/9" {
		t.Fatalf("moving the last down changed it: %s", got)
	}
	_ = s
}

func TestPublishRollbackAndReplace(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	s := seed(t, st)

	if _, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: " ", Check: check}); err == nil {
		t.Fatal("publish without a message accepted")
	}
	v1, err := st.Publish(ctx, store.PublishInput{Author: "alice", Message: "first", Check: check})
	if err != nil || v1.Version.Number != 1 {
		t.Fatalf("v1: %+v %v", v1, err)
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "alice", Message: "again", Check: check}); !errors.Is(err, store.ErrNothingToPublish) {
		t.Fatalf("identical publish: %v", err)
	}
	// Stale review: the draft moved after the operator checked it.
	rev, _ := st.DraftRevision(ctx)
	if err := st.UpdateTier(ctx, s.tiers[config.TierFast], 9000, 3000); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "alice", Message: "stale", ExpectedRevision: &rev, Check: check}); !errors.Is(err, store.ErrDraftChanged) {
		t.Fatalf("stale publish: %v", err)
	}
	v2, err := st.Publish(ctx, store.PublishInput{Author: "alice", Message: "fast tier 9s", Check: check})
	if err != nil || v2.Version.Number != 2 {
		t.Fatalf("v2: %v", err)
	}
	// A failing check refuses and stores nothing.
	snap, _, _ := st.Draft(ctx)
	var deepCand int64
	for _, c := range snap.RouteGroups[0].Tier(config.TierDeep).Candidates {
		deepCand = c.ID
	}
	if err := st.RemoveCandidate(ctx, deepCand); err != nil {
		t.Fatal(err)
	}
	var cf *store.ChecksFailedError
	if _, err := st.Publish(ctx, store.PublishInput{Author: "bob", Message: "empty deep", Check: check}); !errors.As(err, &cf) || cf.Result.Errors()[0].Check != "tier_empty" {
		t.Fatalf("publish with an empty tier: %v", err)
	}
	if n, _ := st.LatestVersionNumber(ctx); n != 2 {
		t.Fatalf("a refused publish stored version %d", n)
	}
	if _, err := st.AddCandidate(ctx, s.tiers[config.TierDeep], config.Candidate{LogicModel: "small", Weight: 100}); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateDeployment(ctx, s.dep70, config.Deployment{Provider: "openai", UpstreamModel: "gpt-4o-mini", Weight: 50, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateDeployment(ctx, s.dep30, config.Deployment{Provider: "claude", UpstreamModel: "claude-haiku", Weight: 50, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	v3, err := st.Publish(ctx, store.PublishInput{Author: "bob", Message: "deep on small, 50/50", Check: check})
	if err != nil {
		t.Fatal(err)
	}

	// Rolling back to v1 publishes v4 with v1's bytes and resets the draft.
	v4, err := st.Publish(ctx, store.PublishInput{Author: "carol", Message: "back to v1", RollbackTo: 1, Check: check})
	if err != nil {
		t.Fatal(err)
	}
	if v4.Version.Number != 4 || *v4.Version.RollbackOf != 1 {
		t.Fatalf("rollback version: %+v", v4.Version)
	}
	if v4.Version.Snapshot != v1.Version.Snapshot {
		t.Fatalf("rollback snapshot differs from v1:\n%s\n---\n%s", v4.Version.Snapshot, v1.Version.Snapshot)
	}
	draft, _, _ := st.Draft(ctx)
	text, _ := config.Encode(draft)
	if string(text) != v1.Version.Snapshot {
		t.Fatal("the draft was not reset to v1")
	}
	// History is never rewritten.
	if got, _ := st.Version(ctx, 3); got.Snapshot != v3.Version.Snapshot {
		t.Fatal("v3 changed")
	}
	if _, err := st.DB().ExecContext(ctx, `UPDATE config_versions SET message='x' WHERE number=1`); err == nil {
		t.Fatal("a version could be updated")
	}

	// Export → import into a fresh installation's draft → publish: byte-identical.
	// (Here: import v3's text over the current draft.)
	v3snap, err := config.Decode([]byte(v3.Version.Snapshot))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReplaceDraft(ctx, v3snap); err != nil {
		t.Fatal(err)
	}
	v5, err := st.Publish(ctx, store.PublishInput{Author: "ci", Message: "import v3", Check: check})
	if err != nil {
		t.Fatal(err)
	}
	if v5.Version.Snapshot != v3.Version.Snapshot {
		t.Fatalf("import round trip not byte-identical:\n%s\n---\n%s", v5.Version.Snapshot, v3.Version.Snapshot)
	}
	for _, v := range []store.PublishOutcome{v1, v2, v3, v4, v5} {
		if strings.Contains(v.Version.Snapshot, knownSecret) || strings.Contains(v.Version.Snapshot, "KNOWN-SECRET") {
			t.Fatalf("version %d contains a secret", v.Version.Number)
		}
	}
}

func TestReplaceDraftRefusesBrokenReferencesAndKeepsDraft(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	seed(t, st)
	before, _, _ := st.Draft(ctx)
	bad := config.Clone(before)
	bad.Callers[0].RouteGroup = "ghost"
	bad.LogicModels[0].Deployments[0].Provider = "nobody"
	_, err := st.ReplaceDraft(ctx, bad)
	var ve *config.ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) != 2 {
		t.Fatalf("want two reference errors, got %v", err)
	}
	after, _, _ := st.Draft(ctx)
	a, _ := config.Encode(before)
	b, _ := config.Encode(after)
	if !bytes.Equal(a, b) {
		t.Fatal("a refused import changed the draft")
	}
	// New objects without ids are created; a key unknown here is dropped with a note.
	imp := config.Clone(before)
	imp.Tenants = append(imp.Tenants, config.Tenant{Name: "acme"})
	imp.RouteGroups = append(imp.RouteGroups, config.RouteGroup{Name: "acme-pool", Tenant: "acme", Fallback: "default",
		Tiers: []config.Tier{{Name: config.TierFast, TimeoutMS: 1000, FirstChunkTimeoutMS: 500, Candidates: []config.Candidate{{LogicModel: "small", Priority: 1, Weight: 100}}}}})
	imp.Providers[0].Keys = append(imp.Providers[0].Keys, config.ProviderKey{ID: 777, Label: "elsewhere", Fingerprint: "sk-…zzzz", Status: config.KeyActive})
	notes, err := st.ReplaceDraft(ctx, imp)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0].Message, "key 777") {
		t.Fatalf("notes: %+v", notes)
	}
	got, _, _ := st.Draft(ctx)
	g := got.RouteGroups[0]
	if g.Name != "acme-pool" || g.Tenant != "acme" || g.Fallback != "default" || len(g.Tiers) != 3 || g.Tier(config.TierDeep).TimeoutMS != 180000 {
		t.Fatalf("imported group: %+v", g)
	}
}

func TestConcurrentPublishesGetDistinctNumbers(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	s := seed(t, st)
	var wg sync.WaitGroup
	results := make(chan int64, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each publisher edits, then publishes; edits and publishes interleave.
			_ = st.UpdateTier(ctx, s.tiers[config.TierFast], 10000+i, 1000)
			out, err := st.Publish(ctx, store.PublishInput{Author: "p", Message: "race", Check: check})
			if err == nil {
				results <- out.Version.Number
			} else if !errors.Is(err, store.ErrNothingToPublish) {
				t.Errorf("publish: %v", err)
			}
		}()
	}
	wg.Wait()
	close(results)
	seen := map[int64]bool{}
	for n := range results {
		if seen[n] {
			t.Fatalf("version %d published twice", n)
		}
		seen[n] = true
	}
	latest, _ := st.LatestVersionNumber(ctx)
	if int(latest) != len(seen) || latest == 0 {
		t.Fatalf("latest %d but %d publishes succeeded", latest, len(seen))
	}
	// The last edit is never lost: it is either published or still in the draft.
	draft, _, _ := st.Draft(ctx)
	live, _ := st.LatestVersion(ctx)
	text, _ := config.Encode(draft)
	if fast := draft.RouteGroups[0].Tier(config.TierFast).TimeoutMS; fast < 10000 {
		t.Fatalf("edit lost: fast timeout %d", fast)
	}
	_ = text
	_ = live
}
