package routing

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"switchyard/routing/adapter"
)

// readBody reads the request body within the size limit and checks UTF-8.
func (x *exchange) readBody() ([]byte, bool) {
	max := x.j.MaxBody
	if max <= 0 {
		max = 10 << 20
	}
	return x.readBodyUpTo(max, "")
}

// readBodyUpTo reads the body, refusing one larger than max with a 413
// that names what (e.g. "count_tokens ") the bound is for.
func (x *exchange) readBodyUpTo(max int64, what string) ([]byte, bool) {
	if x.req.Body == nil {
		x.req.Body = strings.NewReader("")
	}
	if !x.chargeBody(max + 1) {
		return nil, false
	}
	body, ok := x.readBodyBytes(max, what)
	x.trueUpBody(len(body))
	return body, ok
}

func (x *exchange) readBodyBytes(max int64, what string) ([]byte, bool) {
	var body []byte
	var err error
	if n := x.req.BodyLen; n > 0 && n <= max {
		// The declared length (the server holds the body to it): one
		// allocation of the right size.
		body = make([]byte, n)
		var got int
		got, err = io.ReadFull(x.req.Body, body)
		body = body[:got]
	} else {
		body, err = io.ReadAll(io.LimitReader(x.req.Body, max+1))
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		x.reject(http.StatusRequestTimeout, CodeRequestTimeout, adapter.ClassBadRequest, "the request body did not arrive within the server's read timeout")
		return nil, false
	}
	if err != nil {
		x.reject(http.StatusBadRequest, CodeInvalidRequest, adapter.ClassBadRequest, "could not read the request body: "+err.Error())
		return nil, false
	}
	if int64(len(body)) > max {
		x.reject(http.StatusRequestEntityTooLarge, CodeInvalidRequest, adapter.ClassBadRequest, "the "+what+"request body is larger than "+formatBytes(max)+"; send a smaller one")
		return nil, false
	}
	if !utf8.Valid(body) {
		x.reject(http.StatusBadRequest, CodeInvalidRequest, adapter.ClassBadRequest, "the request body is not valid UTF-8")
		return nil, false
	}
	return body, true
}

// formatBytes says a byte bound in whole MB or KB when it is one, else in
// bytes.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
