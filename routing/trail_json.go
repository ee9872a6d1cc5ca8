package routing

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// trailJSON is the attempt trail as the call log stores it: exactly what
// json.Marshal writes, appended by hand for the trails nearly every request
// has (attempts only, with names and codes json.Marshal does not escape), since
// reflection made encoding it 3 % of the gateway's CPU. Any other trail
// goes to json.Marshal.
func trailJSON(t *Trail) []byte {
	if b, ok := appendTrail(make([]byte, 0, 192*len(t.Attempts)), t); ok {
		return b
	}
	b, _ := json.Marshal(t)
	return b
}

// appendTrail appends t as json.Marshal would, or reports false when t
// has more than attempts, or a string that would need escaping.
func appendTrail(b []byte, t *Trail) ([]byte, bool) {
	if len(t.Skips) > 0 || len(t.Degraded) > 0 || t.Fallback != "" || t.QueuedMS != 0 || t.QueuedBehind != 0 || t.Attempts == nil {
		return b, false
	}
	b = append(b, `{"attempts":[`...)
	for i := range t.Attempts {
		a := &t.Attempts[i]
		if a.Skip != nil || !plainJSON(a.Model) || !plainJSON(a.Deployment) || !plainJSON(a.Provider) || !plainJSON(a.Key) ||
			!plainJSON(string(a.Outcome)) || !plainJSON(string(a.Class)) || !plainJSON(a.Reason) {
			return b, false
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"model":"`...)
		b = append(b, a.Model...)
		b = append(b, '"')
		if a.DeploymentID != 0 {
			b = append(b, `,"deployment_id":`...)
			b = strconv.AppendInt(b, a.DeploymentID, 10)
		}
		b = appendOptString(b, `,"deployment":"`, a.Deployment)
		b = appendOptString(b, `,"provider":"`, a.Provider)
		b = appendOptString(b, `,"key":"`, a.Key)
		b = append(b, `,"outcome":"`...)
		b = append(b, a.Outcome...)
		b = append(b, '"')
		b = appendOptString(b, `,"class":"`, string(a.Class))
		if a.Status != 0 {
			b = append(b, `,"status":`...)
			b = strconv.AppendInt(b, int64(a.Status), 10)
		}
		b = appendOptString(b, `,"reason":"`, a.Reason)
		b = append(b, `,"latency_ms":`...)
		b = strconv.AppendInt(b, a.LatencyMS, 10)
		if a.Fallback {
			b = append(b, `,"fallback":true`...)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...), true
}

// appendOptString appends key and s and a closing quote, unless s is empty
// (omitempty).
func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, key...)
	b = append(b, s...)
	return append(b, '"')
}

// plainJSON reports whether json.Marshal writes s as it is: printable
// ASCII without quotes, backslashes or the HTML characters it escapes, and
// valid UTF-8 other than the two line separators it escapes (key
// fingerprints carry an ellipsis).
func plainJSON(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
				return false
			}
			i += n
			continue
		}
		if c < 0x20 || c == 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
		i++
	}
	return true
}
