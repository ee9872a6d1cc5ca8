package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"

	"switchyard/routing/config"
	"switchyard/store/storetest"
)

// TestAcknowledgementOfferedOnlyWhenItCanPublish: an operator parks the
// deep tier's only candidate (a finding to acknowledge) and, in the same
// draft, breaks the weights of small (a blocking error). The dry-run says
// what to fix with a link to the control, and offers no acknowledgement
// input: typing one could never publish. Publishing is refused. After
// following the link and fixing the weight, the acknowledgement is offered,
// and typing it publishes.
func TestAcknowledgementOfferedOnlyWhenItCanPublish(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	st := seedPublished(t, dsn, "http://"+fakeAddr)
	snap, _, _ := st.Draft(context.Background())
	var smallDep, smallModel int64
	for _, m := range snap.LogicModels {
		if m.Code == "small" {
			smallDep, smallModel = m.Deployments[0].ID, m.ID
		}
	}
	s := startServer(t, dsn)
	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.login("admin", s.Admin)

	u.goto_("/route-groups")
	u.click(u.id("cand-main-deep-big").GetByTestId("cand-park"), "park deep's only candidate")
	u.see(u.id("cand-main-deep-big").GetByTestId("cand-unpark"), "parked, Unpark offered")
	u.goto_("/logic-models")
	row := u.id(fmt.Sprintf("deployment-row-%d", smallDep))
	u.fill(row.GetByTestId("deployment-weight"), "60", "small's weight")
	u.click(row.GetByTestId("deployment-weight-save"), "set the weight")
	u.see(u.id("weight-sum-warning"), "weights flagged")

	u.click(u.id("nav-dryrun"), "open dry-run")
	u.see(u.id("dryrun-blocking"), "blocking banner")
	fix := u.id("dryrun-blocking").GetByTestId("fix-first-link")
	if href, _ := fix.GetAttribute("href"); !strings.HasPrefix(href, "/logic-models#model-") {
		t.Fatalf("the error links to %q, not the weights' panel", href)
	}
	u.see(u.id("finding-tier_unservable"), "the finding to acknowledge is listed")
	if n, _ := u.id("ack-main-deep").Count(); n != 0 {
		t.Fatal("an acknowledgement input is offered while an error blocks")
	}
	if txt := u.text(u.id("ack-after-fix"), "what happens after the fix"); !strings.Contains(txt, "deep of route group main") {
		t.Fatalf("ack-after-fix: %q", txt)
	}
	u.fill(u.id("publish-message"), "park deep", "publish message")
	u.click(u.id("publish-submit"), "publish")
	u.see(u.id("publish-error"), "publish refused")
	if n, _ := u.id("ack-main-deep").Count(); n != 0 {
		t.Fatal("the refusal offers an acknowledgement while an error blocks")
	}

	// Follow the link to the control that fixes it, and fix it there.
	u.click(u.id("dryrun-blocking").GetByTestId("fix-first-link"), "follow the fix link")
	row = u.id(fmt.Sprintf("deployment-row-%d", smallDep))
	u.fill(row.GetByTestId("deployment-weight"), "100", "small's weight back")
	u.click(row.GetByTestId("deployment-weight-save"), "set the weight")
	u.see(u.p.Locator(fmt.Sprintf("#weights-%d", smallModel)).GetByTestId("weight-sum-value").Filter(playwright.LocatorFilterOptions{HasText: "100"}), "weights fine")

	u.click(u.id("nav-dryrun"), "dry-run again")
	u.see(u.id("dryrun-needs-ack"), "needs-acknowledgement banner")
	if n, _ := u.id("dryrun-blocking").Count(); n != 0 {
		t.Fatal("still blocking after the fix")
	}
	u.fill(u.id("publish-message"), "park deep", "publish message")
	u.fill(u.id("ack-main-deep"), "main/deep", "type the acknowledgement")
	u.click(u.id("publish-submit"), "publish anyway")
	u.see(u.id("version-2"), "version 2 in history")
	if txt := u.text(u.id("version-2").GetByTestId("version-acknowledged"), "acknowledgement badge"); !strings.Contains(txt, "main/deep") {
		t.Fatalf("history badge: %q", txt)
	}
}

// TestParkAndUnparkReadAsSuchThroughPublish: parking deep's only candidate
// with its Park button asks to acknowledge main/deep (no error), the
// change reads "parked", publishing works once acknowledged, and Unpark
// reads "unparked" and publishes without one. Parking the only deployment
// behind a candidate leads to the same choice.
func TestParkAndUnparkReadAsSuchThroughPublish(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	st := seedPublished(t, dsn, "http://"+fakeAddr)
	snap, _, _ := st.Draft(context.Background())
	var bigDep int64
	for _, m := range snap.LogicModels {
		if m.Code == "big" {
			bigDep = m.Deployments[0].ID
		}
	}
	s := startServer(t, dsn)
	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.login("admin", s.Admin)

	const parked = "parked candidate big in route group main, tier deep"
	u.goto_("/route-groups")
	u.click(u.id("cand-main-deep-big").GetByTestId("cand-park"), "park deep's only candidate")
	u.see(u.id("cand-main-deep-big").GetByTestId("cand-unpark"), "parked, Unpark offered")
	if w, _ := u.id("cand-main-deep-big").GetAttribute("data-weight"); w != "100" {
		t.Fatalf("parking changed the weight to %s", w)
	}
	u.click(u.id("nav-dryrun"), "open dry-run")
	u.see(u.id("dryrun-needs-ack"), "needs-acknowledgement banner")
	if n, _ := u.id("dryrun-blocking").Count(); n != 0 {
		t.Fatal("parking is an error")
	}
	msg := u.text(u.id("finding-tier_unservable"), "the finding")
	if !strings.Contains(msg, "candidate big is parked") || !strings.Contains(msg, "503") || strings.Contains(msg, "weight") {
		t.Fatalf("finding: %q", msg)
	}
	if txt := u.text(u.id("diff-semantic"), "what changes"); !strings.Contains(txt, parked) || strings.Contains(txt, "weight") {
		t.Fatalf("summary: %q", txt)
	}
	u.fill(u.id("publish-message"), "park deep", "publish message")
	u.fill(u.id("ack-main-deep"), "main/deep", "type the acknowledgement")
	u.click(u.id("publish-submit"), "publish anyway")
	u.see(u.id("version-2"), "version 2 in history")
	u.click(u.id("version-2").GetByTestId("diff-prev"), "diff with v1")
	if txt := u.text(u.id("diff-semantic"), "v1 → v2"); !strings.Contains(txt, parked) {
		t.Fatalf("version diff: %q", txt)
	}
	if diff := u.text(u.id("diff"), "text diff"); !strings.Contains(diff, "parked: true") || strings.Contains(diff, "weight: -") {
		t.Fatalf("text diff:\n%s", diff)
	}

	// Unpark: the same button, read as unparked, no acknowledgement needed.
	u.goto_("/route-groups")
	u.click(u.id("cand-main-deep-big").GetByTestId("cand-unpark"), "unpark")
	u.see(u.id("cand-main-deep-big").GetByTestId("cand-park"), "unparked, Park offered")
	u.click(u.id("nav-dryrun"), "dry-run")
	u.see(u.id("dryrun-clean"), "clean dry-run")
	if txt := u.text(u.id("diff-semantic"), "what changes"); !strings.Contains(txt, "unparked candidate big in route group main, tier deep") {
		t.Fatalf("summary: %q", txt)
	}
	u.fill(u.id("publish-message"), "deep back", "publish message")
	u.click(u.id("publish-submit"), "publish")
	u.see(u.id("version-3"), "version 3 in history")

	// Parking the only deployment behind deep: the same choice, not an error.
	u.goto_("/logic-models")
	u.click(u.id(fmt.Sprintf("deployment-row-%d", bigDep)).GetByTestId("deployment-park"), "park big's only deployment")
	u.see(u.id(fmt.Sprintf("deployment-row-%d", bigDep)).GetByTestId("deployment-unpark"), "parked, Unpark offered")
	u.click(u.id("nav-dryrun"), "dry-run")
	u.see(u.id("ack-main-deep"), "the acknowledgement is offered")
	if n, _ := u.id("dryrun-blocking").Count(); n != 0 {
		t.Fatal("parking the only deployment is an error")
	}
	if txt := u.text(u.id("diff-semantic"), "what changes"); !strings.Contains(txt, "parked deployment fake/fake-big of logic model big") {
		t.Fatalf("summary: %q", txt)
	}
}

// TestAcknowledgementOfLiveIsNotAskedAgain: main/deep acknowledged on v2;
// adding a caller to main leaves deep unservable for the same cause, so the
// dry-run shows it as acknowledged on v2 by admin with no input, and the
// publish goes through with nothing typed.
func TestAcknowledgementOfLiveIsNotAskedAgain(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	st := seedPublished(t, dsn, "http://"+fakeAddr)
	s := startServer(t, dsn)
	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.login("admin", s.Admin)

	u.goto_("/route-groups")
	u.click(u.id("cand-main-deep-big").GetByTestId("cand-park"), "park deep's only candidate")
	u.see(u.id("cand-main-deep-big").GetByTestId("cand-unpark"), "parked, Unpark offered")
	u.click(u.id("nav-dryrun"), "open dry-run")
	u.fill(u.id("publish-message"), "park deep", "publish message")
	u.fill(u.id("ack-main-deep"), "main/deep", "type the acknowledgement")
	u.click(u.id("publish-submit"), "publish anyway")
	u.see(u.id("version-2"), "version 2 in history")

	if _, err := st.CreateCaller(context.Background(), config.Caller{Name: "reports", RouteGroup: "main", PriorityClass: config.ClassNormal, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	u.click(u.id("nav-dryrun"), "dry-run with the new caller")
	u.see(u.id("dryrun-acks-standing"), "nothing left to acknowledge")
	if txt := u.text(u.id("ack-main-deep-standing"), "the carried acknowledgement"); !strings.Contains(txt, "acknowledged on v2") || !strings.Contains(txt, "by admin") {
		t.Fatalf("carried acknowledgement: %q", txt)
	}
	if n, _ := u.id("ack-main-deep").Count(); n != 0 {
		t.Fatal("main/deep is asked again")
	}
	u.fill(u.id("publish-message"), "add reports", "publish message")
	u.click(u.id("publish-submit"), "publish with nothing typed")
	u.see(u.id("version-3"), "version 3 in history")
}
