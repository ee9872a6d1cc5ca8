package routing

import (
	"errors"
	"net/http"
	"strconv"

	"switchyard/routing/adapter"
	"switchyard/routing/frontdoor"
	"switchyard/routing/record"
)

// reject answers with an error in the front door's shape and records a
// rejected call.
func (x *exchange) reject(status int, code ErrorCode, class adapter.Class, msg string) {
	x.rec.Status = record.StatusRejected
	x.rec.ErrorCode, x.rec.ErrorClass, x.rec.HTTPStatus = string(code), class, status
	x.writeError(status, code, msg, nil)
}

func (x *exchange) writeError(status int, code ErrorCode, msg string, param *string) {
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		// A refusal that a retry cannot change carries no wait to retry after.
		if x.a.Header.Get("Retry-After") == "" && x.a.Header.Get("x-should-retry") != "false" {
			x.a.Header.Set("Retry-After", "1")
		}
	}
	x.writeBody(status, "application/json", x.door().Error(status, string(code), msg, param))
}

// writeBody sets a complete answer, keeping a copy for idempotency.
func (x *exchange) writeBody(status int, ctype string, body []byte) {
	x.rec.HTTPStatus = status
	setShared(x.a.Header, "Content-Type", ctype)
	x.contentLength[0] = strconv.Itoa(len(body))
	x.a.Header["Content-Length"] = x.contentLength[:]
	if x.idem.capture != nil {
		x.idem.capture.status, x.idem.capture.ctype = status, ctype
		x.idem.capture.buf = append(x.idem.capture.buf, body...)
	}
	x.a.Status, x.a.Body = status, body
}

// invalid answers a request the parser refused.
func (x *exchange) invalid(err error) {
	var re *frontdoor.RequestError
	var param *string
	msg, code := err.Error(), CodeInvalidRequest
	if errors.As(err, &re) {
		if re.Param != "" {
			p := re.Param
			param = &p
		}
		msg = re.Message
		if re.Code != "" {
			code = ErrorCode(re.Code)
		}
	}
	x.rec.Status, x.rec.ErrorCode, x.rec.ErrorClass = record.StatusRejected, string(code), adapter.ClassBadRequest
	x.a.Header.Set("x-should-retry", "false")
	x.writeError(http.StatusBadRequest, code, msg, param)
}

// TierExplicit is X-Switchyard-Tier for a request that named a logic model.
const TierExplicit = "explicit"

// tierHeader is X-Switchyard-Tier: the tier asked for (or forced), or
// "explicit" for a request that named a logic model — not a tier the model
// happens to appear in.
func (x *exchange) tierHeader() string {
	if x.explicit {
		return TierExplicit
	}
	return x.tier
}

// routeHeaders sets the X-Switchyard-* headers of a served request.
func (x *exchange) routeHeaders(served Served) {
	h := x.a.Header
	setShared(h, "X-Switchyard-Tier", x.tierHeader())
	if d := served.Deployment; d != nil {
		setShared(h, "X-Switchyard-Model", d.Model.Code)
		setShared(h, "X-Switchyard-Provider", d.Provider.Name)
	}
	h["X-Switchyard-Attempts"] = countValue(served.Attempts)
}
