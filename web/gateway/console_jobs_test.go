package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/handlers"
	"switchyard/store"
	"switchyard/web/gateway"
	"switchyard/web/gateway/gatewaytest"
	"switchyard/web/webtest"
	"switchyard/web/worker"
)

func TestJobsPage(t *testing.T) {
	t.Parallel()
	rdb, prefix := gatewaytest.NewRedis(t)
	release := make(chan struct{})
	blocking := make(chan struct{})
	var runner *worker.Runner
	env := webtest.New(t, func(h *handlers.Handler) {
		runner = worker.New(worker.Options{Redis: rdb, Prefix: prefix, Instance: "worker-7", Runs: h.JobLog.(worker.RunLog), LeaseTTL: 5 * time.Second},
			worker.Job{Name: "health-probe", Description: "Probes deployments.", Every: time.Minute, Run: func(context.Context) (string, error) {
				return "probed 2 of 2 deployments", nil
			}},
			worker.Job{Name: "calllog-partitions", Description: "Keeps partitions.", Every: time.Hour, Run: func(ctx context.Context) (string, error) {
				select {
				case <-blocking:
					return "", errors.New("lock timeout")
				default:
				}
				close(blocking)
				<-release
				return "partitions ready", nil
			}},
		)
		h.Jobs = gateway.JobsOps{R: runner}
	})
	workerPages(t, env)
	ctx := context.Background()
	// The probe's run fills this minute's slot; its next run is the next
	// minute, "due now" once that has begun.
	slot := time.Now().Truncate(time.Minute)
	if ran, err := runner.Check(ctx, "health-probe"); !ran || err != nil {
		t.Fatalf("health-probe: %v %v", ran, err)
	}
	// calllog-partitions is running (holding its lease) while the page loads.
	done := make(chan struct{})
	go func() { defer close(done); _, _ = runner.Check(ctx, "calllog-partitions") }()
	<-blocking

	admin := env.Login(t, "ops", store.RoleAdmin)
	res, doc := admin.Get("/jobs")
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "jobs-table").Length() != 1 {
		t.Fatalf("GET /jobs: %d", res.StatusCode)
	}
	probe := webtest.TestID(doc, "job-health-probe")
	if got := probe.Find(`[data-testid="job-last"]`).Text(); !strings.Contains(got, "ok") || !strings.Contains(got, "worker-7") || !strings.Contains(got, "probed 2 of 2") {
		t.Fatalf("last run %q", got)
	}
	if got := probe.Find(`[data-testid="job-holder"]`).Text(); !strings.Contains(got, "free") {
		t.Fatalf("holder %q", got)
	}
	got := probe.Find(`[data-testid="job-next"]`).Text()
	crossed := !time.Now().Truncate(time.Minute).Equal(slot) // a minute began meanwhile: either is right
	if !strings.Contains(got, "in ") && !(crossed && strings.Contains(got, "due now")) {
		t.Fatalf("next run %q", got)
	}
	if got := probe.Find(`[data-testid="job-duration"]`).Text(); !strings.Contains(got, "ms") {
		t.Fatalf("duration %q", got)
	}
	parts := webtest.TestID(doc, "job-calllog-partitions")
	if got := parts.Find(`[data-testid="job-holder"]`).Text(); !strings.Contains(got, "worker-7") || !strings.Contains(got, "running") {
		t.Fatalf("holder of a running job %q", got)
	}
	if got := parts.Find(`[data-testid="job-last"]`).Text(); !strings.Contains(got, "running") {
		t.Fatalf("last run of a running job %q", got)
	}
	if webtest.TestID(doc, "job-runs-health-probe").Find(`[data-testid="job-run"]`).Length() != 1 {
		t.Fatal("recent runs missing")
	}
	if !strings.Contains(webtest.TestID(doc, "rollups-note").Text(), "Cost roll-ups") {
		t.Fatal("no roll-up note")
	}
	if webtest.TestID(doc, "job-run-now").Length() != 2 {
		t.Fatal("admin has no Run now buttons")
	}
	close(release)
	<-done

	// Run now (plain form post): a request the workers pick up.
	res, _ = admin.NoRedirects().PostForm("/jobs/health-probe/run", nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/jobs" {
		t.Fatalf("run now: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	_, doc = admin.Get("/jobs")
	if got := webtest.TestID(doc, "job-health-probe").Find(`[data-testid="job-next"]`).Text(); !strings.Contains(got, "requested") {
		t.Fatalf("next run after Run now %q", got)
	}
	if !strings.Contains(webtest.TestID(doc, "flash").Text(), "Requested health-probe") {
		t.Fatal("no flash")
	}
	if ran, err := runner.Check(ctx, "health-probe"); !ran || err != nil {
		t.Fatalf("requested run: %v %v", ran, err)
	}
	// htmx: the refreshed board fragment.
	admin.HTMX = true
	res, doc = admin.PostForm("/jobs/calllog-partitions/run", nil)
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "nav").Length() != 0 ||
		!strings.Contains(webtest.TestID(doc, "job-calllog-partitions").Find(`[data-testid="job-next"]`).Text(), "requested") {
		t.Fatalf("htmx run now: %d", res.StatusCode)
	}
	res, _ = admin.PostForm("/jobs/nope/run", nil)
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown job: %d", res.StatusCode)
	}
	admin.HTMX = false

	// Viewers see the page but cannot run anything.
	viewer := env.Login(t, "watcher", store.RoleViewer)
	_, doc = viewer.Get("/jobs")
	if webtest.TestID(doc, "jobs-table").Length() != 1 || webtest.TestID(doc, "job-run-now").Length() != 0 {
		t.Fatal("viewer page wrong")
	}
	if res, _ := viewer.PostForm("/jobs/health-probe/run", nil); res.StatusCode != http.StatusForbidden {
		t.Fatalf("viewer run now: %d", res.StatusCode)
	}
	runs, _ := env.Store.JobRuns(ctx, "health-probe", 10)
	if len(runs) != 2 {
		t.Fatalf("%d runs of health-probe, want 2", len(runs))
	}
}
