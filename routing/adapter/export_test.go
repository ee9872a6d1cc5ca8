package adapter

// Internal test helpers the external tests (package adapter_test, which may
// import the front doors' parsers) use.
var (
	OpenAISSE        = openaiSSE
	AsError          = openaiAsError
	ClassifyFixture  = classifyFixture
	VendorUpdate     = vendorUpdate
	OpenAIChatResult = openaiChatResult
)
