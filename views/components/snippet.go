package components

// Snippet is one copy-paste example of calling the gateway.
type Snippet struct {
	ID, Title, Text string
}

// CallSnippets are the examples shown with a new caller key, in display
// order: curl and the OpenAI SDKs for Python, Node and Go, each asking
// base for the standard tier with key.
func CallSnippets(base, key string) []Snippet {
	return []Snippet{
		{ID: "curl", Title: "curl", Text: "curl " + base + "/chat/completions \\\n" +
			"  -H \"Authorization: Bearer " + key + "\" \\\n" +
			"  -H \"Content-Type: application/json\" \\\n" +
			"  -d '{\"model\": \"standard\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello!\"}]}'"},
		{ID: "python", Title: "Python (openai)", Text: "from openai import OpenAI\n\n" +
			"client = OpenAI(base_url=\"" + base + "\", api_key=\"" + key + "\")\n" +
			"resp = client.chat.completions.create(\n" +
			"    model=\"standard\",  # or \"fast\" / \"deep\"\n" +
			"    messages=[{\"role\": \"user\", \"content\": \"Hello!\"}],\n" +
			")\n" +
			"print(resp.choices[0].message.content)"},
		{ID: "node", Title: "Node (openai)", Text: "import OpenAI from \"openai\";\n\n" +
			"const client = new OpenAI({ baseURL: \"" + base + "\", apiKey: \"" + key + "\" });\n" +
			"const resp = await client.chat.completions.create({\n" +
			"  model: \"standard\", // or \"fast\" / \"deep\"\n" +
			"  messages: [{ role: \"user\", content: \"Hello!\" }],\n" +
			"});\n" +
			"console.log(resp.choices[0].message.content);"},
		{ID: "go", Title: "Go (openai-go)", Text: "package main\n\n" +
			"import (\n\t\"context\"\n\t\"fmt\"\n\n\t\"github.com/openai/openai-go/v3\"\n\t\"github.com/openai/openai-go/v3/option\"\n)\n\n" +
			"func main() {\n" +
			"\tclient := openai.NewClient(\n" +
			"\t\toption.WithBaseURL(\"" + base + "\"),\n" +
			"\t\toption.WithAPIKey(\"" + key + "\"),\n" +
			"\t)\n" +
			"\tresp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{\n" +
			"\t\tModel:    \"standard\", // or \"fast\" / \"deep\"\n" +
			"\t\tMessages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(\"Hello!\")},\n" +
			"\t})\n" +
			"\tif err != nil {\n\t\tpanic(err)\n\t}\n" +
			"\tfmt.Println(resp.Choices[0].Message.Content)\n" +
			"}"},
	}
}
