package worker

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"switchyard/store/calllog"
)

// PartitionsJob keeps the call-log partitions: the daily partitions for
// today through ahead days are created, and those wholly older than
// retention dropped (retention <= 0 keeps everything).
func PartitionsJob(db *sql.DB, every time.Duration, ahead int, retention time.Duration) Job {
	desc := fmt.Sprintf("Creates the daily call-log partitions %d days ahead", ahead)
	if retention > 0 {
		desc += fmt.Sprintf(" and drops those older than the retention (%d days, SWITCHYARD_CALLLOG_RETENTION_DAYS).", int(retention/(24*time.Hour)))
	} else {
		desc += "; retention is off, so none are dropped."
	}
	return Job{
		Name:        "calllog-partitions",
		Description: desc,
		Every:       every,
		Run: func(ctx context.Context) (string, error) {
			now := time.Now()
			if err := calllog.EnsurePartitions(ctx, db, now, ahead); err != nil {
				return "", err
			}
			summary := fmt.Sprintf("partitions ready through %s", now.UTC().AddDate(0, 0, ahead).Format("2006-01-02"))
			if retention <= 0 {
				return summary, nil
			}
			dropped, err := calllog.DropPartitions(ctx, db, now, retention)
			switch {
			case len(dropped) > 0:
				summary += "; dropped " + strings.Join(dropped, ", ")
			default:
				summary += "; nothing past retention"
			}
			return summary, err
		},
	}
}

// Repairer is the load-counter drift repair (loadcount.Counters).
type Repairer interface {
	Repair(ctx context.Context) error
}

// LoadRepairJob repairs drifted in-flight counters: counters at or below
// zero are deleted and counters without a TTL get one back.
func LoadRepairJob(c Repairer, every time.Duration) Job {
	return Job{
		Name:        "load-repair",
		Description: "Repairs drift in the shared in-flight counters (max concurrency): deletes counters at or below zero and restores a lost TTL, so a crashed instance's load cannot linger.",
		Every:       every,
		Run: func(ctx context.Context) (string, error) {
			if err := c.Repair(ctx); err != nil {
				return "", err
			}
			return "counters checked (repairs, if any, are in the log)", nil
		},
	}
}

// KeySweeper marks revoked the rotated caller keys whose grace has ended.
type KeySweeper interface {
	SweepRotatedKeys(ctx context.Context) (int64, error)
}

// RotationSweepJob marks rotated caller keys revoked (by "rotation") once
// their grace period has ended. The data plane already refuses them from
// that instant; this makes the console's lists say so.
func RotationSweepJob(s KeySweeper, every time.Duration) Job {
	return Job{
		Name:        "key-rotation-sweep",
		Description: "Marks rotated caller keys revoked (by rotation) once their grace period has ended; every instance already refuses them from that instant.",
		Every:       every,
		Run: func(ctx context.Context) (string, error) {
			n, err := s.SweepRotatedKeys(ctx)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%d rotated keys marked revoked", n), nil
		},
	}
}
