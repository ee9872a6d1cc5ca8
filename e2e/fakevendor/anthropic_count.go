package fakevendor

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// anthropicCountTokens answers POST /v1/messages/count_tokens like the
// real API: {"input_tokens": N}, N counted as the fake counts prompts
// (ceil(bytes of system and message text / 4), at least 1). Faults apply
// as to any request; the body is kept for LastBody.
func (s *Server) anthropicCountTokens(c *call) {
	var req anthropicRequest
	perr := json.Unmarshal(c.body, &req)
	c.model = req.Model
	_, c.webSearch = req.offers()
	if !c.begin() {
		return
	}
	switch {
	case perr != nil:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "There was an issue with the request body: " + perr.Error()})
		return
	case req.Model == "":
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "model: Field required"})
		return
	case len(req.Messages) == 0:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "messages: at least one message is required"})
		return
	}
	n := len(textOf(req.System))
	for _, m := range req.Messages {
		n += len(textOf(m.Content))
	}
	tokens := max((n+3)/4, 1)
	c.writeJSON(http.StatusOK, []byte(`{"input_tokens":`+strconv.Itoa(tokens)+`}`))
}
