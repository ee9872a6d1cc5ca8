package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/lib/pq"

	"switchyard/routing/live"
)

// Listen delivers the notices of NotifyChannel until ctx ends (a payload it
// does not know as a live.NoticeUnknown). After a lost connection it
// delivers live.ReconnectNotice, since notifications may have been
// missed meanwhile; the receiver should then reload everything. It listens
// on ListenDSN: a pooler in transaction mode cannot keep a LISTEN session.
// It returns at once even while PostgreSQL is unreachable, and stops
// reconnecting when ctx ends.
func (s *Store) Listen(ctx context.Context, log *slog.Logger) <-chan live.Notice {
	out := make(chan live.Notice, 16)
	l := pq.NewListener(s.ListenDSN(), 100*time.Millisecond, 5*time.Second, func(ev pq.ListenerEventType, err error) {
		switch ev {
		case pq.ListenerEventConnectionAttemptFailed, pq.ListenerEventDisconnected:
			log.Warn("config listener lost PostgreSQL; relying on the periodic check", "err", err)
		case pq.ListenerEventReconnected:
			log.Info("config listener reconnected")
		}
	})
	// pq's Listen blocks until a connection exists: while PostgreSQL is
	// down that is forever, so it runs on its own and Close (when ctx ends)
	// releases it. The caller never waits on PostgreSQL here.
	go func() {
		if err := l.Listen(NotifyChannel); err != nil && ctx.Err() == nil {
			log.Warn("config listener cannot listen; relying on the periodic check", "err", err)
		}
	}()
	go func() {
		defer close(out)
		defer l.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case n, ok := <-l.Notify:
				if !ok {
					return
				}
				note := live.ReconnectNotice
				if n != nil {
					note, _ = live.ParseNotice(n.Extra) // unknown: something may have changed
				}
				select {
				case out <- note:
				default: // a reload is already pending
				}
			}
		}
	}()
	return out
}
