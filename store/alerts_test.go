package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"switchyard/routing/alert"
	"switchyard/store/storetest"
)

// The migration seeds the default rules; an evaluation pass stores states
// and turns each notice into one event however often the pass is saved
// again, with one delivery per enabled channel; deliveries come back due
// with the channel's opened URL and leave once delivered.
func TestAlertPassesAndDeliveries(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	rules, err := st.AlertRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != len(alert.Defaults()) || rules[0].Kind != alert.KindTierUnservable || rules[0].For != 30*time.Second {
		t.Fatalf("seeded rules: %+v", rules)
	}
	const hook = "https://hooks.example.com/services/T000/B000/secretpart"
	ch, err := st.CreateAlertChannel(ctx, "ops", alert.ShapeSlack, hook)
	if err != nil {
		t.Fatal(err)
	}
	chans, _ := st.AlertChannels(ctx)
	if len(chans) != 1 || strings.Contains(chans[0].Hint, "secretpart") || chans[0].Hint != "https://hooks.example.com/…" {
		t.Fatalf("channels: %+v", chans)
	}

	now := time.Now().Truncate(time.Millisecond)
	r := rules[0]
	subj := alert.Subject{Kind: alert.SubjectTier, Name: "main/deep"}
	states := []alert.State{{RuleID: r.ID, Subject: subj, Status: alert.StatusFiring, Since: now.Add(-30 * time.Second), FiredAt: now}}
	n := alert.Notice{Rule: r, Subject: subj, Event: alert.EventFiring, FiredAt: now, At: now}
	for i, want := range []int{1, 0} {
		added, err := st.SaveAlertPass(ctx, []int64{r.ID}, states, []alert.Notice{n}, now)
		if err != nil || added != want {
			t.Fatalf("pass %d: added %d (%v), want %d", i, added, err, want)
		}
	}
	firing, err := st.FiringAlerts(ctx)
	if err != nil || len(firing) != 1 || firing[0].State.Subject != subj || firing[0].Rule.Kind != alert.KindTierUnservable {
		t.Fatalf("firing: %+v (%v)", firing, err)
	}
	due, err := st.DueAlertDeliveries(ctx, now, 10)
	if err != nil || len(due) != 1 || due[0].URL != hook || due[0].ChannelID != ch || due[0].Notice.DedupKey() != n.DedupKey() {
		t.Fatalf("due: %+v (%v)", due, err)
	}
	if err := st.AlertDeliveryFailed(ctx, due[0].EventID, ch, "503", now.Add(time.Minute), false); err != nil {
		t.Fatal(err)
	}
	if due, _ = st.DueAlertDeliveries(ctx, now, 10); len(due) != 0 {
		t.Fatalf("a delivery backing off is due: %+v", due)
	}
	due, _ = st.DueAlertDeliveries(ctx, now.Add(time.Minute), 10)
	if len(due) != 1 || due[0].Attempts != 1 {
		t.Fatalf("due after back-off: %+v", due)
	}
	if err := st.AlertDelivered(ctx, due[0].EventID, ch, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	evs, err := st.AlertEvents(ctx, 10)
	if err != nil || len(evs) != 1 || evs[0].Delivered != 1 || evs[0].Waiting != 0 {
		t.Fatalf("events: %+v (%v)", evs, err)
	}

	// A silenced rule's resolution is stored but sends nothing.
	r.SilencedUntil = now.Add(time.Hour)
	if err := st.UpdateAlertRule(ctx, r); err != nil {
		t.Fatal(err)
	}
	res := alert.Notice{Rule: r, Subject: subj, Event: alert.EventResolved, FiredAt: now, At: now.Add(time.Minute)}
	if _, err := st.SaveAlertPass(ctx, []int64{r.ID}, nil, []alert.Notice{res}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if due, _ = st.DueAlertDeliveries(ctx, now.Add(time.Hour), 10); len(due) != 0 {
		t.Fatalf("a silenced rule sent %+v", due)
	}
	if firing, _ = st.FiringAlerts(ctx); len(firing) != 0 {
		t.Fatalf("still firing: %+v", firing)
	}
	if err := st.UpdateAlertRule(ctx, rules[3]); err != nil {
		t.Fatal(err)
	}
	bad := rules[3]
	bad.Params.Percent = -5
	if err := st.UpdateAlertRule(ctx, bad); err == nil {
		t.Fatal("a negative budget percent was stored")
	}
}
