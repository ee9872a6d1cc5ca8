package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/storetest"
)

// TestTokenCapAndNormalClassRoundTrip: a deployment's max_inflight_tokens
// and the normal priority class are kept by the draft, published into the
// version text, restored by a rollback and carried by export → import.
func TestTokenCapAndNormalClassRoundTrip(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	s := seed(t, st)
	dep := config.Deployment{Provider: "openai", UpstreamModel: "gpt-4o-mini", Weight: 70, Enabled: true, MaxConcurrency: 8, MaxInflightTokens: 24000,
		Prices: config.Prices{InputMicros: 150_000, OutputMicros: 600_000, CachedMicros: 75_000, Currency: "USD"}}
	if err := st.UpdateDeployment(ctx, s.dep70, dep); err != nil {
		t.Fatal(err)
	}
	reports, err := st.CreateCaller(ctx, config.Caller{Name: "reports", RouteGroup: "default", PriorityClass: config.ClassNormal, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	v1, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "token cap, normal caller", Check: check})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"max_inflight_tokens: 24000", "priority_class: normal"} {
		if !strings.Contains(v1.Version.Snapshot, want) {
			t.Fatalf("published text lacks %q:\n%s", want, v1.Version.Snapshot)
		}
	}
	// Change both, publish, roll back: v1's values come back.
	dep.MaxInflightTokens = 0
	if err := st.UpdateDeployment(ctx, s.dep70, dep); err != nil {
		t.Fatal(err)
	}
	draft, _, _ := st.Draft(ctx)
	c := callerNamed(t, draft, "reports")
	c.PriorityClass = config.ClassBatch
	if err := st.UpdateCaller(ctx, reports, c); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "no cap, batch", Check: check}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "back", RollbackTo: 1, Check: check}); err != nil {
		t.Fatal(err)
	}
	assertV1 := func(how string) {
		t.Helper()
		draft, _, err := st.Draft(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := deploymentNamed(t, draft, "gpt-4o-mini"); d.MaxInflightTokens != 24000 || d.MaxConcurrency != 8 {
			t.Fatalf("%s: deployment caps %d slots, %d tokens; want 8, 24000", how, d.MaxConcurrency, d.MaxInflightTokens)
		}
		if c := callerNamed(t, draft, "reports"); c.PriorityClass != config.ClassNormal {
			t.Fatalf("%s: caller class %q, want normal", how, c.PriorityClass)
		}
		if text, _ := config.Encode(draft); string(text) != v1.Version.Snapshot {
			t.Fatalf("%s: draft differs from v1", how)
		}
	}
	assertV1("after rollback")

	// Export v1 → import over a changed draft.
	dep.MaxInflightTokens = 5
	if err := st.UpdateDeployment(ctx, s.dep70, dep); err != nil {
		t.Fatal(err)
	}
	snap, err := config.Decode([]byte(v1.Version.Snapshot))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReplaceDraft(ctx, snap); err != nil {
		t.Fatal(err)
	}
	assertV1("after import")

	// The store refuses what validation refuses.
	dep.MaxInflightTokens = -1
	var ve *config.ValidationError
	if err := st.UpdateDeployment(ctx, s.dep70, dep); !errors.As(err, &ve) || ve.Fields["max_inflight_tokens"] == "" {
		t.Fatalf("negative max_inflight_tokens: %v", err)
	}
	c.PriorityClass = "urgent"
	if err := st.UpdateCaller(ctx, reports, c); !errors.As(err, &ve) || ve.Fields["priority_class"] == "" {
		t.Fatalf("unknown class: %v", err)
	}
	// An existing row keeps its class; the column's default for rows that
	// name none is normal.
	var class string
	if err := st.DB().QueryRowContext(ctx, `SELECT priority_class FROM callers WHERE id=$1`, s.caller).Scan(&class); err != nil || class != "interactive" {
		t.Fatalf("seeded caller's class %q, %v", class, err)
	}
	if err := st.DB().QueryRowContext(ctx, `SELECT column_default FROM information_schema.columns WHERE table_name='callers' AND column_name='priority_class'`).Scan(&class); err != nil || !strings.Contains(class, "normal") {
		t.Fatalf("priority_class default %q, %v", class, err)
	}
}

func callerNamed(t *testing.T, s config.Snapshot, name string) config.Caller {
	t.Helper()
	for _, c := range s.Callers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no caller %s", name)
	return config.Caller{}
}

func deploymentNamed(t *testing.T, s config.Snapshot, upstream string) config.Deployment {
	t.Helper()
	for _, m := range s.LogicModels {
		for _, d := range m.Deployments {
			if d.UpstreamModel == upstream {
				return d
			}
		}
	}
	t.Fatalf("no deployment %s", upstream)
	return config.Deployment{}
}
