package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/lib/pq"
)

// Listen delivers the payloads of NotifyChannel until ctx ends. After a lost
// connection it delivers "reconnect", since notifications may have been
// missed meanwhile; the receiver should then reload everything. It listens
// on ListenDSN: a pooler in transaction mode cannot keep a LISTEN session.
func (s *Store) Listen(ctx context.Context, log *slog.Logger) <-chan string {
	out := make(chan string, 16)
	l := pq.NewListener(s.ListenDSN(), 100*time.Millisecond, 5*time.Second, func(ev pq.ListenerEventType, err error) {
		switch ev {
		case pq.ListenerEventConnectionAttemptFailed, pq.ListenerEventDisconnected:
			log.Warn("config listener lost PostgreSQL; relying on the periodic check", "err", err)
		case pq.ListenerEventReconnected:
			log.Info("config listener reconnected")
		}
	})
	if err := l.Listen(NotifyChannel); err != nil {
		log.Warn("config listener cannot listen yet; will retry", "err", err)
	}
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
				payload := "reconnect"
				if n != nil {
					payload = n.Extra
				}
				select {
				case out <- payload:
				default: // a reload is already pending
				}
			}
		}
	}()
	return out
}
