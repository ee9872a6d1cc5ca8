package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"switchyard/store/calllog"
	"switchyard/store/redis/loadcount"
	"switchyard/store/storetest"
	"switchyard/web/gateway/gatewaytest"
	"switchyard/web/worker"
)

func TestPartitionsJob(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	db := st.DB()
	// A partition from long ago, past a 30-day retention.
	old := time.Now().AddDate(0, 0, -40)
	if err := calllog.EnsurePartitions(ctx, db, old, 0); err != nil {
		t.Fatal(err)
	}
	exists := func(name string) bool {
		var ok bool
		if err := db.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	job := worker.PartitionsJob(db, time.Hour, 2, 30*24*time.Hour)
	summary, err := job.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= 2; i++ {
		if name := calllog.PartitionName(time.Now().AddDate(0, 0, i)); !exists(name) {
			t.Errorf("partition %s missing", name)
		}
	}
	if name := calllog.PartitionName(old); exists(name) || !strings.Contains(summary, name) {
		t.Fatalf("old partition %s still there or not reported: %q", name, summary)
	}
	// Retention off: nothing is dropped.
	if err := calllog.EnsurePartitions(ctx, db, old, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := worker.PartitionsJob(db, time.Hour, 2, 0).Run(ctx); err != nil {
		t.Fatal(err)
	}
	if !exists(calllog.PartitionName(old)) {
		t.Fatal("retention 0 dropped a partition")
	}
}

func TestLoadRepairJob(t *testing.T) {
	rdb, prefix := gatewaytest.NewRedis(t)
	ctx := context.Background()
	c := loadcount.New(rdb, loadcount.Options{Prefix: prefix})
	defer c.Close()
	// Drift: a counter below zero, and one that lost its TTL.
	rdb.Set(ctx, prefix+":load:{1}", -2, 0)
	rdb.Set(ctx, prefix+":load:{2}", 3, 0)
	if _, err := worker.LoadRepairJob(c, time.Minute).Run(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, prefix+":load:{1}").Val(); n != 0 {
		t.Fatal("negative counter kept")
	}
	if ttl := rdb.PTTL(ctx, prefix+":load:{2}").Val(); ttl <= 0 {
		t.Fatalf("counter ttl %s after repair", ttl)
	}
}
