package frontdoor

import (
	"time"

	"switchyard/routing/adapter"
)

// ResponsesDoor is OpenAI's Responses API (POST /v1/responses). It parses
// the body into the canonical chat request (ParseResponsesRequest,
// the original kept for native pass-through), and renders answers as the
// Responses API's Response object and stream events: natively (an OpenAI
// deployment declaring responses_api answered in that shape; the door sets
// the model and renumbers the events) or translated from the adapters'
// chat completions. The gateway is stateless: nothing is stored, and what
// would need storage is refused by the parser with a 400. Errors use
// OpenAI's error object, as the Responses API does.
type ResponsesDoor struct{}

func (ResponsesDoor) Parse(body []byte) (*adapter.ChatRequest, error) {
	r, err := ParseResponsesRequest(body)
	if err != nil {
		return nil, err
	}
	return r.Chat, nil
}

// responsesView is the door's typed view of req.
func responsesView(req *adapter.ChatRequest) *ResponsesRequest {
	if req != nil && req.Native != nil {
		if r, ok := req.Native.View.(*ResponsesRequest); ok {
			return r
		}
	}
	return &ResponsesRequest{Chat: req}
}

func (ResponsesDoor) Answer(dst []byte, req *adapter.ChatRequest, res *adapter.ChatResult, model, requestID string, native bool) ([]byte, error) {
	if native {
		return AppendAnswerModel(dst, res.Body, model), nil
	}
	ids := ResponseIDs{Base: ResponseIDBase(requestID)}
	b, err := ResponsesFromChat(responsesView(req), res.Body, ids, model, time.Now().Unix(), res.Usage)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

func (ResponsesDoor) Stream(req *adapter.ChatRequest, model, requestID string, native bool) Stream {
	ids := ResponseIDs{Base: ResponseIDBase(requestID)}
	return &responsesStream{ev: NewResponsesEvents(responsesView(req), ids, model, time.Now().Unix()), native: native}
}

func (ResponsesDoor) Error(status int, code, msg string, param *string) []byte {
	return ErrorJSON(status, code, msg, param)
}

// responsesStream renders a committed stream as Responses events: a native
// upstream's events relayed (renumbered, the model set), or a translated
// chat stream turned into the event sequence.
type responsesStream struct {
	ev     *ResponsesEvents
	native bool
}

func (s *responsesStream) Chunk(dst []byte, ch adapter.Chunk) []byte {
	if s.native {
		return s.ev.Relay(dst, ch.Data)
	}
	return s.ev.Chunk(dst, ch.Data)
}

// End closes a translated stream with response.completed (or
// response.incomplete); a native one already relayed the vendor's.
func (s *responsesStream) End(dst []byte, u adapter.Usage) []byte {
	if s.native {
		return dst
	}
	return s.ev.Done(dst, u)
}

func (s *responsesStream) Fail(dst []byte, status int, code, msg string) []byte {
	return s.ev.Fail(dst, errorTypeOf(status), code, msg)
}

// errorTypeOf is the OpenAI error type of a status, as a stream's error
// event carries it.
func errorTypeOf(status int) string {
	if status >= 500 {
		return "server_error"
	}
	return ErrorType(status)
}
