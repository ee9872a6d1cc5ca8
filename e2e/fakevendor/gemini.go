package fakevendor

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

type geminiPart struct {
	Text             string `json:"text"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
		// Search grounding, in the REST API's camelCase or the snake_case
		// it also accepts.
		GoogleSearch               json.RawMessage `json:"googleSearch"`
		GoogleSearchSnake          json.RawMessage `json:"google_search"`
		GoogleSearchRetrieval      json.RawMessage `json:"googleSearchRetrieval"`
		GoogleSearchRetrievalSnake json.RawMessage `json:"google_search_retrieval"`
	} `json:"tools"`
	GenerationConfig *struct {
		MaxOutputTokens    int             `json:"maxOutputTokens"`
		CandidateCount     int             `json:"candidateCount"`
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
	} `json:"generationConfig"`
}

// intent reads the conversation (model contents are the model's turns;
// functionResponse parts are results, their response as JSON text) and the
// declared functions of every tools entry. It also reports the prompt size
// and whether search grounding was asked for.
func (req *geminiRequest) intent() (in intent, promptBytes int, webSearch bool) {
	if req.SystemInstruction != nil {
		for _, p := range req.SystemInstruction.Parts {
			promptBytes += len(p.Text)
		}
	}
	turns := make([]turn, 0, len(req.Contents))
	for _, ct := range req.Contents {
		var t turn
		var texts []string
		for _, p := range ct.Parts {
			promptBytes += len(p.Text)
			texts = append(texts, p.Text)
			if fr := p.FunctionResponse; fr != nil {
				var b bytes.Buffer
				if json.Compact(&b, fr.Response) != nil {
					b.Write(fr.Response)
				}
				t.results = append(t.results, b.String())
			}
		}
		t.model, t.text = ct.Role == "model", userWords(texts)
		turns = append(turns, t)
	}
	var tools []offered
	for _, tl := range req.Tools {
		for _, fd := range tl.FunctionDeclarations {
			tools = append(tools, offered{name: fd.Name})
		}
		webSearch = webSearch || tl.GoogleSearch != nil || tl.GoogleSearchSnake != nil || tl.GoogleSearchRetrieval != nil || tl.GoogleSearchRetrievalSnake != nil
	}
	return decide(turns, tools), promptBytes, webSearch
}

var geminiFinish = [...]string{finishStop: "STOP", finishLength: "MAX_TOKENS", finishTool: "STOP", finishFilter: "SAFETY"}

// geminiSafetyRatings is a blocked rating set, as on a SAFETY finish.
const geminiSafetyRatings = `[{"category":"HARM_CATEGORY_HATE_SPEECH","probability":"NEGLIGIBLE"},{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"NEGLIGIBLE"},{"category":"HARM_CATEGORY_HARASSMENT","probability":"HIGH","blocked":true},{"category":"HARM_CATEGORY_SEXUALLY_EXPLICIT","probability":"NEGLIGIBLE"}]`

// geminiPlan parses a generateContent request; ok is false when the call
// was answered already.
func (s *Server) geminiPlan(c *call) (rp reply, ok bool) {
	var req geminiRequest
	perr := json.Unmarshal(c.body, &req)
	in, promptBytes, webSearch := req.intent()
	c.webSearch = webSearch
	if !c.begin() {
		return rp, false
	}
	switch {
	case perr != nil:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "Invalid JSON payload received. " + perr.Error()})
		return rp, false
	case len(req.Contents) == 0:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "* GenerateContentRequest.contents: contents is not specified\n"})
		return rp, false
	}
	maxTokens := 0
	if req.GenerationConfig != nil {
		maxTokens = req.GenerationConfig.MaxOutputTokens
	}
	rp = c.plan(c.model, promptBytes, maxTokens, in)
	if gc := req.GenerationConfig; gc != nil {
		if gc.ResponseMimeType == "application/json" {
			schema := gc.ResponseJSONSchema
			if schema == nil {
				schema = gc.ResponseSchema
			}
			rp.structured(schema)
		}
		rp.n = min(max(gc.CandidateCount, 1), 8)
	}
	return rp, true
}

func (s *Server) geminiGenerate(c *call) {
	rp, ok := s.geminiPlan(c)
	if !ok {
		return
	}
	g := geminiStream{model: c.model, responseID: c.requestID(), rp: rp, noUsage: c.fault.NoUsage}
	b := make([]byte, 0, 512)
	switch {
	case rp.finish == finishFilter:
		b = g.filtered(b)
	case rp.tool != "":
		b = g.object(b, g.part(nil, 0, ""), "STOP", rp.completion())
	default:
		b = g.object(b, g.part(nil, 0, rp.fullText()), geminiFinish[rp.finish], rp.completion())
	}
	c.writeJSON(http.StatusOK, b)
}

// geminiStreamGenerate answers streamGenerateContent: SSE with alt=sse,
// otherwise (as the real API does) one JSON array of the same chunks.
func (s *Server) geminiStreamGenerate(c *call) {
	rp, ok := s.geminiPlan(c)
	if !ok {
		return
	}
	g := &geminiStream{model: c.model, responseID: c.requestID(), rp: rp, noUsage: c.fault.NoUsage, finishEvery: c.fault.FinishEveryChunk}
	if c.r.URL.Query().Get("alt") == "sse" {
		c.stream(g, rp)
		return
	}
	b := append(make([]byte, 0, 512*(rp.chunks+1)), '[')
	for i := range rp.chunks {
		b = g.object(b, g.part(nil, i, rp.text(i)), "", i+1)
		b = append(b, ",\r\n"...)
	}
	b = g.last(b)
	b = append(b, ']')
	c.writeJSON(http.StatusOK, b)
}

// geminiStream renders GenerateContentResponse objects; as a streamer it
// frames them as data-only SSE (no [DONE]).
type geminiStream struct {
	model, responseID string
	rp                reply
	noUsage           bool
	finishEvery       bool // finishReason on every content event, as Gemini does
}

func (g *geminiStream) part(b []byte, _ int, text string) []byte {
	if g.rp.tool != "" {
		b = append(b, `{"functionCall":{"name":`...)
		b = appendString(b, g.rp.tool)
		b = append(b, `,"args":`...)
		b = append(b, g.rp.toolArgs()...)
		return append(b, "}}"...)
	}
	b = append(b, `{"text":`...)
	b = appendString(b, text)
	return append(b, '}')
}

// object is one response with a single candidate holding part; finish may
// be empty; usage is cumulative with completion tokens so far.
func (g *geminiStream) object(b, part []byte, finish string, completion int) []byte {
	b = append(b, `{"candidates":[`...)
	for i := range g.rp.choices() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"content":{"parts":[`...)
		b = append(b, part...)
		b = append(b, `],"role":"model"}`...)
		if finish != "" {
			b = append(b, `,"finishReason":"`...)
			b = append(b, finish...)
			b = append(b, '"')
		}
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '}')
	}
	b = append(b, ']')
	b = g.usage(b, completion)
	return g.trailer(b)
}

func (g *geminiStream) usage(b []byte, completion int) []byte {
	if g.noUsage {
		return b
	}
	b = append(b, `,"usageMetadata":{"promptTokenCount":`...)
	b = strconv.AppendInt(b, int64(g.rp.prompt), 10)
	if completion > 0 {
		b = append(b, `,"candidatesTokenCount":`...)
		b = strconv.AppendInt(b, int64(completion), 10)
	}
	b = append(b, `,"totalTokenCount":`...)
	b = strconv.AppendInt(b, int64(g.rp.prompt+completion), 10)
	if g.rp.cached > 0 {
		b = append(b, `,"cachedContentTokenCount":`...)
		b = strconv.AppendInt(b, int64(g.rp.cached), 10)
	}
	b = append(b, `,"promptTokensDetails":[{"modality":"TEXT","tokenCount":`...)
	b = strconv.AppendInt(b, int64(g.rp.prompt), 10)
	return append(b, "}]}"...)
}

func (g *geminiStream) trailer(b []byte) []byte {
	b = append(b, `,"modelVersion":`...)
	b = appendString(b, g.model)
	b = append(b, `,"responseId":`...)
	b = appendString(b, g.responseID)
	return append(b, '}')
}

// filtered is the SAFETY outcome: a candidate without content.
func (g *geminiStream) filtered(b []byte) []byte {
	b = append(b, `{"candidates":[{"finishReason":"SAFETY","index":0,"safetyRatings":`...)
	b = append(b, geminiSafetyRatings...)
	b = append(b, "}]"...)
	b = g.usage(b, 0)
	return g.trailer(b)
}

// last is the final chunk of a stream: its finish reason and full usage.
func (g *geminiStream) last(b []byte) []byte {
	if g.rp.finish == finishFilter {
		return g.filtered(b)
	}
	return g.object(b, []byte(`{"text":""}`), geminiFinish[g.rp.finish], g.rp.completion())
}

func (g *geminiStream) preamble(b []byte) []byte { return b }

func (g *geminiStream) content(b []byte, i int, text string) []byte {
	b = append(b, "data: "...)
	finish := ""
	if g.finishEvery {
		finish = geminiFinish[g.rp.finish]
	}
	b = g.object(b, g.part(nil, i, text), finish, (i+1)*g.rp.choices())
	return append(b, "\n\n"...)
}

func (g *geminiStream) finish(b []byte) []byte {
	b = append(b, "data: "...)
	b = g.last(b)
	return append(b, "\n\n"...)
}

// errorEvent is what Vertex does mid-stream: a raw, pretty-printed JSON
// error object with no "data:" prefix.
func (g *geminiStream) errorEvent(b []byte, status int) []byte {
	if status == 0 {
		status = http.StatusServiceUnavailable
	}
	msg := ""
	if status == 499 {
		msg = "The operation was cancelled."
	}
	b = append(b, geminiErrorBody(status, msg, "  ")...)
	return append(b, "\n\n"...)
}

type geminiEmbedRequest struct {
	Model                string        `json:"model"`
	Content              geminiContent `json:"content"`
	OutputDimensionality int           `json:"outputDimensionality"`
}

func (r geminiEmbedRequest) text() string {
	var s string
	for _, p := range r.Content.Parts {
		s += p.Text
	}
	return s
}

func (s *Server) geminiEmbed(c *call) {
	var req geminiEmbedRequest
	perr := json.Unmarshal(c.body, &req)
	if !c.begin() {
		return
	}
	text := req.text()
	if perr != nil || text == "" {
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "* EmbedContentRequest.content: contents is not specified\n"})
		return
	}
	vec := make([]float32, c.dimension(req.OutputDimensionality))
	fillVector(vec, text)
	b := append(make([]byte, 0, len(vec)*11+64), `{"embedding":{"values":`...)
	b = appendFloatArray(b, vec)
	b = append(b, "}}"...)
	c.writeJSON(http.StatusOK, b)
}

func (s *Server) geminiBatchEmbed(c *call) {
	var req struct {
		Requests []geminiEmbedRequest `json:"requests"`
	}
	perr := json.Unmarshal(c.body, &req)
	if !c.begin() {
		return
	}
	if perr != nil || len(req.Requests) == 0 {
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "* BatchEmbedContentsRequest.requests: at least one request is required\n"})
		return
	}
	b := append(make([]byte, 0, 1024), `{"embeddings":[`...)
	for i, r := range req.Requests {
		text := r.text()
		if text == "" {
			c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "* BatchEmbedContentsRequest.requests[" + strconv.Itoa(i) + "].content: contents is not specified\n"})
			return
		}
		if i > 0 {
			b = append(b, ',')
		}
		vec := make([]float32, c.dimension(r.OutputDimensionality))
		fillVector(vec, text)
		b = append(b, `{"values":`...)
		b = appendFloatArray(b, vec)
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	c.writeJSON(http.StatusOK, b)
}

var geminiDefaultModels = []string{"gemini-2.5-flash", "gemini-embedding-001"}

func (s *Server) geminiModels(c *call) {
	if !c.begin() {
		return
	}
	models := s.opts.Models
	if len(models) == 0 {
		models = geminiDefaultModels
	}
	type model struct {
		Name                       string   `json:"name"`
		Version                    string   `json:"version"`
		DisplayName                string   `json:"displayName"`
		InputTokenLimit            int      `json:"inputTokenLimit"`
		OutputTokenLimit           int      `json:"outputTokenLimit"`
		SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
	}
	var out struct {
		Models []model `json:"models"`
	}
	for _, m := range models {
		methods := []string{"generateContent", "countTokens"}
		if strings.Contains(m, "embed") {
			methods = []string{"embedContent", "batchEmbedContents"}
		}
		out.Models = append(out.Models, model{Name: "models/" + m, Version: "001", DisplayName: m, InputTokenLimit: 1048576, OutputTokenLimit: 65536, SupportedGenerationMethods: methods})
	}
	b, _ := json.Marshal(out)
	c.writeJSON(http.StatusOK, b)
}
