package fakevendor

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// serveControl answers the /_fake/ endpoints used by tests and the sandbox:
//
//	GET    /_fake/rules          current rules with match counts
//	PUT    /_fake/rules          replace all rules (JSON array of rules)
//	POST   /_fake/rules          append one rule (JSON object)
//	DELETE /_fake/rules          remove all rules
//	GET    /_fake/stats          counters (Stats)
//	POST   /_fake/reset          zero counters and FailTimes counts
//	GET    /_fake/last?model=M   the last request for model M
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/_fake/rules":
		switch r.Method {
		case http.MethodGet:
			controlJSON(w, http.StatusOK, s.Rules())
		case http.MethodPut:
			var rules []Rule
			if err := decodeStrict(r.Body, &rules); err != nil {
				controlError(w, http.StatusBadRequest, err)
				return
			}
			s.SetRules(rules...)
			controlJSON(w, http.StatusOK, s.Rules())
		case http.MethodPost:
			var rule Rule
			if err := decodeStrict(r.Body, &rule); err != nil {
				controlError(w, http.StatusBadRequest, err)
				return
			}
			s.AddRule(rule)
			controlJSON(w, http.StatusOK, s.Rules())
		case http.MethodDelete:
			s.ClearRules()
			w.WriteHeader(http.StatusNoContent)
		default:
			methodNotAllowed(w, "GET, PUT, POST, DELETE")
		}
	case "/_fake/stats":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, "GET")
			return
		}
		controlJSON(w, http.StatusOK, s.Stats())
	case "/_fake/reset":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	case "/_fake/last":
		req, ok := s.LastRequest(r.URL.Query().Get("model"))
		if !ok {
			controlError(w, http.StatusNotFound, errString("no request recorded for that model"))
			return
		}
		controlJSON(w, http.StatusOK, req)
	default:
		controlError(w, http.StatusNotFound, errString("unknown control endpoint "+r.URL.Path))
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func decodeStrict(body io.Reader, v any) error {
	b, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func controlJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		controlError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, status, append(b, '\n'))
}

func controlError(w http.ResponseWriter, status int, err error) {
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	writeJSON(w, status, b)
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	controlError(w, http.StatusMethodNotAllowed, errString("method not allowed"))
}
