package adapter

// Internal test helpers the external tests (package adapter_test, which may
// import the front doors' parsers) use.
var (
	OpenAISSE        = openaiSSE
	AsError          = openaiAsError
	ClassifyFixture  = classifyFixture
	VendorUpdate     = vendorUpdate
	OpenAIChatResult = openaiChatResult
	OpenAIChatBody   = openaiChatBody
)

// WholeChatBody is r with its chat body written whole (ChatBody), as an
// adapter that copies the body read it before copies wrote a door's
// translation straight.
func WholeChatBody(r *ChatRequest) *ChatRequest {
	c := *r
	c.Body, c.body = r.ChatBody(), nil
	return &c
}
