package frontdoor

import (
	"bytes"
	"switchyard/routing/adapter"
	"switchyard/routing/wire"

	"github.com/tidwall/gjson"
)

// AppendAnswerModel appends to dst the JSON object obj (a chat.completion or
// a chat.completion.chunk) with its top-level "model" member set to model,
// every other byte unchanged; a member that is missing is added first. This
// is how the gateway's one rule for the answer's model field (the logic
// model that served) is applied to what a vendor sent.
func AppendAnswerModel(dst, obj []byte, model string) []byte {
	v := gjson.GetBytes(obj, "model")
	if v.Exists() && v.Index > 0 && v.Index+len(v.Raw) <= len(obj) {
		return appendModelAt(dst, obj, v.Index, len(v.Raw), model)
	}
	i := bytes.IndexByte(obj, '{')
	if i < 0 {
		return append(dst, obj...) // not an object: nothing to set
	}
	dst = append(dst, obj[:i+1]...)
	dst = append(dst, `"model":`...)
	dst = wire.AppendString(dst, model)
	rest := obj[i+1:]
	if t := bytes.TrimLeft(rest, " \t\r\n"); len(t) > 0 && t[0] != '}' {
		dst = append(dst, ',')
	}
	return append(dst, rest...)
}

// AppendAnswerModelAt is AppendAnswerModel for a complete answer whose
// "model" value the adapter already located (ChatResult.ModelAt), so the
// answer is not searched again.
func AppendAnswerModelAt(dst []byte, res *adapter.ChatResult, model string) []byte {
	if res.ModelAt > 0 && res.ModelAt+res.ModelLen <= len(res.Body) {
		if dst == nil {
			dst = make([]byte, 0, len(res.Body)+len(model)+8)
		}
		return appendModelAt(dst, res.Body, res.ModelAt, res.ModelLen, model)
	}
	return AppendAnswerModel(dst, res.Body, model)
}

func appendModelAt(dst, obj []byte, at, n int, model string) []byte {
	dst = append(dst, obj[:at]...)
	dst = wire.AppendString(dst, model)
	return append(dst, obj[at+n:]...)
}
