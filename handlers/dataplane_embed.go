package handlers

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"switchyard/routing"
	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/store/calllog"
)

// Embeddings serves POST /v1/embeddings. The logic model's query or document
// prefix is applied when the request says which the inputs are: the body
// field "input_type" ("query" | "document") or the X-Input-Type header.
func (d *DataPlane) Embeddings(c echo.Context) error {
	x := d.begin(c)
	defer x.finish()
	if err := x.authenticate(); err != nil || x.caller == nil || !x.caller.Enabled {
		return err
	}
	body, err := x.readBody()
	if body == nil {
		return err
	}
	req, err := adapter.ParseEmbeddingRequest(body)
	if err != nil {
		return x.invalid(err)
	}
	inputType := req.InputType
	if h := strings.TrimSpace(c.Request().Header.Get("X-Input-Type")); inputType == "" && h != "" {
		if h != "query" && h != "document" {
			return x.invalid(&adapter.RequestError{Param: "X-Input-Type", Message: "X-Input-Type must be query or document"})
		}
		inputType = h
	}
	x.rec.RequestedModel = req.Model
	deadline, err := x.deadline()
	if err != nil {
		return x.invalid(&adapter.RequestError{Param: "X-Request-Timeout", Message: err.Error()})
	}
	if done, err := x.idempotent(c.Request().URL.Path, body); done {
		return err
	}
	p, done, err := x.route(req.Model, false, routing.Needs{Kind: config.KindEmbedding})
	if done {
		return err
	}
	defer p.Release()
	var estimate int64
	for _, in := range req.Inputs {
		estimate += int64(len(in)/4 + 1)
	}
	release, dec, done, err := x.gate(estimate)
	if done {
		return err
	}
	defer release()
	out, fail := d.Exec.Embed(c.Request().Context(), p, routing.Call{Batch: x.caller.PriorityClass == config.ClassBatch, Deadline: deadline},
		routing.EmbedRequest{Inputs: req.Inputs, Dimensions: req.Dimensions, InputType: inputType}, &x.trail)
	if fail != nil {
		x.settle(dec, 0, 0)
		return x.failed(fail)
	}
	x.rec.Status = calllog.StatusOK
	u := out.Usage
	if !u.Known {
		u = adapter.Usage{} // unknown stays unknown
	}
	x.account(dec, out.Served, u, estimate)
	x.routeHeaders(out.Served)
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	data := make([]item, len(out.Vectors))
	for i, v := range out.Vectors {
		data[i] = item{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			data[i].Embedding = floatsBase64(v)
		}
	}
	resp := map[string]any{"object": "list", "data": data, "model": out.Served.Deployment.Model.Code}
	if out.Usage.Known {
		resp["usage"] = map[string]int64{"prompt_tokens": out.Usage.Prompt, "total_tokens": out.Usage.Prompt}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	return x.writeBody(http.StatusOK, echo.MIMEApplicationJSON, b)
}

// floatsBase64 encodes float32s little-endian, as OpenAI's base64 format does.
func floatsBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}
