package guard

import (
	"context"
	"io"
	"net"
)

// Listener caps the open connections per client address (ConnsPerIP). A
// connection over the cap gets a bare 429 and is closed, off the accept
// loop, so one address cannot hold the others' accepts. ln is returned
// as is when there is no cap.
func (l Limits) Listener(ln net.Listener) net.Listener {
	if l.ConnsPerIP <= 0 {
		return ln
	}
	return &listener{Listener: ln, conns: newPerIP(l.ConnsPerIP)}
}

type listener struct {
	net.Listener
	conns *perIP
}

func (ln *listener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		release, ok := ln.conns.acquire(context.Background(), ClientIP(c.RemoteAddr().String()), 0)
		if !ok {
			go refuseConn(c)
			continue
		}
		return &conn{Conn: c, release: release}, nil
	}
}

const tooManyConns = "too many connections from your address; close idle ones or retry shortly\n"

// refuseConn answers a connection over the cap before reading its request
// (HTTP/1.1 lets a server answer early), half-closes it and reads a little
// so the client gets the answer rather than a reset, then closes it. It
// never takes more than a second.
func refuseConn(c net.Conn) { answerAndClose(c, "429 Too Many Requests", tooManyConns) }

// conn frees its address's slot when closed. It keeps the TCP features
// net/http uses: CloseWrite (a clean close after an early answer) and
// ReadFrom (sendfile).
type conn struct {
	net.Conn
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// CloseWrite half-closes the connection when the transport can.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom lets the transport copy directly (sendfile) when it can.
func (c *conn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}
